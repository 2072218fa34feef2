/** `kubectl juneau bpf dump announcements`: FO-1's per-address counters (the pinned map juneau_announce). */
import type { AnnounceEntry } from '../agent/bpf/layout';
import { agoCell, rowsByAddress, table } from './format';

export interface AnnounceRow {
  readonly address: string;
  readonly probes: number;
  readonly announcements: number;
  readonly gaveUp: number;
  /** Seconds since the last announcement; null when none was sent. */
  readonly lastAnnouncementSecondsAgo: number | null;
}

/** `nowNs`: CLOCK_MONOTONIC, the clock the agent stamps announcements with. */
export function announceRows(entries: ReadonlyMap<string, AnnounceEntry>, nowNs: bigint): AnnounceRow[] {
  return rowsByAddress(entries, (address, e) => ({
    address,
    probes: Number(e.probes),
    announcements: Number(e.announcements),
    gaveUp: Number(e.gaveUp),
    lastAnnouncementSecondsAgo: e.lastAnnounceNs === 0n ? null : Math.max(0, Number(nowNs - e.lastAnnounceNs) / 1e9),
  }));
}

export function renderAnnounce(rows: readonly AnnounceRow[]): string {
  return table(
    ['ADDRESS', 'PROBES', 'ANNOUNCEMENTS', 'GAVE UP', 'LAST ANNOUNCEMENT'],
    rows.map((r) => [
      r.address,
      String(r.probes),
      String(r.announcements),
      String(r.gaveUp),
      agoCell(r.lastAnnouncementSecondsAgo),
    ]),
  );
}
