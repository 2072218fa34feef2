/**
 * The NAT data plane's Prometheus metrics (NAT-5), beside ArpMetrics on the same registry: per
 * ElasticIP packets and bytes in each direction, and the NAT programs' exit reasons. Read from the
 * maps on every poll and added as increments, so they are real counters; an ElasticIP that leaves
 * the maps leaves the metrics.
 */
import type { NatReasonName } from '../bpf/layout';
import type { NatEntry } from '../bpf/nat';
import type { PodDeviceReport } from './pod-devices';
import { CounterDeltas } from '../arp/conflicts';
import { counter, gauge, metricsOf } from '../metric-table';

const NAT_METRICS = {
  bindings: gauge(
    'agent_nat_bindings',
    ['kind'],
    "ElasticIPs this node carries, by kind: nat (1:1 NAT, NAT-1), direct (DIR-1) or remote (to the pod's node, EN-9).",
  ),
  packets: counter(
    'agent_nat_packets_total',
    ['elastic_ip', 'direction'],
    'Packets of an ElasticIP through the NAT programs, by direction (in, out).',
  ),
  bytes: counter(
    'agent_nat_bytes_total',
    ['elastic_ip', 'direction'],
    'Bytes (as the TC hook saw them, L2 included) of an ElasticIP, by direction.',
  ),
  podDevices: gauge(
    'agent_nat_pod_devices',
    ['device', 'mode'],
    "Devices the pod-side NAT hook (tc_nat_pod) is on, with the number of this node's Running pods routed through each; mode detected (from the pods' routes) or fixed (natPodInterfaces).",
  ),
  podsUndetected: gauge(
    'agent_nat_pods_undetected',
    [],
    "This node's Running pods whose device the pod-side NAT hook is not on (routed through a gateway, no route, or the ingress interface; or the attach failed): their ElasticIP traffic meets the node's netfilter.",
  ),
  reasons: counter(
    'agent_nat_program_packets_total',
    ['reason'],
    'Packets seen by the NAT programs, by exit reason (enum juneau_nat_reason).',
  ),
};

export class NatMetrics extends metricsOf(NAT_METRICS) {
  private readonly deltas = new CounterDeltas();

  /** The pod-side hook's devices, replaced whole at each report. */
  observePodDevices(report: PodDeviceReport): void {
    this.podDevices.reset();
    for (const d of report.devices) this.podDevices.set({ device: d.name, mode: report.mode }, d.pods);
    this.podsUndetected.set(report.undetected.length + report.failed.length);
  }

  observe(entries: readonly NatEntry[], stats: Readonly<Record<NatReasonName, bigint>>): void {
    for (const [reason, value] of Object.entries(stats)) {
      this.reasons.inc(
        { reason: reason.replace(/^JUNEAU_NAT_/, '').toLowerCase() },
        this.deltas.delta(`reason/${reason}`, value),
      );
    }
    const present = new Set<string>();
    for (const e of entries) {
      present.add(e.elasticIP);
      const at = (direction: string) => ({ elastic_ip: e.elasticIP, direction });
      this.packets.inc(at('in'), this.deltas.delta(`in_packets/${e.elasticIP}`, e.inPackets));
      this.packets.inc(at('out'), this.deltas.delta(`out_packets/${e.elasticIP}`, e.outPackets));
      this.bytes.inc(at('in'), this.deltas.delta(`in_bytes/${e.elasticIP}`, e.inBytes));
      this.bytes.inc(at('out'), this.deltas.delta(`out_bytes/${e.elasticIP}`, e.outBytes));
    }
    const dropped = this.deltas.retain(
      (key) => key.startsWith('reason/') || present.has(key.slice(key.indexOf('/') + 1)),
    );
    for (const elasticIP of new Set(dropped.map((key) => key.slice(key.indexOf('/') + 1)))) {
      for (const direction of ['in', 'out']) {
        this.packets.remove({ elastic_ip: elasticIP, direction });
        this.bytes.remove({ elastic_ip: elasticIP, direction });
      }
    }
  }
}
