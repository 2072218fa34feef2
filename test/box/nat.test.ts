// The ElasticIP data plane with real pods and real traffic (NAT, EIP-6 for real,
// direct ElasticIP, moves and restarts), on the cluster in a box: Juneau installed from the built
// image and the synthesized manifest as install.test.ts does, an ExternalNetwork/AddressPool on
// the box's own node subnet (EN-12; `up` picks the subnet), pods of the echo image
// (scripts/images/echo.ts), a router namespace on the nodes' segment and a server namespace behind
// it on a link of MTU 1280.
//
// What runs where: the pods' programs are the echo image's (its HTTP and UDP servers, and its
// Node.js through `kubectl exec` for TCP transfers); what the image lacks (tcpdump, ip, ping,
// traceroute from Debian's `traceroute` and `iputils-ping`, scripts/install-system-deps.sh) runs
// from the host inside the pod's network namespace, found through the echo server's process.
import * as fs from 'node:fs';
import { ECHO_HTTP_PORT, ECHO_UDP_PORT } from '../../scripts/images/echo';
import { NAT_TC_POD_HANDLE } from '../../runtime/agent/bpf/nat';
import { elapsedSince, figure } from '../shared/figures';
import { bashIn, inNetns } from './exec';
import {
  addServerBehind,
  capturingFragNeeded,
  peerIn,
  peerInPod as peerInPodOf,
  podConnects,
  type PeerResult,
  runningIn,
} from './peers';
import { agentPidsInNetns, pidsOf } from './upstream';
import {
  advertisedNodes,
  agentBackAfterRestart,
  agentPods,
  describeOnBox,
  echoPod,
  elasticIpAddress,
  elasticIpYaml,
  getFromPod,
  getPod,
  juneauInAgent,
  type PodJson,
  podReady,
  routerGet,
  until,
} from './session';
import { ETH0_NIC, sharedEchoBox, webBehindElasticIp } from './echo-box';

/** The server's side of the narrow link (TEST-NET-2, only inside the router and server namespaces and the nodes' routes). */
const SERVER_PREFIX = '198.51.100';
const LINK_MTU = 1280;
const MiB = 1 << 20;
/** The annotations of the two ElasticIP pods: `web` a Juneau NIC (eth0, the attachment web's), `direct` the holder of the ElasticIP direct. */
const POD_ANNOTATIONS = {
  web: ETH0_NIC,
  direct: { 'juneau.loutres.me/elastic-ip': 'direct' },
};

interface NatRow {
  elasticIP: string;
  address: string;
  kind: 'nat' | 'direct' | 'remote';
  inPackets: number;
  inBytes: number;
  outPackets: number;
  outBytes: number;
}

describeOnBox('the ElasticIP data plane with real pods on real nodes, real traffic from a router', () => {
  const echoBox = sharedEchoBox('juneau-nat-box-', { nodes: 3, label: 'nat box' });
  const { kubectl, inRouter } = echoBox;
  let server = '';
  let serverIp = '';
  /** The NAT ElasticIP (through the attachment `web` to the pod `web`) and the direct one (pod `direct`). */
  let natEip = '';
  let directEip = '';

  const nodeRecord = (name: string) => echoBox.box.nodes.find((n) => n.name === name)!;
  const pod = (name: string) => getPod(kubectl, name);
  /** The pod's network namespace, through its echo server's process (found from the host by POD_NAME). */
  const podNetns = (name: string) => {
    const pids = pidsOf('juneau-echo/server.js', (pid) =>
      fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`POD_NAME=${name}`),
    );
    expect(pids).toHaveLength(1);
    return `/proc/${pids[0]}/ns/net`;
  };
  /** The echo image's own Node.js in the pod: one PEER end. */
  const peerInPod = (name: string, args: string[]) => peerInPodOf(echoBox, name, args);
  /** A connection the pod `web` opens to the router at `port`, `bytes` each way. */
  const webConnectsToRouter = (port: number, bytes: number) =>
    podConnects(echoBox, 'web', { netns: echoBox.router, address: echoBox.routerIp, port }, bytes);
  const podLog = async (name: string) =>
    (await kubectl(['logs', name]))
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; client?: string });
  /** `kubectl juneau bpf dump nat` in the agent Pod of `node`. */
  async function natTable(node: string): Promise<NatRow[]> {
    const [agent] = await agentPods(kubectl, node);
    return JSON.parse(
      await kubectl(juneauInAgent(agent.metadata.name, ['bpf', 'dump', 'nat', '-o', 'json'])),
    ) as NatRow[];
  }
  const running = (name: string) => podReady(kubectl, name);
  /** One HTTP GET from the router after it forgets the address's MAC (a router that re-resolves: ARP-8 sends no gratuitous ARP). */
  const freshGet = (ip: string) => routerGet(echoBox.router, ip);
  const eipAddress = (name: string) => elasticIpAddress(kubectl, name);
  const advertisedNode = (eip: string) => advertisedNodes(kubectl, eip);

  /**
   * The pod `name` deleted and made again on `to`: once the new pod is Running and `whenRunning` has
   * run, the router's GETs to `address` (re-resolving each time) until the new pod answers, within
   * 60 s; the time from Running to that answer is the figure `what`. The ARPAdvertisement names
   * `to`. Returns the new pod.
   */
  async function recreateOn(
    name: keyof typeof POD_ANNOTATIONS,
    to: string,
    address: string,
    what: string,
    whenRunning: () => Promise<unknown> = async () => undefined,
  ): Promise<PodJson> {
    await kubectl(['delete', 'pod', name, '--wait=true']);
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod(name, to, POD_ANNOTATIONS[name]));
    const p = await until(`the new pod ${name} Running`, async () => {
      const q = await pod(name);
      return q.status.phase === 'Running' ? q : undefined;
    });
    const tRunning = Date.now();
    await whenRunning();
    const page = await until(
      `HTTP to ${address} answered by the new pod`,
      async () => {
        const got = await freshGet(address);
        return got.includes(`node=${to}`) ? got : undefined;
      },
      60_000,
    );
    figure(what, elapsedSince(tRunning));
    expect(page).toBe(`client=${echoBox.routerIp} pod=${name} node=${to}`);
    expect(await advertisedNode(address)).toEqual([to]);
    return p;
  }

  beforeAll(async () => {
    const { router, box, routerIp } = echoBox;
    ({ server, serverIp } = await addServerBehind(router, box, routerIp, SERVER_PREFIX, LINK_MTU));
    echoBox.namespaces.push(server);

    // EN-12: the pool lies in the nodes' own subnet, whichever `up` picked.
    const tApply = Date.now();
    natEip = await webBehindElasticIp(echoBox, box.nodes[1].name);
    figure(
      'nat box: ElasticIP, attachment and pod applied -> HTTP answered through the ElasticIP',
      elapsedSince(tApply),
    );
    // The direct ElasticIP, held by the pod `direct` that DIR-1 makes.
    await kubectl(['apply', '--server-side', '-f', '-'], elasticIpYaml('direct', 'box-net'));
  });

  test("EIP-4 (NAT), NAT-1: HTTP GET to the ElasticIP returns the pod's page; the pod saw (and logged) the router's address as the client", async () => {
    const page = await freshGet(natEip);
    expect(page).toBe(`client=${echoBox.routerIp} pod=web node=${echoBox.box.nodes[1].name}`);
    expect((await podLog('web')).filter((l) => l.msg === 'http').map((l) => l.client)).toContain(echoBox.routerIp);
    expect((await podLog('web')).filter((l) => l.msg === 'http' && l.client !== echoBox.routerIp)).toEqual([]);
  });

  test('NAT-2: a connection the pod opens to a server in the router namespace arrives from the ElasticIP', async () => {
    const { heard, said } = await webConnectsToRouter(9000, 1000);
    expect(heard.peer).toBe(natEip);
    expect({ received: heard.received, sha: heard.receivedSha256 }).toEqual({ received: 1000, sha: said.sentSha256 });
    expect({ received: said.received, sha: said.receivedSha256 }).toEqual({ received: 1000, sha: heard.sentSha256 });
  });

  test('NAT-3: ping to the ElasticIP is answered (ICMP echo both ways), and UDP echo through it returns each datagram from the ElasticIP to the router', async () => {
    const ping = await inRouter(`ping -c 3 -i 0.2 -W 2 ${natEip}`);
    expect(ping).toMatch(/3 packets transmitted, 3 received/);
    const script = `const s = require('node:dgram').createSocket('udp4'); const msg = require('node:crypto').randomBytes(1200);
let tries = 0; const send = () => { if (++tries > 10) { console.log('NO ANSWER'); process.exit(1); } s.send(msg, ${ECHO_UDP_PORT}, '${natEip}'); };
s.on('message', (m, r) => { console.log(JSON.stringify({ same: m.equals(msg), from: r.address + ':' + r.port })); process.exit(0); });
send(); setInterval(send, 1000);`;
    const out = await inNetns(echoBox.router, process.execPath, ['-e', script], { timeoutMs: 30_000 });
    expect(JSON.parse(out)).toEqual({ same: true, from: `${natEip}:${ECHO_UDP_PORT}` });
    expect((await podLog('web')).filter((l) => l.msg === 'udp').map((l) => l.client)).toContain(echoBox.routerIp);
  });

  test("NAT-1, NAT-2, NAT-5: 10 MiB each way on one connection from the router to the ElasticIP, checksums equal on both ends; the node's per-ElasticIP counters grew by at least that", async () => {
    const node = echoBox.box.nodes[1].name;
    const row = async () => (await natTable(node)).find((r) => r.elasticIP === natEip)!;
    const before = await row();
    const t0 = Date.now();
    const listener = peerInPod('web', ['listen', '0.0.0.0', '9100', String(10 * MiB)]);
    await listener.waitFor(/"listening":true/);
    const client = peerIn(echoBox.router, ['connect', natEip, '9100', String(10 * MiB)]);
    const [inPodEnd, routerEnd] = await Promise.all([listener.result<PeerResult>(), client.result<PeerResult>()]);
    figure('nat box: 10 MiB each way through the ElasticIP (one connection)', elapsedSince(t0));
    expect(inPodEnd.peer).toBe(echoBox.routerIp);
    expect({ received: inPodEnd.received, sha: inPodEnd.receivedSha256 }).toEqual({
      received: 10 * MiB,
      sha: routerEnd.sentSha256,
    });
    expect({ received: routerEnd.received, sha: routerEnd.receivedSha256 }).toEqual({
      received: 10 * MiB,
      sha: inPodEnd.sentSha256,
    });
    const after = await row();
    expect(after.kind).toBe('nat');
    expect(after.inBytes - before.inBytes).toBeGreaterThanOrEqual(10 * MiB);
    expect(after.outBytes - before.outBytes).toBeGreaterThanOrEqual(10 * MiB);
  });

  test(`EIP-6, NAT-3: the router's ICMP "fragmentation needed" for a DF packet too big for the MTU ${LINK_MTU} link, sent to the ElasticIP, reaches the pod naming the pod's own address; its route cache learns MTU ${LINK_MTU}; 1 MiB over TCP crosses the link`, async () => {
    const p = await pod('web');
    const podIp = p.status.podIP!;
    const netns = podNetns('web');
    await bashIn(netns, 'ip route flush cache');
    let capture = capturingFragNeeded(netns);
    await capture.waitFor(/listening on/);
    const ping = await bashIn(netns, `ping -M do -s 1400 -c 1 -W 2 ${serverIp} || true`);
    expect(ping).toContain(`Frag needed and DF set (mtu = ${LINK_MTU})`);
    let seen = (await capture.done).stdout.replace(/\s+/g, ' ');
    // Outer header to the pod, the embedded header naming the pod's address (not the ElasticIP the router saw); every checksum tcpdump checks is right.
    expect(seen).toContain(
      `${echoBox.routerIp} > ${podIp}: ICMP ${serverIp} unreachable - need to frag (mtu ${LINK_MTU})`,
    );
    expect(seen).toContain(`${podIp} > ${serverIp}: ICMP echo request`);
    expect(seen).not.toMatch(/bad cksum|wrong/i);
    expect(await bashIn(netns, `ip route get ${serverIp}`)).toContain(`mtu ${LINK_MTU}`);

    // TCP learns the path MTU the same way (the server advertises MSS 1460): forgotten first, learned again during the transfer.
    await bashIn(netns, 'ip route flush cache');
    expect(await bashIn(netns, `ip route get ${serverIp}`)).not.toContain(`mtu ${LINK_MTU}`);
    capture = capturingFragNeeded(netns);
    await capture.waitFor(/listening on/);
    const sink = peerIn(server, ['listen', serverIp, '9001', '0']);
    await sink.waitFor(/"listening":true/);
    const t0 = Date.now();
    const source = peerInPod('web', ['connect', serverIp, '9001', String(MiB)]);
    const [heard, said] = await Promise.all([sink.result<PeerResult>(), source.result<PeerResult>()]);
    figure(
      `nat box: 1 MiB over TCP from the pod across the MTU ${LINK_MTU} link (Path MTU Discovery through the NAT)`,
      elapsedSince(t0),
    );
    expect({ peer: heard.peer, received: heard.received, sha: heard.receivedSha256 }).toEqual({
      peer: natEip,
      received: MiB,
      sha: said.sentSha256,
    });
    seen = (await capture.done).stdout.replace(/\s+/g, ' ');
    expect(seen).toMatch(
      new RegExp(`${podIp.replace(/\./g, '\\.')}\\.\\d+ > ${serverIp.replace(/\./g, '\\.')}\\.9001: Flags`),
    );
    expect(seen).not.toMatch(/bad cksum|wrong/i);
    expect(await bashIn(netns, `ip route get ${serverIp}`)).toContain(`mtu ${LINK_MTU}`);
  });

  test('EIP-6: traceroute from the pod to the server shows the node, the router, the server; traceroute from the router to the ElasticIP ends at the pod', async () => {
    const p = await pod('web');
    const netns = podNetns('web');
    const hops = (out: string) =>
      out
        .split('\n')
        .map((l) => /^\s*\d+\s+(\S+)/.exec(l)?.[1])
        .filter(Boolean);
    const gateway = (JSON.parse(await bashIn(netns, 'ip -j route show default')) as Array<{ gateway: string }>)[0]
      .gateway;
    // Debian's traceroute 2.1 (UDP probes), from the host inside the pod's network namespace.
    const out = await bashIn(netns, `traceroute -n -q 1 -w 2 -m 6 ${serverIp}`);
    expect(hops(out)).toEqual([gateway, echoBox.routerIp, serverIp]);

    const probes = runningIn(netns, 'timeout', [
      '60',
      'tcpdump',
      '-l',
      '-n',
      '-i',
      'eth0',
      '-c',
      '1',
      `udp and dst host ${p.status.podIP} and dst portrange 33434-33534`,
    ]);
    await probes.waitFor(/listening on/);
    const back = await inRouter(`traceroute -n -q 1 -w 2 -m 6 ${natEip}`);
    expect(hops(back)).toEqual([nodeRecord(p.spec.nodeName!).ip, natEip]);
    // The last hop's answer came from the pod: its probe reached the pod's own address.
    expect((await probes.done).stdout).toMatch(/ UDP, length/);
  });

  test("NAT-4: the agent SIGKILLed on the attachment's node during a transfer through the ElasticIP: the transfer goes on while it is gone and completes, checksum equal", async () => {
    const node = echoBox.box.nodes[1].name;
    const back = await agentBackAfterRestart(kubectl, node);
    const listener = peerInPod('web', ['listen', '0.0.0.0', '9200', '0']);
    await listener.waitFor(/"listening":true/);
    // The router sends 64 KiB every 10 ms until its stdin is closed.
    const sender = peerIn(echoBox.router, ['connect', natEip, '9200', 'paced']);
    const received = () =>
      Math.max(0, ...listener.lines.map((l) => (JSON.parse(l) as { received?: number }).received ?? 0));
    await listener.waitFor(/"received":[1-9]/);
    const pids = agentPidsInNetns(nodeRecord(node).netns);
    expect(pids).toHaveLength(1);
    process.kill(Number(pids[0]), 'SIGKILL');
    const killed = Date.now();
    const atKill = received();
    await until('the agent restarted by the kubelet and Ready', async () => (await back()) || undefined);
    const duringAbsence = received() - atKill;
    figure(
      'nat box: agent SIGKILL -> restarted and Ready, a transfer through the ElasticIP running all along',
      elapsedSince(killed),
    );
    figure('nat box: agent SIGKILL: bytes received by the pod between the kill and the new agent Ready', duringAbsence);
    sender.child.stdin!.end();
    const [inPodEnd, routerEnd] = await Promise.all([listener.result<PeerResult>(), sender.result<PeerResult>()]);
    expect(duringAbsence).toBeGreaterThan(0);
    expect({ peer: inPodEnd.peer, received: inPodEnd.received, sha: inPodEnd.receivedSha256 }).toEqual({
      peer: echoBox.routerIp,
      received: routerEnd.sent,
      sha: routerEnd.sentSha256,
    });
    figure('nat box: agent SIGKILL: bytes transferred on the connection', inPodEnd.received);
  });

  test('DIR-1, EIP-4 (direct), EN-9: HTTP to a direct ElasticIP reaches the pod that holds it; after the pod is recreated on another node it reaches the new pod, also through the old node (a stale router cache)', async () => {
    const [a, b] = [echoBox.box.nodes[0].name, echoBox.box.nodes[2].name];
    // CNI-1: juneau-cni, installed by the agents, put the ElasticIP on the pod's eth0; nothing by hand.
    const addressInPod = async () =>
      expect(await bashIn(podNetns('direct'), 'ip -4 -o addr show dev eth0')).toContain(`inet ${directEip}/32`);
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod('direct', a, POD_ANNOTATIONS.direct));
    directEip = await eipAddress('direct');
    await running('direct');
    await addressInPod();
    const page = await until(`HTTP to ${directEip}`, async () => (await freshGet(directEip)) || undefined, 60_000);
    expect(page).toBe(`client=${echoBox.routerIp} pod=direct node=${a}`);
    expect((await natTable(a)).filter((r) => r.elasticIP === directEip).map((r) => r.kind)).toEqual(['direct']);

    await recreateOn(
      'direct',
      b,
      directEip,
      'nat box: direct ElasticIP, pod recreated on another node: pod Running -> first HTTP answered by the new pod (router re-resolving)',
      addressInPod,
    );
    await until(
      `node ${a} forwarding nothing for ${directEip} to a pod of its own`,
      async () =>
        (await natTable(a)).some((r) => r.elasticIP === directEip && r.kind === 'direct') ? undefined : true,
      30_000,
    );
    // EN-9: what still reaches the old node for it (a stale router cache) is carried to the new one.
    const nodeIPs = await kubectl([
      'get',
      'node',
      b,
      '-o',
      'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}',
    ]);
    expect((await natTable(a)).filter((r) => r.elasticIP === directEip).map((r) => [r.kind, r.address])).toEqual([
      ['remote', nodeIPs.trim()],
    ]);
    // EN-9 on real nodes: a router whose cache still holds the old node's MAC for the address
    // (ARP-8: nothing announced the move) reaches the new pod through the old node.
    const [oldLink] = JSON.parse(await inNetns(nodeRecord(a).netns, 'ip', ['-j', 'link', 'show', 'eth0'])) as Array<{
      address: string;
    }>;
    const carried = async () =>
      (await natTable(a)).find((r) => r.elasticIP === directEip && r.kind === 'remote')!.inPackets;
    const before = await carried();
    const stale = await inRouter(
      `ip neigh replace ${directEip} lladdr ${oldLink.address} dev eth0 nud permanent; ` +
        `curl -s -m 5 http://${directEip}:${ECHO_HTTP_PORT}/; ip neigh del ${directEip} dev eth0`,
    );
    expect(stale.trim()).toBe(`client=${echoBox.routerIp} pod=direct node=${b}`);
    // Carried by the old node's VXLAN path, not rescued by its kernel's routing (its default route
    // leads to the box's host, which resolves the address to the new node itself).
    expect(await carried()).toBeGreaterThan(before);
  });

  test('NAT-4, EIP-17: the attachment moves with its pod (recreated on another node): the ElasticIP reaches the new pod, the old node translates it no more', async () => {
    const [from, to] = [echoBox.box.nodes[1].name, echoBox.box.nodes[2].name];
    const p = await recreateOn(
      'web',
      to,
      natEip,
      'nat box: ElasticIPAttachment moved with its pod: pod Running -> first connection through the ElasticIP (router re-resolving)',
    );
    expect((await natTable(to)).filter((r) => r.elasticIP === natEip).map((r) => [r.kind, r.address])).toEqual([
      ['nat', p.status.podIP],
    ]);
    await until(
      `node ${from} translating nothing for ${natEip}`,
      async () => ((await natTable(from)).some((r) => r.elasticIP === natEip) ? undefined : true),
      30_000,
    );
    // And the way out follows too: the new pod's connection to the router arrives from the ElasticIP.
    const { heard } = await webConnectsToRouter(9300, 10);
    expect(heard.peer).toBe(natEip);
  });

  test("NAT-2, NAT-4 on the install as synthesized (no natPodInterfaces: the agent finds cni0 from its pods' routes), with a CNI-like masquerade on every node: in-cluster traffic keeps the pod address, the ElasticIP still wins over the masquerade, and the node keeps no conntrack entry for the translated flows", async () => {
    const node = (await pod('web')).spec.nodeName!;
    const other = echoBox.box.nodes.find((n) => n.name !== node)!;
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod('peer', other.name, {}));
    const peer = await running('peer');
    const { netns } = nodeRecord(node);
    // The agent's own finding: tc_nat_pod on the bridge the pods are routed through, not its ports.
    const hooked = await until(`tc_nat_pod on cni0 of ${node}`, async () => {
      const filters = await inNetns(netns, 'tc', ['filter', 'show', 'dev', 'cni0', 'ingress']);
      return filters.includes(`handle 0x${NAT_TC_POD_HANDLE.toString(16)} `) ? filters : undefined;
    });
    console.log(`nat box: ${node} cni0 ingress: ${hooked.trim().split('\n').join(' | ')}`);
    // What flannel's --ip-masq installs: pod traffic leaving the cluster masqueraded to the node's address.
    for (const n of echoBox.box.nodes) {
      await inNetns(n.netns, 'nft', ['-f', '-'], {
        input: `table ip cni-masq {\n chain post { type nat hook postrouting priority 100; ip saddr ${echoBox.box.clusterCidr} ip daddr != ${echoBox.box.clusterCidr} oifname "eth0" masquerade; }\n}\n`,
      });
    }
    await inNetns(netns, 'conntrack', ['-F']);

    // In the cluster: the pod on the other node sees the ElasticIP pod's own address.
    const web = (await pod('web')).status.podIP!;
    const page = await getFromPod(kubectl, 'web', `http://${peer.status.podIP}:${ECHO_HTTP_PORT}/`);
    expect(page).toBe(`client=${web} pod=peer node=${other.name}`);
    // Out of the cluster: from the ElasticIP, not the node's address the masquerade would give it.
    const { heard } = await webConnectsToRouter(9400, 10);
    expect(heard.peer).toBe(natEip);
    expect(await freshGet(natEip)).toBe(`client=${echoBox.routerIp} pod=web node=${node}`);
    // Stateless both ways: no conntrack entry on the node for either translated flow, while the
    // in-cluster flow (forwarded by the kernel, untranslated) is tracked there: conntrack works.
    const entries = (await inNetns(netns, 'conntrack', ['-L'])).split('\n');
    const tracked = entries.filter((l) => l.includes(natEip) || (l.includes(web) && l.includes(echoBox.routerIp)));
    const inCluster = entries.filter((l) => l.includes(`src=${web} dst=${peer.status.podIP} `));
    console.log(
      `nat box: default install, masquerade on: translated flows tracked ${tracked.length}, in-cluster flows tracked ${inCluster.length}`,
    );
    expect(inCluster.length).toBeGreaterThan(0);
    expect(tracked).toEqual([]);
  });
});
