// The NATGateway data path (runtime/agent/ngw/: desired.ts, sync.ts) on three "node" namespaces
// with pods, against a router namespace as the outside (test/netns/ngw-rig.ts). The agent's own
// code computes and applies each node's state (netlink and libnftables through koffi, in the
// node's namespace); real packets prove it: servers beyond the router print the source they see.
import * as path from 'node:path';
import { NatMaps } from '../../runtime/agent/bpf/nat';
import { removePins } from '../../runtime/agent/bpf/pins';
import { conntrackStats, ngwFlowCounters } from '../../runtime/agent/ngw/sync';
import { NGW, type NgwGatewayInput } from '../../runtime/agent/ngw/desired';
import { nftCounters } from '../../runtime/agent/ngw/nftables';
import { AGENT_CAPABILITIES } from '../../constructs/shared/install';
import { describeAsRoot } from './rig';
import { inNetnsSync } from './ns-tools';
import { resolverIn } from './nat-rig';
import { CLUSTER_RANGES, GATEWAY_ADDRESS, NgwRig, SERVER, SERVER_MTU, nodeAddress, podAddress } from './ngw-rig';

const TSX = path.resolve(__dirname, '../../node_modules/.bin/tsx');
const NAT_LOADER = path.join(__dirname, 'nat-loader.ts');
const ELASTIC_IP = '198.51.100.50';
/** The selected pods: one on each node, and node 1's ElasticIP pod (1, 4). */
const SELECTED: ReadonlyArray<[number, number]> = [
  [1, 2],
  [2, 2],
  [3, 2],
  [1, 4],
];
const PODS: ReadonlyArray<[number, number]> = [...SELECTED, [1, 3]];
const WIDE = { min: 40000, max: 40999 };

interface TcpClient {
  banner: string;
  sent: number;
  echoed: number;
  intact: boolean;
}
interface UdpAnswers {
  answers: Array<{ from: string; len: number; ok: boolean }>;
  errors: string[];
}

describeAsRoot('NATGateway data path (NGW-4..NGW-7), three nodes and the outside in network namespaces', () => {
  const rig = new NgwRig();
  let port = 7000;
  const pinDir = `/sys/fs/bpf/juneau-test-ngwp-${rig.id}`;
  let natMaps: NatMaps | undefined;

  const gateway = (gwNode: number, portRange = WIDE): NgwGatewayInput => ({
    name: 'team-a/egress',
    address: GATEWAY_ADDRESS,
    gatewayNodeAddress: nodeAddress(gwNode),
    portRange,
    pods: SELECTED.map(([k, j]) => ({ address: podAddress(k, j), nodeAddress: nodeAddress(k) })),
  });
  const applyAll = (gwNode: number, portRange = WIDE) => {
    for (const k of [1, 2, 3])
      rig.apply(k, {
        gateways: [gateway(gwNode, portRange)],
        clusterRanges: CLUSTER_RANGES,
        elasticIPPods: k === 1 ? [podAddress(1, 4)] : [],
      });
  };
  /** A TCP transfer from pod (k, j) to `to` (a tcp-server in `serverNs`); the banner names the source the server saw. */
  const tcp = async (k: number, j: number, serverNs: string, to: string, bytes = 20000) => {
    const p = String(port++);
    const server = await rig.start<{ client: string; received: number }>(serverNs, 'nat', 'listening', 'tcp-server', p);
    const client = await rig.tool<TcpClient>(rig.pod(k, j), 'nat', 'tcp-client', to, p, String(bytes));
    return { client, server: await server.result };
  };
  /** A UDP server beyond the router for one datagram; `seen()` the sources it saw. */
  const udpServer = async () => {
    const p = String(port++);
    const server = await rig.start<{ seen: Array<{ from: string }> }>(
      rig.server,
      'nat',
      'listening',
      'udp-server',
      p,
      '1',
    );
    return { port: p, seen: async () => (await server.result).seen.map((s) => s.from) };
  };
  const udpSend = (k: number, j: number, p: string) =>
    rig.tool<UdpAnswers>(rig.pod(k, j), 'nat', 'udp-send', SERVER, p, '100', '1', 'nodf');
  const udp = async (k: number, j: number) => {
    const server = await udpServer();
    const sent = await udpSend(k, j, server.port);
    return { sent, seen: await server.seen() };
  };
  /** The new flows node k translated for the gateway (its nftables counter, read by the agent's code). */
  const gatewayFlows = (k: number) =>
    inNetnsSync(rig.node(k), () => ngwFlowCounters(rig.desired.get(k)!))['team-a/egress'] ?? 0;

  beforeAll(async () => {
    await rig.setup(PODS);
    await rig.answer(GATEWAY_ADDRESS, 2);
    applyAll(2);
  }, 120_000);
  afterAll(async () => {
    natMaps?.close();
    await rig.destroy();
    removePins(pinDir);
  }, 60_000);

  test('NGW-4: TCP, UDP and ICMP echo from selected pods on all three nodes arrive from the gateway address and get their replies', async () => {
    const before = gatewayFlows(2);
    const watch = await rig.start<{ seen: Array<{ from: string }> }>(
      rig.server,
      'ngw',
      'listening',
      'icmp-watch',
      '30',
      '6',
    );
    const results: Record<string, unknown> = {};
    for (const [k, j] of [
      [1, 2],
      [2, 2],
      [3, 2],
    ] as const) {
      const t = await tcp(k, j, rig.server, SERVER);
      const u = await udp(k, j);
      const ping = await rig.tool<{ replies: string[] }>(rig.pod(k, j), 'nat', 'ping', SERVER, '2');
      results[podAddress(k, j)] = {
        tcp: [t.client.banner, t.client.intact, t.server.client],
        udp: [u.seen, u.sent],
        ping,
      };
    }
    const expected = {
      tcp: [`client=${GATEWAY_ADDRESS}`, true, GATEWAY_ADDRESS],
      udp: [[GATEWAY_ADDRESS], { answers: [{ from: SERVER, len: 100, ok: true }], errors: [] }],
      ping: { replies: [SERVER, SERVER] },
    };
    expect(results).toEqual({
      [podAddress(1, 2)]: expected,
      [podAddress(2, 2)]: expected,
      [podAddress(3, 2)]: expected,
    });
    const icmpSources = (await watch.result).seen.map((s) => s.from);
    expect(icmpSources).toEqual(Array(6).fill(GATEWAY_ADDRESS));
    const flows = gatewayFlows(2) - before;
    console.log(`NGW-4: 3 pods x (TCP, UDP, 2 pings): the gateway node translated ${flows} new flows`);
    expect(flows).toBeGreaterThanOrEqual(9);
  }, 60_000);

  test('NGW-4: a pod not selected arrives from its own address; a selected pod keeps its address to another pod and to a node', async () => {
    const notSelected = await tcp(1, 3, rig.server, SERVER);
    const toPod = await tcp(1, 2, rig.pod(3, 2), podAddress(3, 2));
    const toNode = await tcp(1, 2, rig.node(3), nodeAddress(3));
    const outside = await tcp(1, 2, rig.server, SERVER);
    expect({
      notSelected: notSelected.server.client,
      toPod: toPod.server.client,
      toNode: toNode.server.client,
      outside: outside.server.client,
      intact: [notSelected, toPod, toNode, outside].every((t) => t.client.intact),
    }).toEqual({
      notSelected: podAddress(1, 3),
      toPod: podAddress(1, 2),
      toNode: podAddress(1, 2),
      outside: GATEWAY_ADDRESS,
      intact: true,
    });
  }, 30_000);

  test('NGW-4, NAT-2: a selected pod with an ElasticIP through 1:1 NAT (tc_nat loaded on its node) leaves from its ElasticIP', async () => {
    const caps = `-all,${AGENT_CAPABILITIES.map((c) => `+${c.toLowerCase()}`).join(',')}`;
    const request = JSON.stringify({ ext: 'eth0', pods: ['p4'], pinDir });
    await rig.in(
      rig.node(1),
      'setpriv',
      `--bounding-set=${caps}`,
      '--inh-caps=-all',
      '--',
      TSX,
      NAT_LOADER,
      'attach',
      request,
    );
    natMaps = NatMaps.openPinned(pinDir, resolverIn(rig.node(1)));
    natMaps.sync([{ elasticIP: ELASTIC_IP, address: podAddress(1, 4) }]);
    await rig.answer(ELASTIC_IP, 1);
    const withEip = await tcp(1, 4, rig.server, SERVER);
    const ping = await rig.tool<{ replies: string[] }>(rig.pod(1, 4), 'nat', 'ping', SERVER, '1');
    // The pod is among the gateway's pods; node 1 leaves it out of its steering because it has an ElasticIP.
    expect(rig.desired.get(1)!.nft).not.toContain(podAddress(1, 4));
    expect({ seen: withEip.server.client, intact: withEip.client.intact, ping }).toEqual({
      seen: ELASTIC_IP,
      intact: true,
      ping: { replies: [SERVER] },
    });
  }, 60_000);

  test('NGW-5: with two ports, the third flow to one destination is dropped and counted; the first two keep working', async () => {
    applyAll(2, { min: 41000, max: 41001 });
    const p = String(port++);
    const server = await rig.start<{ peers: Array<{ from: string; port: number }> }>(
      rig.server,
      'ngw',
      'listening',
      'hold-server',
      p,
      '9',
    );
    const before = inNetnsSync(rig.node(2), conntrackStats);
    type Held = { connected: boolean; echoed?: number; error?: string };
    const a = await rig.start<Held>(rig.pod(1, 2), 'ngw', 'connected', 'hold-client', SERVER, p, '3', '5');
    const b = await rig.start<Held>(rig.pod(2, 2), 'ngw', 'connected', 'hold-client', SERVER, p, '3', '5');
    const c = await rig.tool<Held>(rig.pod(3, 2), 'ngw', 'hold-client', SERVER, p, '3', '0');
    const after = inNetnsSync(rig.node(2), conntrackStats);
    const results = { a: await a.result, b: await b.result, c };
    const peers = (await server.result).peers;
    const dropped = after.insertFailed - before.insertFailed;
    console.log(
      `NGW-5: ports 41000-41001: third flow refused, ${dropped} packet(s) counted as conntrack insert_failed on the gateway node`,
    );
    expect(results).toEqual({
      a: { connected: true, echoed: 1000 },
      b: { connected: true, echoed: 1000 },
      c: { connected: false, error: 'TimeoutError' },
    });
    expect(peers.map((x) => x.from)).toEqual([GATEWAY_ADDRESS, GATEWAY_ADDRESS]);
    expect(peers.map((x) => x.port).sort()).toEqual([41000, 41001]);
    expect(dropped).toBeGreaterThanOrEqual(1);
    applyAll(2);
  }, 60_000);

  test('NGW-7: a 1280-MTU hop beyond the gateway: the frag-needed error reaches the pod translated back, a large TCP transfer completes', async () => {
    const t = await tcp(3, 2, rig.server, SERVER, 300000);
    const learned = /\bmtu (\d+)/.exec(await rig.in(rig.pod(3, 2), 'ip', 'route', 'get', SERVER))?.[1];
    console.log(`NGW-7: the pod behind the tunnel learned path MTU ${learned} to the server`);
    expect({ banner: t.client.banner, intact: t.client.intact, received: t.server.received, learned }).toEqual({
      banner: `client=${GATEWAY_ADDRESS}`,
      intact: true,
      received: 300000,
      learned: String(SERVER_MTU),
    });
  }, 60_000);

  test('NGW-4: the gateway accepts through a tunnel only the selected pods of the node at its other end; the rest is dropped and counted', async () => {
    // Node 1 pushes a pod that is not selected into the tunnel by hand, as a tampered node could.
    await rig.in(
      rig.node(1),
      'ip',
      'rule',
      'add',
      'from',
      podAddress(1, 3),
      'lookup',
      String(NGW.tableBase + 1),
      'priority',
      '100',
    );
    try {
      const refused = () => inNetnsSync(rig.node(2), () => nftCounters(NGW.nftTable))['tunnel-refused'] ?? 0;
      const before = refused();
      const notSelected = await rig.tool<{ replies: string[] }>(rig.pod(1, 3), 'nat', 'ping', SERVER, '1');
      const selected = await rig.tool<{ replies: string[] }>(rig.pod(1, 2), 'nat', 'ping', SERVER, '1');
      expect({ notSelected, selected, refused: refused() - before }).toEqual({
        notSelected: { replies: [] },
        selected: { replies: [SERVER] },
        refused: 1,
      });
    } finally {
      await rig.in(rig.node(1), 'ip', 'rule', 'del', 'priority', '100');
    }
  }, 30_000);

  test('NGW-6: the gateway moves to node 3: new flows from pods on every node work through it', async () => {
    const server = await udpServer();
    const start = performance.now();
    applyAll(3);
    const applied = performance.now() - start;
    await rig.answer(GATEWAY_ADDRESS, 3);
    const sent = await udpSend(1, 2, server.port);
    const ms = performance.now() - start;
    const first = { seen: await server.seen(), sent };
    console.log(
      `NGW-6: ${ms.toFixed(0)} ms from the switch to the first answered flow through node 3: the data path of three nodes applied in ${applied.toFixed(0)} ms, the rest is the router's neighbour entry (what ARP does in a cluster) and the UDP client starting`,
    );
    expect(first.sent.answers).toEqual([{ from: SERVER, len: 100, ok: true }]);
    expect(first.seen).toEqual([GATEWAY_ADDRESS]);
    const seen = [];
    for (const k of [1, 2, 3]) seen.push((await tcp(k, 2, rig.server, SERVER)).server.client);
    expect(seen).toEqual(Array(3).fill(GATEWAY_ADDRESS));
    expect({ node3: gatewayFlows(3) >= 4, node2: rig.desired.get(2)!.counters }).toEqual({ node3: true, node2: {} });
  }, 60_000);

  test('NGW-4..NGW-7: a second sync changes nothing; removing the data path leaves no tunnel, rule, route or nftables table on any node', async () => {
    const leftovers = async (k: number) => ({
      links: (await rig.in(rig.node(k), 'ip', '-o', 'link', 'show')).split('\n').filter((l) => /: ngw-/.test(l)).length,
      rules: (await rig.in(rig.node(k), 'ip', 'rule', 'show')).split('\n').filter((l) => /proto 77/.test(l)).length,
      routes: (await rig.in(rig.node(k), 'ip', 'route', 'show', 'table', 'all'))
        .split('\n')
        .filter((l) => /proto 77/.test(l)).length,
      nft: (await rig.in(rig.node(k), 'nft', 'list', 'ruleset')).includes('juneau-ngw'),
    });
    const before = await Promise.all([1, 2, 3].map(leftovers));
    // node 3 is the gateway (tunnels from 1 and 2), nodes 1 and 2 steer to it.
    expect(before).toEqual([
      { links: 1, rules: 1, routes: 1, nft: true },
      { links: 1, rules: 1, routes: 1, nft: true },
      { links: 2, rules: 0, routes: 0, nft: true },
    ]);
    const unchanged = {
      tunnelsAdded: 0,
      tunnelsRemoved: 0,
      rulesAdded: 0,
      rulesRemoved: 0,
      routesSet: 0,
      routesRemoved: 0,
      nftReplaced: false,
    };
    for (const k of [1, 2, 3])
      expect(inNetnsSync(rig.node(k), () => rig.dataplanes.get(k)!.sync(rig.desired.get(k)!))).toEqual(unchanged);
    for (const k of [1, 2, 3]) inNetnsSync(rig.node(k), () => rig.dataplanes.get(k)!.remove());
    expect(await Promise.all([1, 2, 3].map(leftovers))).toEqual(
      Array(3).fill({ links: 0, rules: 0, routes: 0, nft: false }),
    );
    for (const k of [1, 2, 3])
      expect(inNetnsSync(rig.node(k), () => rig.dataplanes.get(k)!.remove())).toEqual(unchanged);
  }, 30_000);
});
