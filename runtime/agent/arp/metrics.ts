/**
 * The agent's Prometheus metrics, on the process's RuntimeMetrics registry. Kernel counters
 * (per-reason packets, per-address requests/replies/conflicts) are read from the maps on every
 * poll and added as increments, so they are real counters.
 */
import type { ArpEntry, ReasonName, XdpMode } from '../bpf';
import { CounterDeltas } from './conflicts';
import { counter, gauge, metricsOf } from '../metric-table';

type AddressCounters = Pick<ArpEntry, 'requests' | 'replies' | 'conflicts'>;

const AGENT_METRICS = {
  tableEntries: gauge('agent_arp_table_entries', [], 'Addresses in external_arp_table on this node (ARP-10).'),
  guardEntries: gauge('agent_guard_entries', [], 'Prefixes and allowed addresses in the guard trie.'),
  refusedAdvertisements: gauge(
    'agent_refused_advertisements',
    [],
    'ARPAdvertisements of this node not answered (EN-12: outside the interface subnet).',
  ),
  xdpMode: gauge('agent_xdp_mode', ['mode'], 'XDP attach mode of the responder: 1 for the mode in use.'),
  packets: counter(
    'agent_xdp_packets_total',
    ['reason'],
    'Packets seen by the XDP program, by reason (bpf/juneau_maps.h enum juneau_reason).',
  ),
  requests: counter(
    'agent_arp_requests_total',
    ['address'],
    'ARP requests for an answered address that reached the program.',
  ),
  replies: counter('agent_arp_replies_total', ['address'], 'ARP replies transmitted for an address.'),
  conflicts: counter(
    'agent_arp_conflicts_total',
    ['address'],
    'ARP packets from another MAC claiming an address this node answers for (RFC 5227 2.4).',
  ),
  conflictReports: counter(
    'agent_arp_conflict_events_total',
    ['address'],
    'Warning Events written for address conflicts.',
  ),
  reconciles: counter(
    'agent_reconcile_total',
    ['result'],
    'Passes that made the maps equal to the desired state, by result.',
  ),
};

export class ArpMetrics extends metricsOf(AGENT_METRICS) {
  private readonly deltas = new CounterDeltas();
  /** Per address, the map's counters at the last poll. */
  private readonly lastEntries = new Map<string, AddressCounters>();

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

  /**
   * Adds what the kernel counted per address since the last poll. A counter is touched only when
   * its value moved (or the address is new, which exports it at its value): at 10,000 addresses,
   * three label-set increments each per poll held the event loop for hundreds of milliseconds
   * on a loaded machine, delaying the map writes of ARPAdvertisement changes (bench/scale).
   */
  observeEntries(entries: ReadonlyMap<string, ArpEntry>): void {
    this.tableEntries.set(entries.size);
    for (const [address, entry] of entries) {
      const last = this.lastEntries.get(address);
      const counters = [
        [this.requests, entry.requests, last?.requests],
        [this.replies, entry.replies, last?.replies],
        [this.conflicts, entry.conflicts, last?.conflicts],
      ] as const;
      // A value that went down restarted from 0 (the entry was deleted and added again).
      for (const [counter, now, before] of counters)
        if (now !== before) counter.inc({ address }, Number(before === undefined || now < before ? now : now - before));
      if (!last || counters.some(([, now, before]) => now !== before))
        this.lastEntries.set(address, { requests: entry.requests, replies: entry.replies, conflicts: entry.conflicts });
    }
    // An address that left the map leaves the metrics too (no unbounded label sets).
    for (const address of this.lastEntries.keys()) {
      if (entries.has(address)) continue;
      this.lastEntries.delete(address);
      for (const counter of [this.requests, this.replies, this.conflicts, this.conflictReports])
        counter.remove({ address });
    }
  }
}
