// NGW-8: what the gateway node's table says it translates (runtime/agent/ngw/observe.ts), from the
// listing libnftables gave for desiredNgw's own script (ngw-nft-listing.json: two gateways
// translated on this node, one of one port, a third only steered from it), and the metrics made
// of the node's report (runtime/agent/ngw/metrics.ts).
import { RuntimeMetrics } from '../../../runtime/kube/metrics';
import { NgwMetrics } from '../../../runtime/agent/ngw/metrics';
import { translatedGateways, type NgwNodeReport } from '../../../runtime/agent/ngw/observe';
import listing from './ngw-nft-listing.json';

/** The listing with counter packets set, as the kernel would count them. */
function withCounters(packets: Record<string, number>): string {
  const copy = JSON.parse(JSON.stringify(listing)) as {
    nftables: Array<{ counter?: { name: string; packets: number } }>;
  };
  for (const o of copy.nftables)
    if (o.counter && o.counter.name in packets) o.counter.packets = packets[o.counter.name]!;
  return JSON.stringify(copy);
}

test('NGW-8: the gateways translated here, by the snat rule named after each: address, range, its counter; a gateway only steered from here is none', () => {
  const { gateways, counters } = translatedGateways(
    withCounters({ 'gw1-flows': 12, 'gw2-flows': 3, 'tunnel-refused': 2 }),
  );
  expect(gateways).toEqual([
    { name: 'team-a/egress', address: '198.51.100.60', portRange: { min: 40000, max: 40003 }, newFlowPackets: 12 },
    { name: 'team-b/one-port', address: '198.51.100.61', portRange: { min: 5000, max: 5000 }, newFlowPackets: 3 },
  ]);
  expect(counters['tunnel-refused']).toBe(2);
});

test('a table without NATGateway rules translates nothing', () => {
  expect(translatedGateways('{"nftables":[{"metainfo":{}}]}').gateways).toEqual([]);
});

describe('NgwMetrics', () => {
  const report = (o: { flows?: number; refused?: number; gateways?: boolean; newFlows?: number }): NgwNodeReport => ({
    table: true,
    gateways:
      o.gateways === false
        ? []
        : [
            {
              gateway: {
                name: 'team-a/egress',
                address: '198.51.100.60',
                portRange: { min: 40000, max: 40003 },
                newFlowPackets: o.newFlows ?? 0,
              },
              flows: {
                flows: { tcp: o.flows ?? 0, udp: 1, icmp: 0 },
                portsInUse: { tcp: Math.min(o.flows ?? 0, 4), udp: 1, icmp: 0 },
                listed: [],
              },
            },
          ],
    drops: { insertFailed: o.refused ?? 0, conntrackDrop: o.refused ?? 0, tunnelRefused: 0 },
  });
  const samples = async (metrics: RuntimeMetrics) =>
    (await metrics.exposition())
      .split('\n')
      .filter((l) => l.startsWith('juneau_agent_ngw_') && !l.startsWith('#'))
      .sort();

  test('NGW-8: flows, ports in use and the range per gateway; the node refusals counted from the first reading on, while it translates', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    const ngw = new NgwMetrics(metrics);
    ngw.observe(report({ flows: 6, refused: 100, newFlows: 6 })); // refusals before the agent: the baseline
    ngw.observe(report({ flows: 4, refused: 103, newFlows: 9 }));
    expect(await samples(metrics)).toEqual([
      'juneau_agent_ngw_flows{namespace="team-a",name="egress",protocol="icmp"} 0',
      'juneau_agent_ngw_flows{namespace="team-a",name="egress",protocol="tcp"} 4',
      'juneau_agent_ngw_flows{namespace="team-a",name="egress",protocol="udp"} 1',
      'juneau_agent_ngw_new_flow_packets_total{namespace="team-a",name="egress"} 9',
      'juneau_agent_ngw_port_range_ports{namespace="team-a",name="egress"} 4',
      'juneau_agent_ngw_ports_in_use{namespace="team-a",name="egress",protocol="icmp"} 0',
      'juneau_agent_ngw_ports_in_use{namespace="team-a",name="egress",protocol="tcp"} 4',
      'juneau_agent_ngw_ports_in_use{namespace="team-a",name="egress",protocol="udp"} 1',
      'juneau_agent_ngw_refused_packets_total{reason="conntrack_drop"} 3',
      'juneau_agent_ngw_refused_packets_total{reason="insert_failed"} 3',
      'juneau_agent_ngw_refused_packets_total{reason="tunnel_refused"} 0',
    ]);
  });

  test('a gateway that leaves the node leaves the metrics; refusals while it translates nothing are not counted', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    const ngw = new NgwMetrics(metrics);
    ngw.observe(report({ flows: 2, refused: 0 }));
    ngw.observe(report({ gateways: false, refused: 5 }));
    expect(await samples(metrics)).toEqual([
      'juneau_agent_ngw_refused_packets_total{reason="conntrack_drop"} 0',
      'juneau_agent_ngw_refused_packets_total{reason="insert_failed"} 0',
      'juneau_agent_ngw_refused_packets_total{reason="tunnel_refused"} 0',
    ]);
  });
});
