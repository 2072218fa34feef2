// Issue 15 end to end (FO-1..FO-4): failover as the upstream router sees it. One rig (control
// plane, two controllers, three node namespaces with agents running the install's identities, a
// router with default Linux neighbour timers that is never flushed unless a probe says so).
// Agents run with their defaults (--answer-expiry 10s, --lease-duration 10s, renewal every 2s)
// except where a test says otherwise: the node crash is also measured with FAST_FAILOVER_FLAGS.
import { describeAsRoot } from '../netns/rig';
import { elapsedSince, figure } from '../shared/figures';
import { sleep } from '../sleep';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../api';
import { DEFAULT_AGENT_FLAGS, FAST_FAILOVER_FLAGS } from '../../runtime/agent/flags';
import { agentLeaseName } from '../../runtime/agent/lease';
import { APP_NAMESPACE, CONTROLLER_NAMESPACE, E2ERig, serviceLoadBalancerRef } from './rig';
import { after, firstLogLine, firstWatchEvent, handoverFrames, neighbourChange } from '../shared/timeline';
import * as fs from 'node:fs';
import * as path from 'node:path';

const log = (line: string) => process.stdout.write(`${line}\n`);
const slb = serviceLoadBalancerRef;
jest.setTimeout(600_000);

describeAsRoot('e2e failover (FO-1..FO-4)', () => {
  let rig: E2ERig;
  const mac = (i: number) => rig.net.macs[i];
  /** Agent i's log (the rig's logs directory; restarts append). */
  const agentLog = (i: number) => path.join(rig.net.tmp, 'logs', `agent-${i}.log`);

  beforeAll(async () => {
    rig = new E2ERig({ log });
    await rig.start();
  });
  afterAll(async () => {
    await rig?.stop();
  });

  /**
   * The first moment the router's own path reaches `node`: an attempt (1 s timeout) starts every
   * 100 ms without waiting for the one before, so a SYN sent to a dead MAC just before the
   * announcement does not hide the success right after it (a sequential poll would add up to 1 s).
   */
  const firstRouterReach = (vip: string, node: number, timeoutMs: number) =>
    new Promise<number>((resolve, reject) => {
      const started = Date.now();
      let inFlight = 0;
      const timer = setInterval(() => {
        if (Date.now() - started > timeoutMs) {
          clearInterval(timer);
          void rig.net
            .routerNeighbour(vip)
            .then(
              (n) =>
                reject(
                  new Error(
                    `the router did not reach node-${node} for ${vip} within ${timeoutMs} ms; its neighbour entry: ${JSON.stringify(n)}; node MACs ${rig.net.macs.join(' ')}`,
                  ),
                ),
              reject,
            );
        } else if (inFlight < 12) {
          inFlight++;
          rig.net.routerReaches(vip).then(
            (n) => {
              inFlight--;
              if (n !== node) return;
              clearInterval(timer);
              resolve(Date.now());
            },
            (err) => {
              clearInterval(timer);
              reject(err);
            },
          );
        }
      }, 100);
    });

  /** The node's agent Lease renewTime (ms since the epoch; the agent's clock is this host's). */
  const leaseRenewTime = async (i: number) => {
    const lease = await rig.kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: CONTROLLER_NAMESPACE, name: agentLeaseName(rig.nodeName(i)) });
    return new Date(lease.spec!.renewTime!).getTime();
  };

  /** Restarts every agent with `flags` (SIGTERM: answering goes on) and waits for their Leases to carry the new duration. */
  const restartAgents = async (flags: string[]) => {
    const seconds = Number(
      /--lease-duration=(\d+)s/.exec(flags.join(' '))?.[1] ?? DEFAULT_AGENT_FLAGS.leaseDurationMs / 1000,
    );
    for (let i = 0; i < rig.net.nodeCount; i++) {
      await rig.killAgent(i, 'SIGTERM');
      rig.startAgent(i, flags);
    }
    const coordination = rig.kc.makeApiClient(CoordinationV1Api);
    for (let i = 0; i < rig.net.nodeCount; i++) {
      await rig.waitFor(
        `node-${i}'s Lease with ${seconds} s`,
        async () =>
          (
            await coordination.readNamespacedLease({
              namespace: CONTROLLER_NAMESPACE,
              name: agentLeaseName(rig.nodeName(i)),
            })
          ).spec?.leaseDurationSeconds === seconds,
        30_000,
        250,
      );
    }
  };

  test('FO-1: backend unready with announceOnMove on — the router (default neighbour timers, no flush) reaches the new node after the announcement', async () => {
    await rig.setAnnounceOnMove(true);
    const vip = '10.225.32.210';
    const from = await rig.serviceWithBackends('fo1', vip, [0, 1], 'router');
    const to = from === 0 ? 1 : 0;
    expect((await rig.net.routerNeighbour(vip))?.mac).toBe(mac(from));
    // Each step of the handover as the API server delivered it (watches opened before the change).
    const slice = firstWatchEvent(rig.kc, `/apis/discovery.k8s.io/v1/namespaces/${APP_NAMESPACE}/endpointslices`, (s) =>
      (s.endpoints ?? []).some((e: any) => e.targetRef?.name === `fo1-${from}` && e.conditions?.ready === false),
    );
    const moved = firstWatchEvent(
      rig.kc,
      `/apis/${GROUP}/${VERSION}/arpadvertisements`,
      (a) => a.spec?.address === vip && a.spec?.nodeName === rig.nodeName(to),
    );
    const neighbour = neighbourChange(rig.net.router, 'br0', vip, mac(to));
    await Promise.all([slice.ready, moved.ready, neighbour.ready]);
    let unready = 0;
    let reached = 0;
    const frames = await rig.net.capture(rig.net.router, 'br0', async () => {
      unready = Date.now();
      await rig.setPodReady(`fo1-${from}`, false);
      rig.net.stopServingOnNode(from);
      reached = await firstRouterReach(vip, to, 60_000);
      await sleep(2_500); // the second announcement, 2 s after the first
    });
    const [sliceAt, movedAt, neighbourAt] = await Promise.all([slice.at, moved.at, neighbour.at]).finally(() =>
      [slice, moved, neighbour].forEach((w) => w.stop()),
    );
    const wire = handoverFrames(frames, vip, mac(to));
    // The agents' own log lines (this host's clock, ms): when each wrote the move into its map.
    const mapWrite = (i: number, field: 'added' | 'removed') =>
      firstLogLine(fs.readFileSync(agentLog(i), 'utf8'), unready, (l) => l.msg === 'maps reconciled' && l[field]?.includes(vip));
    const gainedAt = mapWrite(to, 'added');
    const removedAt = mapWrite(from, 'removed');
    figure(
      'FO-1 announce on: backend unready -> router reaches the new node (default neighbour timers)',
      `${((reached - unready) / 1000).toFixed(2)} s`,
    );
    figure(
      'FO-1 announce on: backend unready -> router neighbour entry names the new node',
      `${((neighbourAt - unready) / 1000).toFixed(3)} s`,
    );
    const links: Array<[string, number | undefined, number | undefined]> = [
      ['pod unready -> EndpointSlice not ready (kube-controller-manager)', unready, sliceAt],
      [
        'EndpointSlice -> ARPAdvertisement moved (juneau-controller: informer, queue, reconcile, write)',
        sliceAt,
        movedAt,
      ],
      ['ARPAdvertisement moved -> new node map written (agent watch, pass)', movedAt, gainedAt],
      ['new node map written -> first probe on the wire (announcer start, socket)', gainedAt, wire.probes[0]],
      [
        `first probe -> first announcement (${wire.probes.filter((t) => t <= wire.announcements[0]).length} probe(s) until nobody else answers)`,
        wire.probes[0],
        wire.announcements[0],
      ],
      ['first announcement -> router neighbour entry names the new node', wire.announcements[0], neighbourAt],
      ['router neighbour entry -> a connection served by the new node (attempts every 100 ms)', neighbourAt, reached],
    ];
    for (const [name, t0, t] of links) figure(`FO-1 breakdown: ${name}`, t0 === undefined ? 'not seen' : after(t0, t));
    figure(
      'FO-1 breakdown: ARPAdvertisement moved -> old node map removed (its agent watch, pass)',
      after(movedAt, removedAt),
    );
    figure(
      'FO-1 breakdown (ms): kcm / controller / agent watch+pass / probe sent / probe window / router entry / connection',
      links.map(([, t0, t]) => (t0 === undefined || t === undefined ? '?' : String(Math.round(t - t0)))).join(' / '),
    );
    const announcements = frames.filter((f) => f.arp?.op === 1 && f.arp.sip === vip && f.arp.tip === vip);
    expect(announcements.map((f) => f.arp!.sha)).toEqual([mac(to), mac(to)]);
    expect((await rig.net.routerNeighbour(vip))?.mac).toBe(mac(to));
  });

  test('FO-2: agent gone longer than --answer-expiry: that node answers 0 of 20 probes while its ARPAdvertisement still names it', async () => {
    const vip = '10.225.32.211';
    const node = await rig.serviceWithBackends('fo2', vip, [2], 'router');
    expect(node).toBe(2);
    // A short expiry and a long Lease for this agent, so the probes (an unanswered one waits 1 s)
    // end before the controller withdraws the address (FO-3): the silence below is FO-2's alone.
    await rig.killAgent(2, 'SIGTERM');
    rig.startAgent(2, ['--answer-expiry=4s', '--lease-duration=90s']);
    await rig.waitFor(
      'node-2 answering again',
      async () => (await rig.net.freshResolve(vip)).join() === mac(2),
      30_000,
      250,
    );
    await sleep(3_000); // a heartbeat or two under the new expiry
    const killed = Date.now();
    await rig.killAgent(2, 'SIGKILL');
    await sleep(4_500);
    const probes = await rig.net.probeFromFreshRouter(vip, 20, 150);
    const stillNamed = (await rig.advertisedNode(slb('fo2'))) === rig.nodeName(2);
    figure(
      'FO-2: agent gone longer than the expiry -> probes answered',
      `${probes.filter((p) => p.length > 0).length}/${probes.length} (probing ended ${elapsedSince(killed)} after the kill)`,
    );
    expect(stillNamed).toBe(true);
    expect(probes).toHaveLength(20);
    expect(probes.filter((p) => p.length > 0)).toEqual([]);
    rig.startAgent(2);
    await rig.waitFor(
      'node-2 answering after its agent is back',
      async () => (await rig.net.freshResolve(vip)).join() === mac(2),
      60_000,
      500,
    );
  });

  // The default Lease (10 s, renewed every 2 s: 0.5 writes a second per node) and the documented
  // fast profile (FAST_FAILOVER_FLAGS: 2 s, every 0.5 s: 2 writes a second per node).
  const crashes = [
    { announce: true, fast: true, vip: '10.225.32.215', name: 'fo3fast' },
    { announce: true, fast: false, vip: '10.225.32.212', name: 'fo3on' },
    { announce: false, fast: false, vip: '10.225.32.213', name: 'fo3off' },
  ];
  for (const { announce, fast, vip, name } of crashes) {
    const profile = `announce ${announce ? 'on' : 'off'}, ${fast ? `agents ${FAST_FAILOVER_FLAGS.join(' ')}` : 'default Lease'}`;
    test(`FO-3: node crash (agent SIGKILLed, link cut), ${profile}: time until the router reaches a surviving node`, async () => {
      await rig.setAnnounceOnMove(announce);
      if (fast) await restartAgents([...FAST_FAILOVER_FLAGS]);
      const from = await rig.serviceWithBackends(name, vip, [0, 1], 'router');
      const to = from === 0 ? 1 : 0;
      const moved = firstWatchEvent(
        rig.kc,
        `/apis/${GROUP}/${VERSION}/arpadvertisements`,
        (a) => a.spec?.address === vip && a.spec?.nodeName === rig.nodeName(to),
      );
      await moved.ready;
      let crashed = 0;
      let reached = 0;
      let lastRenewal = 0;
      const frames = await rig.net.capture(rig.net.router, 'br0', async () => {
        crashed = Date.now();
        await rig.killAgent(from, 'SIGKILL');
        await rig.net.in(rig.net.node(from), 'ip', 'link', 'set', 'eth0', 'down');
        lastRenewal = await leaseRenewTime(from);
        reached = await firstRouterReach(vip, to, 120_000);
      });
      const movedAt = await moved.at.finally(() => moved.stop());
      const wire = handoverFrames(frames, vip, mac(to));
      const leaseSeconds = fast ? 2 : DEFAULT_AGENT_FLAGS.leaseDurationMs / 1000;
      figure(`FO-3 node crash, ${profile}: crash -> ARPAdvertisement moved (Lease expiry)`, after(crashed, movedAt));
      figure(`FO-3 node crash, ${profile}: crash -> router reaches a surviving node`, after(crashed, reached));
      figure(
        `FO-3 breakdown, ${profile}: last Lease renewal -> crash (where in the renewal cycle it died)`,
        after(lastRenewal, crashed),
      );
      figure(
        `FO-3 breakdown, ${profile}: last Lease renewal -> ARPAdvertisement moved (Lease ${leaseSeconds} s + controller)`,
        after(lastRenewal, movedAt),
      );
      if (announce) {
        figure(
          `FO-3 breakdown, ${profile}: ARPAdvertisement moved -> first probe on the wire`,
          after(movedAt, wire.probes[0]),
        );
        figure(
          `FO-3 breakdown, ${profile}: first probe -> first announcement`,
          after(wire.probes[0], wire.announcements[0]),
        );
        figure(
          `FO-3 breakdown, ${profile}: first announcement -> router reaches the survivor`,
          after(wire.announcements[0], reached),
        );
        expect(wire.announcements.length).toBeGreaterThan(0);
      } else {
        expect(wire.announcements).toEqual([]); // ARP-8
      }
      await rig.net.in(rig.net.node(from), 'ip', 'link', 'set', 'eth0', 'up');
      rig.startAgent(from, fast ? [...FAST_FAILOVER_FLAGS] : []);
      await rig.waitFor(
        'the crashed node advertising again',
        async () => (await rig.serviceLoadBalancer(name))?.advertisingNodes?.includes(rig.nodeName(from)),
        60_000,
        500,
      );
      expect(await rig.advertisedNode(slb(name))).toBe(rig.nodeName(to)); // SLB-7: it stays
      if (fast) await restartAgents([]);
    });
  }

  test('FO-4: a node cut off from the API server (link up) while the controller moves its address: never two MACs for one address', async () => {
    await rig.setAnnounceOnMove(true);
    const vip = '10.225.32.214';
    const from = await rig.serviceWithBackends('fo4', vip, [0, 1], 'router');
    const to = from === 0 ? 1 : 0;
    let cut = 0;
    let moved = 0;
    let waitMove: Promise<unknown> = Promise.resolve();
    // Fresh-router probes every 250 ms across the expiry, the move and the new node's start. The
    // node is cut after the fourth probe, so the capture runs and the old node's answers are seen
    // before it (under load, starting the capture took longer than the expiry once).
    const probes = await rig.net.probeFromFreshRouter(vip, 124, 250, async (n) => {
      if (n !== 3) return;
      cut = Date.now();
      await rig.cutFromApiServer(from);
      waitMove = rig
        .waitFor(
          'the ARPAdvertisement to move',
          async () => (await rig.advertisedNode(slb('fo4'))) === rig.nodeName(to),
          120_000,
          200,
        )
        .then(() => (moved = Date.now()));
    });
    await waitMove;
    const twoMacs = probes.filter((p) => p.length > 1);
    const silent = probes.filter((p) => p.length === 0);
    figure('FO-4 partition: probes answered by two MACs', `${twoMacs.length}/${probes.length}`);
    figure(
      'FO-4 partition: probes unanswered (old node expired, new not yet answering)',
      `${silent.length}/${probes.length}`,
    );
    figure('FO-4 partition: cut -> ARPAdvertisement moved', `${((moved - cut) / 1000).toFixed(1)} s`);
    expect(twoMacs).toEqual([]);
    expect(new Set(probes.flat())).toEqual(new Set([mac(from), mac(to)]));
    await rig.reconnectToApiServer(from);
  });
});
