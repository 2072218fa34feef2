// The NATGateway data path's pure function (runtime/agent/ngw/desired.ts): what each node wants.
// The netns proof of the same state is test/netns/ngw-datapath.test.ts.
import { NGW, desiredNgw, tunnelMac, tunnelName, type NgwGatewayInput } from '../../../runtime/agent/ngw/desired';

const node = (k: number) => `198.51.100.${k}`;
const CLUSTER = ['10.244.0.0/16', '10.96.0.0/12', node(1), node(2), node(3)];
const gateway = (o: Partial<NgwGatewayInput> = {}): NgwGatewayInput => ({
  name: 'team-a/egress',
  address: '198.51.100.60',
  gatewayNodeAddress: node(2),
  portRange: { min: 40000, max: 40999 },
  pods: [
    { address: '10.244.1.2', nodeAddress: node(1) },
    { address: '10.244.2.2', nodeAddress: node(2) },
    { address: '10.244.3.2', nodeAddress: node(3) },
  ],
  ...o,
});

describe('desiredNgw (NGW-4, NGW-5)', () => {
  test('NGW-4: a pod node steers its selected pods to the gateway node: one tunnel, one rule, one route, the steering mark', () => {
    const d = desiredNgw({ nodeAddress: node(1), gateways: [gateway()], clusterRanges: CLUSTER });
    expect({ tunnels: d.tunnels, rules: d.rules, routes: d.routes, counters: d.counters }).toEqual({
      tunnels: [
        {
          name: 'ngw-c6336402',
          local: node(1),
          remote: node(2),
          vni: 3,
          mac: '0a:4e:c6:33:64:01',
          peerMac: '0a:4e:c6:33:64:02',
        },
      ],
      rules: [{ priority: NGW.rulePriority, fwmark: 0x00100000, fwmask: NGW.fwmask, table: NGW.tableBase + 1 }],
      routes: [{ table: NGW.tableBase + 1, device: 'ngw-c6336402' }],
      counters: {},
    });
    expect(d.nft).toMatchSnapshot();
  });

  test('NGW-4, NGW-5: the gateway node translates every selected pod (its own included) to the address and port range, accepting each from its own node’s tunnel', () => {
    const d = desiredNgw({ nodeAddress: node(2), gateways: [gateway()], clusterRanges: CLUSTER });
    expect(d.tunnels.map((t) => [t.name, t.remote, t.vni])).toEqual([
      ['ngw-c6336401', node(1), 3],
      ['ngw-c6336403', node(3), 1],
    ]);
    expect({ rules: d.rules, routes: d.routes, counters: d.counters }).toEqual({
      rules: [],
      routes: [],
      counters: { 'team-a/egress': 'gw1-flows' },
    });
    expect(d.nft).toContain('snat ip to 198.51.100.60:40000-40999');
    expect(d.nft).toMatchSnapshot();
  });

  test('NGW-4: the two ends of a tunnel agree (VNI, each other’s MAC)', () => {
    const a = desiredNgw({ nodeAddress: node(1), gateways: [gateway()], clusterRanges: CLUSTER }).tunnels[0]!;
    const b = desiredNgw({ nodeAddress: node(2), gateways: [gateway()], clusterRanges: CLUSTER }).tunnels[0]!;
    expect({ vni: a.vni, aPeer: a.peerMac, bPeer: b.peerMac }).toEqual({ vni: b.vni, aPeer: b.mac, bPeer: a.mac });
    expect([tunnelName(node(2)), tunnelMac(node(2))]).toEqual([a.name, b.mac]);
  });

  test('NAT-2 wins: a pod of this node with an ElasticIP is not steered; a node with nothing to steer wants nothing', () => {
    const d = desiredNgw({
      nodeAddress: node(1),
      gateways: [gateway()],
      clusterRanges: CLUSTER,
      elasticIPPods: ['10.244.1.2'],
    });
    expect(d).toEqual({ tunnels: [], rules: [], routes: [], nft: '', counters: {} });
  });

  test('NGW-4: a pod selected by two gateways uses the first by name; each gateway gets its own mark and table', () => {
    const second = gateway({ name: 'team-a/second', address: '198.51.100.61', gatewayNodeAddress: node(3) });
    const other = gateway({
      name: 'team-a/other',
      address: '198.51.100.62',
      gatewayNodeAddress: node(3),
      pods: [{ address: '10.244.1.9', nodeAddress: node(1) }],
    });
    const d = desiredNgw({ nodeAddress: node(1), gateways: [second, other, gateway()], clusterRanges: CLUSTER });
    expect(d.rules.map((r) => [r.fwmark, r.table])).toEqual([
      [0x00100000, NGW.tableBase + 1],
      [0x00200000, NGW.tableBase + 2],
    ]);
    expect(d.nft).toContain(
      'ip saddr { 10.244.1.2 } meta mark set meta mark & 0xf00fffff | 0x00100000 comment "team-a/egress"',
    );
    expect(d.nft).toContain(
      'ip saddr { 10.244.1.9 } meta mark set meta mark & 0xf00fffff | 0x00200000 comment "team-a/other"',
    );
    expect(d.nft).not.toContain('team-a/second');
  });

  test('bad input names the field and the value', () => {
    const input = { nodeAddress: node(1), clusterRanges: CLUSTER };
    expect(() => desiredNgw({ ...input, gateways: [gateway({ portRange: { min: 5, max: 4 } })] })).toThrow(
      'gateways[team-a/egress].portRange: 5-4 is not a range of ports within 1-65535',
    );
    expect(() => desiredNgw({ ...input, gateways: [gateway({ address: '198.51.100.600' })] })).toThrow(
      "gateways[team-a/egress].address: '198.51.100.600' is not an IPv4 address",
    );
    expect(() => desiredNgw({ ...input, clusterRanges: ['10.0.0.0/33'], gateways: [] })).toThrow(
      "clusterRanges[0]: '10.0.0.0/33' is not an IPv4 address or CIDR",
    );
    const clash = gateway({
      gatewayNodeAddress: node(1),
      pods: [
        { address: '10.244.5.2', nodeAddress: '10.1.2.3' },
        { address: '10.244.6.2', nodeAddress: '11.1.2.3' },
      ],
    });
    expect(() => desiredNgw({ ...input, gateways: [clash] })).toThrow('tunnels to 10.1.2.3 and 11.1.2.3: the same VNI');
  });
});
