// Failover as the upstream router sees it (FO-1..FO-4), on the cluster in a box: Juneau installed
// from the built image and the synthesized manifest unchanged, the echo image as a Deployment on
// node-0 and node-1, one `externalTrafficPolicy: Local` LoadBalancer Service per test over those
// pods, and a router namespace on the nodes' segment with Linux's default neighbour timers, never
// flushed unless a test says so. Agents run with the manifest's defaults (--answer-expiry 10s,
// --lease-duration 10s, renewal every 2 s) except where a test patches the DaemonSet: the node
// crash is also measured with FAST_FAILOVER_FLAGS.
//
// What is done to a node is done to the real one: its agent is the DaemonSet's container process
// (SIGKILLed from the host), its link is the host end of its veth on the box bridge (set down: the
// cable pulled at the switch), and its path to the API server (on the host, at the bridge address
// 10.226.k.1) is cut by an nftables table in the node's network namespace dropping that address and
// port both ways, which is a partition: the kubelet, kube-proxy and the agent of that node lose the
// API server while the node's link, and its ARP answers, stay up.
import * as fs from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../api';
import { INSTALL } from '../../api/constants';
import { DEFAULT_AGENT_FLAGS, FAST_FAILOVER_FLAGS } from '../../runtime/agent/flags';
import { agentLeaseName } from '../../runtime/agent/liveness/lease';
import { sleep } from '../sleep';
import { elapsedSince, figure } from '../shared/figures';
import { after, firstLogLine, firstWatchEvent, handoverFrames, neighbourChange } from '../shared/timeline';
import { sharedEchoBox } from './echo-box';
import { cmd, inNetns } from './exec';
import { ARP_REPLY, type Frame } from '../netns/pcap';
import { captureArp, macOf, neighbourMac, repliesPerRequest, type Probe } from './router-view';
import {
  advertisedNodes,
  agentArgs,
  agentPods,
  arpNetworkYaml,
  describeOnBox,
  echoDeployment,
  echoServiceYaml,
  listPods,
  setAgentArgs,
  until,
} from './session';
import { agentPidsInNetns } from './upstream';

const NS = INSTALL.namespace;
const NETWORK = 'box-net';

describeOnBox('failover on real nodes (FO-1..FO-4): what the router sees when a node stops serving', () => {
  const echoBox = sharedEchoBox('juneau-failover-box-', { nodes: 3, label: 'failover box' });
  const { kubectl, inRouter } = echoBox;
  /** node name -> its eth0 MAC. */
  const macs = new Map<string, string>();
  let routerMac = '';
  let backends: string[] = [];
  let kc: KubeConfig;
  /** The manifest's agent arguments, restored after a test changes them. */
  let manifestArgs: string[] = [];

  const mac = (node: string) => macs.get(node)!;
  const nodeOfMac = (m: string) => (m === routerMac ? 'router' : ([...macs].find(([, v]) => v === m)?.[0] ?? m));
  const nodeRecord = (node: string) => echoBox.box.nodes.find((n) => n.name === node)!;
  const named = (probes: readonly Probe[]) =>
    probes.map((p) => `${new Date(p.at).toISOString().slice(11, 23)} ${p.macs.map(nodeOfMac).join('+') || 'none'}`);

  beforeAll(async () => {
    kc = new KubeConfig();
    kc.loadFromFile(echoBox.status.kubeconfigPath);
    routerMac = (await macOf(echoBox.router)).toLowerCase();
    for (const n of echoBox.box.nodes) macs.set(n.name, (await macOf(n.netns)).toLowerCase());
    backends = echoBox.box.nodes.slice(0, 2).map((n) => n.name);
    // Both controller replicas on node-2, off the nodes this file crashes and cuts off: a crashed
    // node holding the leader adds a controller failover (the controller Lease, measured by
    // traffic.test.ts) to FO-3's, and a webhook endpoint on it fails the move's admission until
    // the node is NotReady (seen here: 22.8 s instead of 2 s with the fast profile).
    const third = echoBox.box.nodes[2].name;
    await kubectl([
      '-n',
      NS,
      'patch',
      'deployment',
      'juneau-controller',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'kubernetes.io/hostname': third } } } } }),
    ]);
    await kubectl(['-n', NS, 'rollout', 'status', 'deployment/juneau-controller', '--timeout=300s']);
    manifestArgs = await agentArgs(kubectl);
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${arpNetworkYaml(echoBox.box.segment)}---\n${echoDeployment({ nodes: backends })}`,
    );
    await kubectl(['rollout', 'status', 'deployment/echo', '--timeout=300s']);
  });

  /** The agents as the manifest makes them, both backends schedulable and their echo pods Ready (after a test
   * that changed them, or failed before it put them back). */
  async function backendsBack(): Promise<void> {
    if ((await agentArgs(kubectl)).join(' ') !== manifestArgs.join(' ')) await agentsWith([]);
    await kubectl(['uncordon', ...backends]);
    await kubectl(['rollout', 'status', 'deployment/echo', '--timeout=300s']);
  }
  afterEach(backendsBack);

  /** Every ARP frame about `address` (as sender or target), one line each, for failure messages. */
  const wireFor = (frames: readonly Frame[], address: string) =>
    frames
      .filter((f) => f.arp && (f.arp.sip === address || f.arp.tip === address))
      .map(
        (f) =>
          `${new Date(f.timeMs).toISOString().slice(11, 23)} ${f.arp!.op === ARP_REPLY ? 'reply' : 'request'} from ${nodeOfMac(f.arp!.sha.toLowerCase())} ${f.arp!.sip} -> ${f.arp!.tip}${f.dst === 'ff:ff:ff:ff:ff:ff' ? ' (broadcast)' : ''}`,
      );

  /** One GET from the router through its neighbour cache as it is (never flushed): the node that served it. */
  const routerServedBy = async (vip: string, seconds = 2) =>
    /node=(\S+)/.exec(await inRouter(`curl -s -m ${seconds} http://${vip}/ || true`, 30_000))?.[1];

  /**
   * The Service `name` on `vip` over the echo pods; resolves to the node its ARPAdvertisement names
   * once the router's own path (its cache kept) is served by that node.
   */
  async function serviceOn(name: string, vip: string): Promise<string> {
    await kubectl(['apply', '--server-side', '-f', '-'], echoServiceYaml({ network: NETWORK, vip, name }));
    const node = await until(`the ARPAdvertisement of ${vip}`, async () => (await advertisedNodes(kubectl, vip))[0]);
    await until(`the router served by ${node} through ${vip}`, async () =>
      (await routerServedBy(vip)) === node ? true : undefined,
    );
    return node;
  }

  /**
   * The first moment the router's own path reaches `node`: a GET (1 s timeout) starts every 100 ms
   * without waiting for the one before, so a SYN sent to a dead MAC just before the announcement
   * does not hide the success right after it (a sequential poll would add up to 1 s).
   */
  const firstRouterReach = (vip: string, node: string, timeoutMs: number) =>
    new Promise<number>((resolve, reject) => {
      const started = Date.now();
      let inFlight = 0;
      let done = false;
      const timer = setInterval(() => {
        if (done) return;
        if (Date.now() - started > timeoutMs) {
          done = true;
          clearInterval(timer);
          void neighbourMac(echoBox.router, vip).then(
            (m) =>
              reject(
                new Error(
                  `the router was not served by ${node} through ${vip} within ${timeoutMs} ms; its neighbour entry names ${m ? nodeOfMac(m) : 'nothing'}`,
                ),
              ),
            reject,
          );
        } else if (inFlight < 12) {
          inFlight++;
          routerServedBy(vip, 1).then(
            (n) => {
              inFlight--;
              if (n !== node || done) return;
              done = true;
              clearInterval(timer);
              resolve(Date.now());
            },
            (err) => {
              done = true;
              clearInterval(timer);
              reject(err);
            },
          );
        }
      }, 100);
    });

  /**
   * `arping` for `vip` from the router every `intervalMs` until `drive` (given the MAC arping printed
   * for each probe sent so far) settles, ARP captured at the router all along: every reply to every
   * probe, split at each of the router's requests. `drive` does what the window is about.
   */
  async function probeWindow(
    vip: string,
    intervalMs: number,
    drive: (sent: () => ReadonlyArray<string | undefined>) => Promise<void>,
  ): Promise<Probe[]> {
    const capture = await captureArp(echoBox.router);
    const firsts: Array<string | undefined> = [];
    let done = false;
    const outcome = drive(() => firsts).then(
      () => undefined,
      (err: unknown) => err,
    );
    void outcome.finally(() => (done = true));
    let frames: Frame[] = [];
    try {
      while (!done) {
        const started = Date.now();
        const out = await inRouter(`arping -c 1 -w 1 -I eth0 ${vip} || true`);
        firsts.push(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/.exec(out)?.[1].toLowerCase());
        await sleep(Math.max(0, intervalMs - (Date.now() - started)));
      }
      await sleep(300); // a reply to the last probe still on its way is counted too
    } finally {
      done = true;
      frames = await capture.stop();
    }
    const err = await outcome;
    if (err) throw err;
    return repliesPerRequest(frames, routerMac, vip);
  }

  /** Resolves once `count` probes have been sent. */
  const probesSent = (sent: () => ReadonlyArray<unknown>, count: number) =>
    until(`${count} probes sent`, async () => sent().length >= count || undefined);

  const setAnnounceOnMove = (on: boolean) =>
    kubectl([
      'patch',
      'externalnetwork',
      NETWORK,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { arp: { announceOnMove: on } } }),
    ]);

  /** The agent Lease of `node`: its renewTime (ms since the epoch; the agent's clock is this host's) and duration. */
  async function agentLease(node: string): Promise<{ renewTime: number; seconds: number }> {
    const lease = JSON.parse(await kubectl(['-n', NS, 'get', 'lease', agentLeaseName(node), '-o', 'json'])) as {
      spec: { renewTime: string; leaseDurationSeconds: number };
    };
    return { renewTime: new Date(lease.spec.renewTime).getTime(), seconds: lease.spec.leaseDurationSeconds };
  }

  /** The DaemonSet's agents with the manifest's arguments plus `extra`, each one's Lease carrying the new duration. */
  async function agentsWith(extra: readonly string[]): Promise<void> {
    const seconds = Number(
      /--lease-duration=(\d+)s/.exec(extra.join(' '))?.[1] ?? DEFAULT_AGENT_FLAGS.leaseDurationMs / 1000,
    );
    await setAgentArgs(kubectl, [...manifestArgs, ...extra]);
    for (const n of echoBox.box.nodes)
      await until(`${n.name}'s agent Lease with ${seconds} s`, async () =>
        (await agentLease(n.name)).seconds === seconds ? true : undefined,
      );
  }

  /** The pid of the juneau-agent process in `node`'s network namespace, read from the host. */
  function agentPid(node: string): number {
    const pids = agentPidsInNetns(nodeRecord(node).netns);
    expect({ node, agents: pids.length }).toEqual({ node, agents: 1 });
    return Number(pids[0]);
  }

  /** The pid of `node`'s kubelet, as the box recorded it (checked against its command line). */
  function kubeletPid(node: string): number {
    const p = echoBox.box.processes.find((r) => r.name === 'kubelet' && r.node === node);
    expect(p && fs.readFileSync(`/proc/${p.pid}/cmdline`, 'utf8')).toContain('kubelet');
    return p!.pid;
  }

  /** The agent on `node` running and Ready after a restart by its kubelet. */
  const agentBackAndReady = (node: string) =>
    until(
      `the agent on ${node} restarted by its kubelet and Ready`,
      async () => {
        const st = (await agentPods(kubectl, node))[0]?.status.containerStatuses?.[0];
        return st && st.restartCount > 0 && st.ready ? true : undefined;
      },
      180_000,
    );

  /** The cable of `node` pulled (`down`) or plugged back (`up`): the host end of its veth on the bridge. */
  const setLink = (node: string, state: 'up' | 'down') =>
    cmd('ip', ['link', 'set', 'dev', nodeRecord(node).hostVeth, state]);

  const PARTITION_TABLE = 'juneau_fo4_partition';
  /** FO-4: `node` cut off from the API server (its address and port dropped both ways in the node's namespace). */
  async function partition(node: string): Promise<void> {
    const api = new URL(echoBox.status.server);
    const rules = `table inet ${PARTITION_TABLE} {
  chain out { type filter hook output priority 0; ip daddr ${api.hostname} tcp dport ${api.port} drop; }
  chain in { type filter hook input priority 0; ip saddr ${api.hostname} tcp sport ${api.port} drop; }
}`;
    await inNetns(nodeRecord(node).netns, 'nft', ['-f', '-'], { input: rules });
  }
  const reconnect = (node: string) =>
    inNetns(nodeRecord(node).netns, 'nft', ['delete', 'table', 'inet', PARTITION_TABLE]);

  /** The JSON lines of an agent's log. */
  const logLines = (log: string): Array<Record<string, unknown>> =>
    log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const agentLog = async (node: string) => {
    const [pod] = await agentPods(kubectl, node);
    return kubectl(['-n', NS, 'logs', pod.metadata.name]);
  };

  test('FO-1: the answering node loses its backend with announceOnMove on — the router (default neighbour timers, no flush) reaches the new node after the announcement', async () => {
    await setAnnounceOnMove(true);
    const vip = `${echoBox.box.segment}.241`;
    const from = await serviceOn('fo1', vip);
    const to = backends.find((n) => n !== from)!;
    expect(nodeOfMac((await neighbourMac(echoBox.router, vip)) ?? '')).toBe(from);
    // The old node announced the address when it gained it (FO-1): both of those announcements
    // sent (its agent's log says so) before the capture, which is about the handover's alone.
    await until(
      `${from}'s own two announcements of ${vip}`,
      async () =>
        logLines(await agentLog(from)).some((l) => l.msg === 'announced' && l.address === vip && l.n === 2) ||
        undefined,
    );
    const [pod] = await listPods(kubectl, 'default', 'app=echo', `spec.nodeName=${from}`);
    // Each step of the handover as the API server delivered it (watches opened before the change).
    const slice = firstWatchEvent(kc, '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', (s) =>
      (s.endpoints ?? []).some((e: any) => e.targetRef?.name === pod.metadata.name && e.conditions?.ready === false),
    );
    const moved = firstWatchEvent(
      kc,
      `/apis/${GROUP}/${VERSION}/arpadvertisements`,
      (a) => a.spec?.address === vip && a.spec?.nodeName === to,
    );
    // When the API server has the pod deleting (kubectl's own start is not the handover's).
    const deleting = firstWatchEvent(
      kc,
      '/api/v1/namespaces/default/pods',
      (p) => p.metadata?.name === pod.metadata.name && !!p.metadata?.deletionTimestamp,
    );
    const neighbour = neighbourChange(echoBox.router, 'eth0', vip, mac(to));
    await Promise.all([deleting.ready, slice.ready, moved.ready, neighbour.ready]);
    await kubectl(['cordon', from]);
    const capture = await captureArp(echoBox.router);
    let frames: Frame[] = [];
    let unready = 0;
    let reached = 0;
    try {
      unready = Date.now();
      await kubectl(['delete', 'pod', pod.metadata.name, '--wait=false']);
      reached = await firstRouterReach(vip, to, 60_000);
      await sleep(2_500); // the second announcement, 2 s after the first
    } finally {
      frames = await capture.stop();
    }
    const [deletedAt, sliceAt, movedAt, neighbourAt] = await Promise.all([
      deleting.at,
      slice.at,
      moved.at,
      neighbour.at,
    ]).finally(() => [deleting, slice, moved, neighbour].forEach((w) => w.stop()));
    const wire = handoverFrames(frames, vip, mac(to));
    // The agents' own log lines (this host's clock, ms): when each wrote the move into its map.
    const [toLog, fromLog] = await Promise.all([agentLog(to), agentLog(from)]);
    const mapWrite = (log: string, field: 'added' | 'removed') =>
      firstLogLine(log, unready, (l) => l.msg === 'maps reconciled' && l[field]?.includes(vip));
    const gainedAt = mapWrite(toLog, 'added');
    const removedAt = mapWrite(fromLog, 'removed');
    figure(
      'FO-1 announce on: backend pod deleted -> router reaches the new node (default neighbour timers)',
      `${((reached - deletedAt) / 1000).toFixed(2)} s`,
    );
    figure(
      'FO-1 announce on: backend pod deleted -> router neighbour entry names the new node',
      `${((neighbourAt - deletedAt) / 1000).toFixed(3)} s`,
    );
    const links: Array<[string, number | undefined, number | undefined]> = [
      ['pod deleted -> EndpointSlice not ready (kube-controller-manager)', deletedAt, sliceAt],
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
      ['router neighbour entry -> a GET served by the new node (attempts every 100 ms)', neighbourAt, reached],
    ];
    for (const [name, t0, t] of links) figure(`FO-1 breakdown: ${name}`, t0 === undefined ? 'not seen' : after(t0, t));
    figure(
      'FO-1 breakdown: ARPAdvertisement moved -> old node map removed (its agent watch, pass)',
      after(movedAt, removedAt),
    );
    figure(
      'FO-1 breakdown (ms): kcm / controller / agent watch+pass / probe sent / probe window / router entry / GET',
      links.map(([, t0, t]) => (t0 === undefined || t === undefined ? '?' : String(Math.round(t - t0)))).join(' / '),
    );
    const announcements = frames.filter((f) => f.arp?.op === 1 && f.arp.sip === vip && f.arp.tip === vip);
    // With every ARP frame for the address the router heard, should the count be off.
    const heard = wireFor(frames, vip);
    const announcedBy = announcements.map((f) => nodeOfMac(f.arp!.sha.toLowerCase()));
    const entry = await neighbourMac(echoBox.router, vip);
    const routerEntry = entry ? nodeOfMac(entry) : 'none';
    if (announcedBy.join() !== [to, to].join() || routerEntry !== to)
      throw new Error(
        `expected two announcements from ${to} and the router's entry naming it; announced by: ${announcedBy.join(', ') || 'nobody'}, the router's entry: ${routerEntry}; every ARP frame about ${vip} the router heard:\n${heard.join('\n')}`,
      );
    // The backend back on its node (uncordoned, afterEach): the address stays where it is (SLB-7).
    await backendsBack();
    expect(await advertisedNodes(kubectl, vip)).toEqual([to]);
  });

  test('FO-2: the agent gone longer than --answer-expiry (SIGKILLed, its kubelet stopped so nothing restarts it): that node answers 0 of 20 probes while its ARPAdvertisement still names it', async () => {
    // A short expiry and a long Lease, so the probes end before the controller withdraws the
    // address (FO-3): the silence below is FO-2's alone.
    await agentsWith(['--answer-expiry=4s', '--lease-duration=90s']);
    const vip = `${echoBox.box.segment}.242`;
    const node = await serviceOn('fo2', vip);
    const kubelet = kubeletPid(node);
    process.kill(kubelet, 'SIGSTOP');
    let probes: Probe[] = [];
    let stillNamed: string[] = [];
    let killed = 0;
    try {
      process.kill(agentPid(node), 'SIGKILL');
      killed = Date.now();
      await sleep(4_500); // past the expiry of the last heartbeat the agent wrote
      probes = await probeWindow(vip, 150, (sent) => probesSent(sent, 20).then(() => undefined));
      stillNamed = await advertisedNodes(kubectl, vip);
    } finally {
      process.kill(kubelet, 'SIGCONT');
    }
    figure(
      'FO-2: agent gone longer than the expiry -> probes answered',
      `${probes.filter((p) => p.macs.length > 0).length}/${probes.length} (probing ended ${elapsedSince(killed)} after the kill)`,
    );
    expect(stillNamed).toEqual([node]);
    expect(probes.length).toBeGreaterThanOrEqual(20);
    expect(named(probes.filter((p) => p.macs.length > 0))).toEqual([]);
    await agentBackAndReady(node);
    await until(`${node} answering ${vip} again`, async () =>
      (await routerServedBy(vip)) === node ? true : undefined,
    );
    await agentsWith([]);
  });

  // The default Lease (10 s, renewed every 2 s: 0.5 writes a second per node) and the documented
  // fast profile (FAST_FAILOVER_FLAGS: 2 s, every 0.5 s: 2 writes a second per node).
  const crashes = [
    { announce: true, fast: true, last: 243, name: 'fo3fast' },
    { announce: true, fast: false, last: 244, name: 'fo3on' },
    { announce: false, fast: false, last: 245, name: 'fo3off' },
  ];
  for (const { announce, fast, last, name } of crashes) {
    const profile = `announce ${announce ? 'on' : 'off'}, ${fast ? `agents ${FAST_FAILOVER_FLAGS.join(' ')}` : 'default Lease'}`;
    test(`FO-3: node crash (agent SIGKILLed, link cut), ${profile}: time until the router reaches a surviving node`, async () => {
      await setAnnounceOnMove(announce);
      if (fast) await agentsWith(FAST_FAILOVER_FLAGS);
      const vip = `${echoBox.box.segment}.${last}`;
      const from = await serviceOn(name, vip);
      const to = backends.find((n) => n !== from)!;
      const moved = firstWatchEvent(
        kc,
        `/apis/${GROUP}/${VERSION}/arpadvertisements`,
        (a) => a.spec?.address === vip && a.spec?.nodeName === to,
      );
      await moved.ready;
      const capture = await captureArp(echoBox.router);
      let frames: Frame[] = [];
      let crashed = 0;
      let reached = 0;
      let lastRenewal = 0;
      try {
        crashed = Date.now();
        process.kill(agentPid(from), 'SIGKILL');
        await setLink(from, 'down');
        lastRenewal = (await agentLease(from)).renewTime;
        reached = await firstRouterReach(vip, to, 120_000);
      } finally {
        frames = await capture.stop();
        await setLink(from, 'up');
      }
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
      await until(
        `${from} advertising ${vip} again (its link back, its agent restarted)`,
        async () => {
          const slb = JSON.parse(
            await kubectl(['-n', 'default', 'get', 'serviceloadbalancers', name, '-o', 'json']),
          ) as { status?: { advertisingNodes?: string[] } };
          return slb.status?.advertisingNodes?.includes(from) ? true : undefined;
        },
        180_000,
      );
      expect(await advertisedNodes(kubectl, vip)).toEqual([to]); // SLB-7: it stays
      if (fast) await agentsWith([]);
    });
  }

  test('FO-4: a node cut off from the API server (its link up) while the controller moves its address: no probe over the whole partition is answered by two MACs', async () => {
    await setAnnounceOnMove(true);
    const vip = `${echoBox.box.segment}.246`;
    const from = await serviceOn('fo4', vip);
    const to = backends.find((n) => n !== from)!;
    let cut = 0;
    let moved = 0;
    let reconnected = 0;
    let renewedAgain = 0;
    let partitioned = false;
    // Probes every 250 ms from before the cut, across the old node's expiry, the move and the new
    // node's start, through the reconnection until the old node's agent has renewed its Lease again
    // and 8 probes after it: the whole partition window, captured at the router.
    let probes: Probe[] = [];
    try {
      probes = await probeWindow(vip, 250, async (sent) => {
        await probesSent(sent, 4);
        cut = Date.now();
        await partition(from);
        partitioned = true;
        await until(
          `the ARPAdvertisement of ${vip} moved to ${to}`,
          async () => (await advertisedNodes(kubectl, vip)).join() === to || undefined,
        );
        moved = Date.now();
        const sinceMove = sent().length;
        await until(`${to} answering 8 probes in a row after the move`, async () => {
          const s = sent().slice(sinceMove);
          return (s.length >= 8 && s.slice(-8).every((m) => m === mac(to))) || undefined;
        });
        await reconnect(from);
        partitioned = false;
        reconnected = Date.now();
        await until(
          `${from}'s agent renewing its Lease after the reconnection`,
          async () => (await agentLease(from)).renewTime > reconnected || undefined,
        );
        renewedAgain = Date.now();
        await probesSent(sent, sent().length + 8);
      });
    } finally {
      if (partitioned) await reconnect(from);
    }
    const twoMacs = probes.filter((p) => p.macs.length > 1);
    const silent = probes.filter((p) => p.macs.length === 0);
    figure('FO-4 partition: probes answered by two MACs', `${twoMacs.length}/${probes.length}`);
    figure(
      'FO-4 partition: probes unanswered (old node expired, new not yet answering)',
      `${silent.length}/${probes.length}`,
    );
    figure('FO-4 partition: cut -> ARPAdvertisement moved', `${((moved - cut) / 1000).toFixed(1)} s`);
    figure('FO-4 partition: reconnected -> the old node renewed its Lease', after(reconnected, renewedAgain));
    expect(named(twoMacs)).toEqual([]);
    // Both nodes were heard: the old one before the cut, the new one after the move.
    expect(new Set(probes.flatMap((p) => p.macs.map(nodeOfMac)))).toEqual(new Set([from, to]));
    expect(await advertisedNodes(kubectl, vip)).toEqual([to]);
  });
});
