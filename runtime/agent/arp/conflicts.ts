/**
 * RFC 5227 §2.4 conflicts, seen in the per-address counters of external_arp_table: the XDP
 * program counts every ARP packet whose sender address is one we answer for and whose sender MAC
 * is not ours, and keeps the last such MAC. This tracker turns counter increases into reports,
 * one per address per poll. Pure: it is fed map snapshots.
 */
import type { ArpEntry } from '../bpf';

export interface ConflictReport {
  readonly address: string;
  /** Conflicts counted since the last report for this address. */
  readonly count: bigint;
  /** The last foreign sender MAC the datapath saw for it. */
  readonly foreignMac: string | undefined;
  /** The counter's value now. */
  readonly total: bigint;
}

export class ConflictTracker {
  private readonly seen = new Map<string, bigint>();
  private primed = false;

  /**
   * Reports increases since the previous call. The first call only records: an adopted map
   * carries conflicts the previous agent already reported. An address first seen later is a fresh
   * entry (inserted with zero counters), so all of its conflicts are new.
   */
  observe(entries: ReadonlyMap<string, Pick<ArpEntry, 'conflicts' | 'lastConflictMac'>>): ConflictReport[] {
    const reports: ConflictReport[] = [];
    for (const [address, entry] of entries) {
      const before = this.seen.get(address) ?? 0n;
      this.seen.set(address, entry.conflicts);
      // A smaller value means the entry was deleted and re-added in between: all of it is new.
      const count = entry.conflicts >= before ? entry.conflicts - before : entry.conflicts;
      if (this.primed && count > 0n)
        reports.push({ address, count, foreignMac: entry.lastConflictMac, total: entry.conflicts });
    }
    for (const address of [...this.seen.keys()]) if (!entries.has(address)) this.seen.delete(address);
    this.primed = true;
    return reports;
  }
}

/** Turns monotonically growing kernel counters into increments for Prometheus counters. */
export class CounterDeltas {
  private readonly last = new Map<string, bigint>();

  /** The increase of `key` since the previous call; a value that went down restarted from 0. */
  delta(key: string, value: bigint): number {
    const before = this.last.get(key);
    this.last.set(key, value);
    if (before === undefined || value < before) return Number(value);
    return Number(value - before);
  }

  /** Forgets keys not in `keep` (addresses that left the map). */
  retain(keep: (key: string) => boolean): string[] {
    const dropped = [...this.last.keys()].filter((k) => !keep(k));
    for (const key of dropped) this.last.delete(key);
    return dropped;
  }
}
