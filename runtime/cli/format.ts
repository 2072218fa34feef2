/** Pure renderings of the pinned maps for `kubectl juneau bpf ...`: aligned tables and JSON rows. */
import type { ArpEntry, GuardListing, ReasonName } from '../agent/bpf';
import { compareAddresses } from '../agent/arp/desired';

export interface ArpTableRow {
  readonly address: string;
  readonly requests: number;
  readonly replies: number;
  readonly conflicts: number;
  readonly lastConflictMac: string | null;
  /** Seconds since the last conflict (CLOCK_MONOTONIC, the clock the datapath stamps); null if none. */
  readonly lastConflictSecondsAgo: number | null;
}

/** One row a per-address map entry, in address order (numerically, not as strings). */
export function rowsByAddress<E, R>(entries: ReadonlyMap<string, E>, row: (address: string, e: E) => R): R[] {
  return [...entries].sort(([a], [b]) => compareAddresses(a, b)).map(([address, e]) => row(address, e));
}

/** A table cell for a time in the past: `3s ago`, or `-` when it never happened. */
export const agoCell = (secondsAgo: number | null): string =>
  secondsAgo === null ? '-' : `${formatAgo(secondsAgo)} ago`;

/** external_arp_table as rows sorted by address; `nowNs` is CLOCK_MONOTONIC now. */
export function arpTableRows(entries: ReadonlyMap<string, ArpEntry>, nowNs: bigint): ArpTableRow[] {
  return rowsByAddress(entries, (address, e) => ({
    address,
    requests: Number(e.requests),
    replies: Number(e.replies),
    conflicts: Number(e.conflicts),
    lastConflictMac: e.lastConflictMac ?? null,
    lastConflictSecondsAgo:
      e.conflicts > 0n && e.lastConflictNs > 0n ? Number((nowNs - e.lastConflictNs) / 1_000_000n) / 1000 : null,
  }));
}

export function renderArpTable(rows: readonly ArpTableRow[]): string {
  return table(
    ['ADDRESS', 'REQUESTS', 'REPLIES', 'CONFLICTS', 'LAST CONFLICT MAC', 'LAST CONFLICT'],
    rows.map((r) => [
      r.address,
      String(r.requests),
      String(r.replies),
      String(r.conflicts),
      r.lastConflictMac ?? '-',
      agoCell(r.lastConflictSecondsAgo),
    ]),
  );
}

export interface GuardRow {
  readonly prefix: string;
  readonly action: 'drop' | 'allow';
  readonly hits: number;
}

export function guardRows(entries: readonly GuardListing[]): GuardRow[] {
  return [...entries]
    .sort((a, b) => compareAddresses(a.address, b.address) || a.prefixLength - b.prefixLength)
    .map((e) => ({ prefix: `${e.address}/${e.prefixLength}`, action: e.action, hits: Number(e.hits) }));
}

export function renderGuard(rows: readonly GuardRow[]): string {
  return table(
    ['PREFIX', 'ACTION', 'HITS'],
    rows.map((r) => [r.prefix, r.action, String(r.hits)]),
  );
}

export interface StatsRow {
  /** enum juneau_reason without the JUNEAU_ prefix, lower case: pass_unmapped, tx_reply, ... */
  readonly reason: string;
  readonly packets: number;
}

export function statsRows(stats: Readonly<Record<ReasonName, bigint>>): StatsRow[] {
  return Object.entries(stats).map(([reason, packets]) => ({
    reason: reason.replace(/^JUNEAU_/, '').toLowerCase(),
    packets: Number(packets),
  }));
}

export function renderStats(rows: readonly StatsRow[]): string {
  return table(
    ['REASON', 'PACKETS'],
    rows.map((r) => [r.reason, String(r.packets)]),
  );
}

/** kubectl-style columns: left-aligned, three spaces apart, header always printed. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('   ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

export function formatAgo(seconds: number): string {
  if (seconds < 120) return `${Math.floor(seconds)}s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}
