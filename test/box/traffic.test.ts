// Real pods and a real service proxy behind a Juneau VIP (OPS-1), on
// the cluster in a box: Juneau installed from the built image and the synthesized manifest as
// install.test.ts does, the echo image (scripts/images/echo.ts) as a Deployment with one pod on
// each of two of the three nodes, an `externalTrafficPolicy: Local` LoadBalancer Service, each
// node's real kube-proxy (nftables) DNATing the VIP to its local endpoint and dropping it where
// there is none, and kube-ipvs0 holding the VIP on every node with arp_ignore=0 (ipvs.ts).
//
// The incident (OPS-1) replayed in connections: 200 TCP connections from a router namespace on the nodes'
// segment to the VIP, the router's neighbour entry flushed every 10. Guard on (Juneau): every
// connection lands on a node with a backend. Guard off (`--no-guard`: every kernel answers ARP
// for the VIP, as under MetalLB L2 with ipvs and strictARP off): whichever MAC the router caches,
// a node without a backend drops the connection.
import * as fs from 'node:fs';
import { sleep } from '../sleep';
import { elapsedSince, figure } from '../shared/figures';
import { inNetns } from './exec';
import { KUBE_IPVS0 } from './ipvs';
import { agentPidsInNetns, pidsOf } from './upstream';
import { sharedEchoBox } from './echo-box';
import { answeringMacs, arpAnswers, nodesByMac, watchLines } from './router-view';
import {
  addAgentArgs,
  agentBackAfterRestart,
  advertisedNodes,
  echoDeployment,
  echoServiceYaml,
  listPods,
  describeOnBox,
  arpNetworkYaml,
} from './session';

const NODE_SUBNET = '10.225.32';
const ROUTER_IP = `${NODE_SUBNET}.254`;
const VIP = `${NODE_SUBNET}.245`;
const NS = 'juneau-system';
const CONNECTIONS = 200;
const FLUSH_EVERY = 10;

/** The pool and network of the examples, the echo Deployment on `nodes` (one pod each) and its Service. */
function manifest(nodes: string[]): string {
  return `${arpNetworkYaml(NODE_SUBNET, { pool: 'arp-pool', network: 'ext-net-arp' })}---
${echoDeployment({ nodes, udp: true })}---
${echoServiceYaml({ network: 'ext-net-arp', vip: VIP, udp: true })}`;
}

interface Connection {
  ok: boolean;
  /** The MAC the router's neighbour entry for the VIP held after the attempt ('none' when unresolved). */
  mac: string;
  /** The echo page, or curl's exit code. */
  out: string;
}

describeOnBox(
  'real pods and kube-proxy (nftables) behind a Juneau VIP: the incident replayed in TCP connections (OPS-1)',
  () => {
    const echoBox = sharedEchoBox('juneau-traffic-box-', { nodes: 3, label: 'box', nodeSubnet: NODE_SUBNET });
    const { kubectl, inRouter } = echoBox;
    let backendNodes: string[] = [];

    /**
     * `n` HTTP GETs to the VIP, one TCP connection each, 2 s to answer (as the seed's check), the
     * router's neighbour entry flushed every `flushEvery`. The connections between two flushes run
     * at once: the first SYN starts the one ARP resolution and the others wait on the same incomplete
     * neighbour entry, so every connection of a group goes to the one MAC the router cached — what
     * the same connections made one after another would do (later replies to that one request fall
     * within the entry's 1 s locktime and do not replace it) — without a failing group costing 2 s
     * per connection.
     */
    async function replay(n: number, flushEvery = FLUSH_EVERY): Promise<Connection[]> {
      const script = `dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
for g in $(seq 0 ${flushEvery} ${n - 1}); do
  ip neigh flush to ${VIP} dev eth0
  for i in $(seq $g $((g + ${flushEvery} - 1))); do
    [ $i -lt ${n} ] || break
    ( page=$(curl -s -m 2 http://${VIP}/) && echo "ok $page" > "$dir/$i" || echo "FAIL $?" > "$dir/$i" ) &
  done
  wait
  mac=$(ip neigh show to ${VIP} dev eth0 | grep -o 'lladdr [0-9a-f:]*' | cut -d' ' -f2)
  for i in $(seq $g $((g + ${flushEvery} - 1))); do
    [ $i -lt ${n} ] || break
    r=$(cat "$dir/$i"); echo "\${r%% *} \${mac:-none} \${r#* }"
  done
done`;
      const out = await inRouter(script, 900_000); // a group of connections takes up to 2 s, on a loaded machine more
      const lines = out.split('\n').filter(Boolean);
      return lines.map((l) => {
        const [status, mac, ...rest] = l.split(' ');
        return { ok: status === 'ok', mac, out: rest.join(' ') };
      });
    }

    /** The node each MAC belongs to (eth0 of each node), to name what the router cached. */
    const nodeOfMac = () => nodesByMac(echoBox.box);

    /** Connections per (node the router cached, outcome), e.g. `node-0 ok: 120`. */
    async function tally(conns: Connection[]): Promise<Record<string, number>> {
      const byMac = await nodeOfMac();
      const t: Record<string, number> = {};
      for (const c of conns) {
        const k = `${byMac.get(c.mac) ?? c.mac} ${c.ok ? 'ok' : 'failed'}`;
        t[k] = (t[k] ?? 0) + 1;
      }
      return t;
    }

    /**
     * The node whose kernel answers a broadcast ARP request first: an address outside the pool (no
     * guard) on every node's `lo`, asked three times. On this bridge it is the same node every time
     * (most likely the order the bridge floods its ports in); on a real segment it would vary.
     */
    async function firstKernelToAnswer(): Promise<string> {
      const probe = `${NODE_SUBNET}.239`;
      for (const n of echoBox.box.nodes) await inNetns(n.netns, 'ip', ['addr', 'add', `${probe}/32`, 'dev', 'lo']);
      const byMac = await nodeOfMac();
      const firsts: string[] = [];
      for (let i = 0; i < 3; i++) {
        await inRouter(`ip neigh flush to ${probe} dev eth0`);
        const r = await inRouter(`arping -c 1 -w 2 -I eth0 ${probe} || true`);
        firsts.push(byMac.get(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/.exec(r)?.[1].toLowerCase() ?? '') ?? 'none');
      }
      for (const n of echoBox.box.nodes) await inNetns(n.netns, 'ip', ['addr', 'del', `${probe}/32`, 'dev', 'lo']);
      figure('box: the kernel answering a broadcast ARP request first, 3 probes', firsts.join(', '));
      expect(new Set(firsts).size).toBe(1);
      return firsts[0];
    }

    const advertisedNode = () => advertisedNodes(kubectl, VIP);

    type Lease = { spec: { holderIdentity: string; acquireTime: string; leaseDurationSeconds: number } };
    /** The controller's leader-election Lease. */
    const lease = async () =>
      (JSON.parse(await kubectl(['-n', NS, 'get', 'lease', 'juneau-controller', '-o', 'json'])) as Lease).spec;
    /** Its holder: `<pod>_<random per process>`, so a restarted leader comes back under a new identity. */
    const holder = async () => (await lease()).holderIdentity;
    const nodeRecord = (name: string) => echoBox.box.nodes.find((n) => n.name === name)!;

    /** The pid of the juneau-agent process running in `node`'s network namespace, read from the host. */
    function agentPid(node: string): number {
      const pids = agentPidsInNetns(nodeRecord(node).netns);
      expect(pids).toHaveLength(1);
      return Number(pids[0]);
    }

    test('SLB-5, OPS-1: kubectl apply of the echo Deployment (2 of 3 nodes) and its Local LoadBalancer Service -> the VIP answers HTTP with the router as the client, through kube-proxy on a backend node', async () => {
      // Backends on the two nodes whose kernels do not answer first: with the guard off, the router
      // then caches the node without a backend, as the seed's HAProxy did.
      const first = await firstKernelToAnswer();
      backendNodes = echoBox.box.nodes.map((n) => n.name).filter((n) => n !== first);
      const tApply = Date.now();
      await kubectl(['apply', '--server-side', '-f', '-'], manifest(backendNodes));
      let page = '';
      for (const until = Date.now() + 300_000; Date.now() < until && !page; await sleep(250)) {
        page = (await inRouter(`curl -s -m 2 http://${VIP}/ || true`)).trim();
      }
      figure('box: kubectl apply -> the VIP answering HTTP', elapsedSince(tApply));
      expect(page).toMatch(
        new RegExp(`^client=${ROUTER_IP.replace(/\./g, '\\.')} pod=echo-\\S+ node=(${backendNodes.join('|')})$`),
      );
      // The seed's precondition holds: every node's kernel holds the VIP, on kube-ipvs0.
      for (const n of echoBox.box.nodes) {
        const addrs = await inNetns(n.netns, 'ip', ['-4', '-o', 'addr', 'show', 'dev', KUBE_IPVS0]);
        expect({ node: n.name, vip: addrs.includes(` ${VIP}/32 `) }).toEqual({ node: n.name, vip: true });
      }
      // The connection went through kube-proxy's nftables DNAT, not to a local socket on the VIP.
      const answering = /node=(\S+)/.exec(page)![1];
      const nft = await inNetns(nodeRecord(answering).netns, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
      expect(nft).toContain(VIP);
    });

    test('UDP echo through the VIP (kube-proxy DNAT of a datagram to the local endpoint)', async () => {
      const script = `const s = require('node:dgram').createSocket('udp4'); const msg = Buffer.from('juneau-' + process.pid);
let tries = 0; const send = () => { if (++tries > 10) { console.log('NO ANSWER'); process.exit(1); } s.send(msg, 7, '${VIP}'); };
s.on('message', (m, r) => { console.log(JSON.stringify({ same: m.equals(msg), from: r.address + ':' + r.port })); process.exit(0); });
send(); setInterval(send, 1000);`;
      const out = await inNetns(echoBox.router, process.execPath, ['-e', script], { timeoutMs: 30_000 });
      expect(JSON.parse(out)).toEqual({ same: true, from: `${VIP}:7` });
    });

    test(`OPS-1, OPS-2, SLB-5, EN-11: guard on — ${CONNECTIONS} TCP connections, the router's neighbour entry flushed every ${FLUSH_EVERY}: all succeed, each page naming the router as the client`, async () => {
      const conns = await replay(CONNECTIONS);
      expect(conns).toHaveLength(CONNECTIONS);
      const t = await tally(conns);
      figure(
        'incident (OPS-1) in connections, guard on (Juneau): connections that succeeded',
        `${conns.filter((c) => c.ok).length}/${CONNECTIONS}`,
      );
      figure('incident (OPS-1) in connections, guard on: by the node the router cached', JSON.stringify(t));
      expect(conns.filter((c) => !c.ok)).toEqual([]);
      expect(conns.filter((c) => !c.out.startsWith(`client=${ROUTER_IP} `))).toEqual([]);
      // Exactly one MAC all along (flushed 20 times): the node the ARPAdvertisement names, a backend node.
      const adverts = await advertisedNode();
      expect(adverts).toHaveLength(1);
      expect(backendNodes).toContain(adverts[0]);
      expect(Object.keys(t)).toEqual([`${adverts[0]} ok`]);
    });

    test('agent SIGKILL on the answering node while the router re-resolves the VIP before every connection: connections run while it is gone, and every connection succeeds (the pinned XDP program keeps answering)', async () => {
      const [node] = await advertisedNode();
      const pid = agentPid(node);
      const back = await agentBackAfterRestart(kubectl, node);
      process.kill(pid, 'SIGKILL');
      const killed = Date.now();
      // Connections, each after a neighbour flush, in groups of 5 until the kubelet has the agent back
      // and Ready. A group followed by a check that finds it not yet back ran entirely after the kill
      // and before its return: those connections ran while the agent was down (as nat.test.ts counts
      // the bytes of a transfer between the kill and the new agent Ready).
      const done: Connection[] = [];
      let duringAbsence = 0;
      for (const until = Date.now() + 120_000; ;) {
        const group = await replay(5, 1);
        done.push(...group);
        if (await back()) break;
        duringAbsence += group.length;
        if (Date.now() > until) throw new Error(`the agent on ${node} was not restarted and Ready within 120 s`);
      }
      figure(
        'box: agent SIGKILL -> restarted by the kubelet and Ready (seen between connection groups)',
        elapsedSince(killed),
      );
      figure(
        'box: agent SIGKILL on the answering node: connections made between the kill and the new agent Ready',
        duringAbsence,
      );
      figure(
        'box: agent SIGKILL on the answering node: connections (each after a neighbour flush) until it is back that succeeded',
        `${done.filter((c) => c.ok).length}/${done.length}`,
      );
      expect(duringAbsence).toBeGreaterThan(0);
      expect(done.filter((c) => !c.ok)).toEqual([]);
      expect(Object.keys(await tally(done))).toEqual([`${node} ok`]); // answered by that node's pinned program all along
    });

    test('the leader controller SIGKILLed during connections: every connection succeeds, answered by the same node (the data plane does not wait for the controller) until a new leader holds the Lease', async () => {
      const [answering] = await advertisedNode();
      const leaderIdentity = await holder();
      const leader = leaderIdentity.split('_')[0];
      // The leader's process, found from the host by its pod name (the runtime sets HOSTNAME to it).
      const pids = pidsOf('juneau-controller', (pid) =>
        fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HOSTNAME=${leader}`),
      );
      expect(pids).toHaveLength(1);
      process.kill(Number(pids[0]), 'SIGKILL');
      const killed = Date.now();
      // Connections in groups of 20 (neighbour flushed every 10) until a new leader: the whole leaderless window.
      const done: Connection[] = [];
      for (const until = Date.now() + 120_000; ;) {
        done.push(...(await replay(20)));
        if ((await holder()) !== leaderIdentity) break;
        if (Date.now() > until) throw new Error('no new controller identity took the Lease within 120 s');
      }
      figure(
        'box: leader controller SIGKILL -> a new leader holds the Lease (seen between connection groups)',
        elapsedSince(killed),
      );
      // The new holder's own stamp of its take (the nodes share the host's clock): the takeover to
      // the millisecond, against the Lease duration it waited out (the standby tries at the expiry).
      const taken = await lease();
      figure(
        'box: leader controller SIGKILL -> the new leader took the Lease (its acquireTime)',
        `${((Date.parse(taken.acquireTime) - killed) / 1000).toFixed(2)} s (Lease ${taken.leaseDurationSeconds} s)`,
      );
      figure(
        'box: leader controller SIGKILL: connections until a new leader that succeeded',
        `${done.filter((c) => c.ok).length}/${done.length}`,
      );
      expect(done.filter((c) => !c.ok)).toEqual([]);
      expect(Object.keys(await tally(done))).toEqual([`${answering} ok`]);
    });

    test('OPS-2, SLB-7: a rolling update of the controller Deployment (kubectl rollout restart) during connections: every leader hands the Lease over, the address never moves, and every connection succeeds, answered by the same node; counted ARP answers after it', async () => {
      const [answering] = await advertisedNode();
      const before = await holder();
      const kubeconfig = echoBox.status.kubeconfigPath;
      const advertsNow = JSON.parse(await kubectl(['get', 'arpadvertisements', '-o', 'json'])) as { items: unknown[] };
      // Every write to an ARPAdvertisement and to the Lease from here on, one line each.
      const adverts = await watchLines(
        echoBox.kubectlBin,
        kubeconfig,
        ['arpadvertisements', '-o', 'custom-columns=ADDRESS:.spec.address,NODE:.spec.nodeName'],
        advertsNow.items.length,
      );
      // One line per version: holder|acquireTime|leaseDurationSeconds (a released Lease's holder is '').
      const leases = await watchLines(
        echoBox.kubectlBin,
        kubeconfig,
        [
          '-n',
          NS,
          'lease',
          'juneau-controller',
          '-o',
          'jsonpath={.spec.holderIdentity}|{.spec.acquireTime}|{.spec.leaseDurationSeconds}{"\\n"}',
        ],
        1,
      );
      const t0 = Date.now();
      await kubectl(['-n', NS, 'rollout', 'restart', 'deployment/juneau-controller']);
      let settled = false;
      const rollout = kubectl([
        '-n',
        NS,
        'rollout',
        'status',
        'deployment/juneau-controller',
        '--timeout=600s',
      ]).finally(() => (settled = true));
      // Connections in groups of 20 (neighbour flushed every 10) for the whole rollout, and one group after.
      const done: Connection[] = [];
      while (!settled) done.push(...(await replay(20)));
      await rollout;
      figure('box: controller rolling update (rollout restart) -> rolled out', elapsedSince(t0));
      done.push(...(await replay(20)));
      const advertLines = (await adverts.stop()).filter((l) => l.split(/\s+/)[0] === VIP);
      const leaseLines = (await leases.stop()).map((l) => l.split('|'));
      // The handovers: each release (holder '', 1 s) and the take that followed it, by their own stamps.
      const handovers: number[] = [];
      for (const [i, [who, acquired, seconds]] of leaseLines.entries()) {
        const next = leaseLines.slice(i + 1).find(([h]) => h !== '');
        if (who === '' && seconds === '1' && next) handovers.push(Date.parse(next[1]) - Date.parse(acquired));
      }
      figure(
        'box: controller rolling update: Lease released -> taken by a standby, per handover (acquireTime stamps)',
        handovers.map((ms) => `${ms} ms`).join(', ') || 'none',
      );
      figure(
        'box: controller rolling update: connections during the rollout that succeeded',
        `${done.filter((c) => c.ok).length}/${done.length}`,
      );
      figure("box: controller rolling update: writes of the VIP's ARPAdvertisement seen", advertLines.length);
      // The old pods are gone: a new identity leads, and every stopped leader released the Lease.
      const after = await holder();
      expect(after).not.toBe(before);
      expect(after.split('_')[0]).not.toBe(before.split('_')[0]);
      expect(handovers.length).toBeGreaterThan(0);
      // The address never moved (every write of its ARPAdvertisement still names the same node)...
      expect(advertLines.filter((l) => l.split(/\s+/)[1] !== answering)).toEqual([]);
      expect(await advertisedNode()).toEqual([answering]);
      // ...and no connection was lost, every one answered by that node.
      expect(done.filter((c) => !c.ok)).toEqual([]);
      expect(Object.keys(await tally(done))).toEqual([`${answering} ok`]);
      // OPS-2: counted, not one look: 10 broadcast requests, each answered once, by that node only.
      const counted = await arpAnswers(echoBox.router, VIP, 10);
      figure(
        'box: after the controller rolling update: 10 broadcast ARP requests for the VIP, answers',
        JSON.stringify(counted),
      );
      const byNode = new Map([...(await nodeOfMac())].map(([mac, node]) => [mac.toLowerCase(), node]));
      expect(Object.keys(counted.byMac).map((mac) => byNode.get(mac.toLowerCase()))).toEqual([answering]);
      expect(counted).toMatchObject({ requests: 10, replies: 10 });
    });

    test('SLB-7: the answering node loses its backend pod (cordoned, pod deleted) -> the VIP moves to the other backend node and serves from there; the backend back does not move it again', async () => {
      const [from] = await advertisedNode();
      const to = backendNodes.find((n) => n !== from)!;
      const [pod] = await listPods(kubectl, 'default', 'app=echo', `spec.nodeName=${from}`);
      await kubectl(['cordon', from]);
      const t0 = Date.now();
      await kubectl(['delete', 'pod', pod.metadata.name, '--wait=false']);
      for (const until = Date.now() + 120_000; (await advertisedNode()).join() !== to; await sleep(250)) {
        if (Date.now() > until) throw new Error(`the ARPAdvertisement for ${VIP} did not move to ${to}`);
      }
      figure('box: backend pod deleted on the answering node -> ARPAdvertisement moved', elapsedSince(t0));
      // A router that re-resolves (ARP-8: no gratuitous ARP, so one that does not waits for its entry to expire).
      let served: Connection | undefined;
      for (const until = Date.now() + 60_000; !served;) {
        const [c] = await replay(1, 1);
        if (c.ok) served = c;
        else if (Date.now() > until) throw new Error(`no connection to ${VIP} succeeded within 60 s of the move`);
      }
      figure(
        'box: backend pod deleted -> first connection served by the other node (router re-resolving)',
        elapsedSince(t0),
      );
      expect(served.out).toContain(`node=${to}`);
      expect((await nodeOfMac()).get(served.mac)).toBe(to);

      await kubectl(['uncordon', from]);
      await kubectl(['rollout', 'status', 'deployment/echo', '--timeout=300s']);
      const conns = await replay(20);
      expect(conns.filter((c) => !c.ok || !c.out.includes(`node=${to}`))).toEqual([]);
      expect(await advertisedNode()).toEqual([to]);
    });

    test(`the incident with a real kube-proxy: guard off (--no-guard, every kernel answers ARP for the VIP on kube-ipvs0) — ${CONNECTIONS} connections, the ones that fail`, async () => {
      await addAgentArgs(kubectl, ['--no-guard'], NS);
      // The condition of the incident: more than one MAC answers the router's ARP for the VIP.
      let macs: string[] = [];
      for (const until = Date.now() + 60_000; Date.now() < until && macs.length < 2;)
        macs = await answeringMacs(echoBox.router, VIP);
      figure('incident (OPS-1) in connections, guard off: distinct MACs answering one arping', macs.length);
      expect(macs.length).toBeGreaterThan(1);
      const conns = await replay(CONNECTIONS);
      expect(conns).toHaveLength(CONNECTIONS);
      const t = await tally(conns);
      figure(
        'incident (OPS-1) in connections, guard off (MetalLB-like): connections that failed',
        `${conns.filter((c) => !c.ok).length}/${CONNECTIONS}`,
      );
      figure('incident (OPS-1) in connections, guard off: by the node the router cached', JSON.stringify(t));
      // The incident's mechanism, connection by connection: sent to the node without a backend, the
      // SYN is dropped by kube-proxy (Local policy, no local endpoint); sent to a backend node, it is served.
      const third = echoBox.box.nodes.find((n) => !backendNodes.includes(n.name))!.name;
      expect(Object.keys(t).filter((k) => k.startsWith(`${third} `) !== k.endsWith(' failed'))).toEqual([]);
      expect(t[`${third} failed`]).toBeGreaterThan(0);
    });
  },
);
