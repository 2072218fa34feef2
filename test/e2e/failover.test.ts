// Issue 15 end to end (FO-1..FO-4): failover as the upstream router sees it. One rig (control
// plane, two controllers, three node namespaces with agents running the install's identities, a
// router with default Linux neighbour timers that is never flushed unless a probe says so).
// Agents run with their defaults: --answer-expiry 10s, --lease-duration 15s, renewal every 2s.
import { describeAsRoot } from '../netns/rig';
import { elapsedSince, figure } from './figures';
import { sleep } from './network';
import { E2ERig, serviceLoadBalancerRef } from './rig';

const log = (line: string) => process.stdout.write(`${line}\n`);
const slb = serviceLoadBalancerRef;
jest.setTimeout(600_000);

describeAsRoot('e2e failover (FO-1..FO-4)', () => {
  let rig: E2ERig;
  const mac = (i: number) => rig.net.macs[i];

  beforeAll(async () => {
    rig = new E2ERig({ log });
    await rig.start();
  });
  afterAll(async () => {
    await rig?.stop();
  });

  /** Polls the router's own path (its cache never flushed) until it reaches `node`. */
  const routerReachesNode = (vip: string, node: number, timeoutMs = 180_000) =>
    rig.waitFor(`the router to reach node-${node}`, async () => (await rig.net.routerReaches(vip)) === node, timeoutMs, 100);

  test('FO-1: backend unready with announceOnMove on — the router (default neighbour timers, no flush) reaches the new node after the announcement', async () => {
    await rig.setAnnounceOnMove(true);
    const vip = '10.225.32.210';
    const from = await rig.serviceWithBackends('fo1', vip, [0, 1], 'router');
    const to = from === 0 ? 1 : 0;
    expect((await rig.net.routerNeighbour(vip))?.mac).toBe(mac(from));
    let unready = 0;
    let reached = 0;
    const frames = await rig.net.capture(rig.net.router, 'br0', async () => {
      unready = Date.now();
      await rig.setPodReady(`fo1-${from}`, false);
      rig.net.stopServingOnNode(from);
      await routerReachesNode(vip, to, 60_000);
      reached = Date.now();
      await sleep(2_500); // the second announcement, 2 s after the first
    });
    figure('FO-1 announce on: backend unready -> router reaches the new node (default neighbour timers)', `${((reached - unready) / 1000).toFixed(2)} s`);
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
    await rig.waitFor('node-2 answering again', async () => (await rig.net.freshResolve(vip)).join() === mac(2), 30_000, 250);
    await sleep(3_000); // a heartbeat or two under the new expiry
    const killed = Date.now();
    await rig.killAgent(2, 'SIGKILL');
    await sleep(4_500);
    const probes = await rig.net.probeFromFreshRouter(vip, 20, 150);
    const stillNamed = (await rig.advertisedNode(slb('fo2'))) === rig.nodeName(2);
    figure('FO-2: agent gone longer than the expiry -> probes answered', `${probes.filter((p) => p.length > 0).length}/${probes.length} (probing ended ${elapsedSince(killed)} after the kill)`);
    expect(stillNamed).toBe(true);
    expect(probes).toHaveLength(20);
    expect(probes.filter((p) => p.length > 0)).toEqual([]);
    rig.startAgent(2);
    await rig.waitFor('node-2 answering after its agent is back', async () => (await rig.net.freshResolve(vip)).join() === mac(2), 60_000, 500);
  });

  for (const announce of [true, false]) {
    test(`FO-3: node crash (agent SIGKILLed, link cut), announceOnMove ${announce ? 'on' : 'off'}: time until the router reaches a surviving node`, async () => {
      await rig.setAnnounceOnMove(announce);
      const vip = announce ? '10.225.32.212' : '10.225.32.213';
      const name = announce ? 'fo3on' : 'fo3off';
      const from = await rig.serviceWithBackends(name, vip, [0, 1], 'router');
      const to = from === 0 ? 1 : 0;
      const crashed = Date.now();
      await rig.killAgent(from, 'SIGKILL');
      await rig.net.in(rig.net.node(from), 'ip', 'link', 'set', 'eth0', 'down');
      let moved = 0;
      const waitMove = rig.waitFor('the ARPAdvertisement to leave the crashed node', async () => (await rig.advertisedNode(slb(name))) === rig.nodeName(to), 120_000, 200).then(() => (moved = Date.now()));
      await routerReachesNode(vip, to);
      const reached = Date.now();
      await waitMove;
      figure(`FO-3 node crash, announce ${announce ? 'on' : 'off'}: crash -> ARPAdvertisement moved (Lease expiry)`, `${((moved - crashed) / 1000).toFixed(1)} s`);
      figure(`FO-3 node crash, announce ${announce ? 'on' : 'off'}: crash -> router reaches a surviving node`, `${((reached - crashed) / 1000).toFixed(1)} s`);
      await rig.net.in(rig.net.node(from), 'ip', 'link', 'set', 'eth0', 'up');
      rig.startAgent(from);
      await rig.waitFor('the crashed node advertising again', async () => (await rig.serviceLoadBalancer(name))?.advertisingNodes?.includes(rig.nodeName(from)), 60_000, 500);
      expect(await rig.advertisedNode(slb(name))).toBe(rig.nodeName(to)); // SLB-7: it stays
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
      waitMove = rig.waitFor('the ARPAdvertisement to move', async () => (await rig.advertisedNode(slb('fo4'))) === rig.nodeName(to), 120_000, 200).then(() => (moved = Date.now()));
    });
    await waitMove;
    const twoMacs = probes.filter((p) => p.length > 1);
    const silent = probes.filter((p) => p.length === 0);
    figure('FO-4 partition: probes answered by two MACs', `${twoMacs.length}/${probes.length}`);
    figure('FO-4 partition: probes unanswered (old node expired, new not yet answering)', `${silent.length}/${probes.length}`);
    figure('FO-4 partition: cut -> ARPAdvertisement moved', `${((moved - cut) / 1000).toFixed(1)} s`);
    expect(twoMacs).toEqual([]);
    expect(new Set(probes.flat())).toEqual(new Set([mac(from), mac(to)]));
    await rig.reconnectToApiServer(from);
  });
});
