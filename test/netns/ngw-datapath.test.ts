// The NATGateway data path (runtime/agent/ngw/: desired.ts, sync.ts) on three "node" namespaces
// with pods, against a router namespace as the outside (test/netns/ngw-rig.ts). The agent's own
// code computes and applies each node's state (netlink and libnftables through koffi, in the
// node's namespace); real packets prove it: servers beyond the router print the source they see.
import * as path from 'node:path';
import { NatMaps } from '../../runtime/agent/bpf/nat';
import { removePins } from '../../runtime/agent/bpf/pins';
import { conntrackStats, ngwFlowCounters } from '../../runtime/agent/ngw/sync';
import type { NgwGatewayInput } from '../../runtime/agent/ngw/desired';
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
  const udp = async (k: number, j: number) => {
    const p = String(port++);
    const server = await rig.start<{ seen: Array<{ from: string }> }>(
      rig.server,
      'nat',
      'listening',
      'udp-server',
      p,
      '1',
    );
    const sent = await rig.tool<UdpAnswers>(rig.pod(k, j), 'nat', 'udp-send', SERVER, p, '100', '1', 'nodf');
    return { sent, seen: (await server.result).seen.map((s) => s.from) };
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
});
