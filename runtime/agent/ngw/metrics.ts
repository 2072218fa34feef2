/**
 * The NATGateway data path's Prometheus metrics (NGW-8), on the NAT child's registry (SEC-4): per
 * gateway this node translates for, its flows and ports in use by protocol and its port range, as
 * read by observe.ts at each poll (a scrape reads the gauges, never conntrack); its new-flow
 * counter and the node's refusals as real counters (increments of the kernel's). A gateway that
 * leaves the node leaves the metrics.
 */
import { CounterDeltas } from '../arp/conflicts';
import { counter, gauge, metricsOf } from '../metric-table';
import { NGW_PROTOCOLS } from './conntrack';
import type { NgwNodeDrops, NgwNodeReport } from './observe';

const NGW_METRICS = {
  flows: gauge(
    'agent_ngw_flows',
    ['namespace', 'name', 'protocol'],
    "Flows (conntrack entries) translated to a NATGateway's address on its gateway node, by protocol (NGW-8).",
  ),
  portsInUse: gauge(
    'agent_ngw_ports_in_use',
    ['namespace', 'name', 'protocol'],
    "Distinct source ports (ICMP: identifiers) of a NATGateway's address its flows hold on its gateway node, by protocol (NGW-5).",
  ),
  rangePorts: gauge(
    'agent_ngw_port_range_ports',
    ['namespace', 'name'],
    "Ports in a NATGateway's range on its gateway node (--ngw-port-range): a flow to one destination needs one of them (NGW-5).",
  ),
  newFlowPackets: counter(
    'agent_ngw_new_flow_packets_total',
    ['namespace', 'name'],
    "Packets that opened a flow through a NATGateway's translation on its gateway node (the nftables counter of its snat rule; a refused flow's retransmissions count again).",
  ),
  refused: counter(
    'agent_ngw_refused_packets_total',
    ['reason'],
    'Packets of new flows the node refused, node-wide (the kernel does not say which gateway): insert_failed (conntrack could not insert the flow: no free port, NGW-5), conntrack_drop (every packet conntrack dropped: a refused flow counts here too, and the table full), tunnel_refused (the guard chain).',
  ),
};

const REFUSED: ReadonlyArray<[keyof NgwNodeDrops, string]> = [
  ['insertFailed', 'insert_failed'],
  ['conntrackDrop', 'conntrack_drop'],
  ['tunnelRefused', 'tunnel_refused'],
];

export class NgwMetrics extends metricsOf(NGW_METRICS) {
  private readonly deltas = new CounterDeltas();
  private shown = new Set<string>();
  private baselined = false;

  /** The node's report (observe.ts readNgwNode), replacing the previous one. */
  observe(report: NgwNodeReport): void {
    // The node's counters: the first reading is the baseline (refusals before the agent are not its to count).
    // Counted only while the node translates for a gateway: elsewhere they are not the gateways' refusals.
    const counting = this.baselined && report.gateways.length > 0;
    for (const [field, reason] of REFUSED) {
      const d = this.deltas.delta(`refused/${reason}`, BigInt(report.drops[field]));
      this.refused.inc({ reason }, counting ? d : 0);
    }
    this.baselined = true;
    const present = new Set<string>();
    for (const { gateway, flows } of report.gateways) {
      const [namespace = '', name = ''] = gateway.name.split('/');
      present.add(gateway.name);
      for (const protocol of NGW_PROTOCOLS) {
        this.flows.set({ namespace, name, protocol }, flows.flows[protocol]);
        this.portsInUse.set({ namespace, name, protocol }, flows.portsInUse[protocol]);
      }
      this.rangePorts.set({ namespace, name }, gateway.portRange.max - gateway.portRange.min + 1);
      this.newFlowPackets.inc(
        { namespace, name },
        this.deltas.delta(`flows/${gateway.name}`, BigInt(gateway.newFlowPackets)),
      );
    }
    for (const key of this.shown)
      if (!present.has(key)) {
        const [namespace = '', name = ''] = key.split('/');
        for (const protocol of NGW_PROTOCOLS) {
          this.flows.remove({ namespace, name, protocol });
          this.portsInUse.remove({ namespace, name, protocol });
        }
        this.rangePorts.remove({ namespace, name });
        this.newFlowPackets.remove({ namespace, name });
      }
    this.deltas.retain((k) => k.startsWith('refused/') || present.has(k.slice(k.indexOf('/') + 1)));
    this.shown = present;
  }
}
