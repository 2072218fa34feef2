/**
 * The agent's Prometheus metrics, on the process's RuntimeMetrics registry. Kernel counters
 * (per-reason packets, per-address requests/replies/conflicts) are read from the maps on every
 * poll and added as increments, so they are real counters.
 */
import type { Counter, Gauge } from 'prom-client';
import type { RuntimeMetrics } from '../kube/metrics';
import type { ArpEntry, ReasonName, XdpMode } from './bpf';
import { CounterDeltas } from './conflicts';

export class AgentMetrics {
  readonly tableEntries: Gauge;
  readonly guardEntries: Gauge;
  readonly refusedAdvertisements: Gauge;
  readonly xdpMode: Gauge<'mode'>;
  readonly packets: Counter<'reason'>;
  readonly requests: Counter<'address'>;
  readonly replies: Counter<'address'>;
  readonly conflicts: Counter<'address'>;
  readonly conflictReports: Counter<'address'>;
  readonly reconciles: Counter<'result'>;
  private readonly deltas = new CounterDeltas();

  constructor(metrics: RuntimeMetrics) {
    this.tableEntries = metrics.registerGauge(
      'agent_arp_table_entries',
      'Addresses in external_arp_table on this node (ARP-10).',
    );
    this.guardEntries = metrics.registerGauge(
      'agent_guard_entries',
      'Prefixes and allowed addresses in the guard trie.',
    );
    this.refusedAdvertisements = metrics.registerGauge(
      'agent_refused_advertisements',
      'ARPAdvertisements of this node not answered (EN-12: outside the interface subnet).',
    );
    this.xdpMode = metrics.registerGauge('agent_xdp_mode', 'XDP attach mode of the responder: 1 for the mode in use.', [
      'mode',
    ]);
    this.packets = metrics.registerCounter(
      'agent_xdp_packets_total',
      'Packets seen by the XDP program, by reason (bpf/juneau_arp.h enum juneau_reason).',
      ['reason'],
    );
    this.requests = metrics.registerCounter(
      'agent_arp_requests_total',
      'ARP requests for an answered address that reached the program.',
      ['address'],
    );
    this.replies = metrics.registerCounter('agent_arp_replies_total', 'ARP replies transmitted for an address.', [
      'address',
    ]);
    this.conflicts = metrics.registerCounter(
      'agent_arp_conflicts_total',
      'ARP packets from another MAC claiming an address this node answers for (RFC 5227 2.4).',
      ['address'],
    );
    this.conflictReports = metrics.registerCounter(
      'agent_arp_conflict_events_total',
      'Warning Events written for address conflicts.',
      ['address'],
    );
    this.reconciles = metrics.registerCounter(
      'agent_reconcile_total',
      'Passes that made the maps equal to the desired state, by result.',
      ['result'],
    );
  }

  setMode(mode: XdpMode): void {
    for (const m of ['native', 'generic'] as const) this.xdpMode.set({ mode: m }, m === mode ? 1 : 0);
  }

  /** Adds what the kernel counted since the last poll. */
  observeStats(stats: Readonly<Record<ReasonName, bigint>>): void {
    for (const [reason, value] of Object.entries(stats)) {
      const reasonLabel = reason.replace(/^JUNEAU_/, '').toLowerCase();
      this.packets.inc({ reason: reasonLabel }, this.deltas.delta(`reason/${reason}`, value));
    }
  }

  observeEntries(entries: ReadonlyMap<string, ArpEntry>): void {
    this.tableEntries.set(entries.size);
    for (const [address, entry] of entries) {
      this.requests.inc({ address }, this.deltas.delta(`requests/${address}`, entry.requests));
      this.replies.inc({ address }, this.deltas.delta(`replies/${address}`, entry.replies));
      this.conflicts.inc({ address }, this.deltas.delta(`conflicts/${address}`, entry.conflicts));
    }
    // An address that left the map leaves the metrics too (no unbounded label sets).
    const dropped = this.deltas.retain(
      (key) => key.startsWith('reason/') || entries.has(key.slice(key.indexOf('/') + 1)),
    );
    for (const address of new Set(dropped.map((key) => key.slice(key.indexOf('/') + 1)))) {
      for (const counter of [this.requests, this.replies, this.conflicts, this.conflictReports])
        counter.remove({ address });
    }
  }
}
