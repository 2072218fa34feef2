/** `kubectl juneau bpf dump nat` and `bpf stats nat`: the ElasticIP NAT maps (NAT-5), as pinned. */
import type { NatEntry } from '../agent/bpf/nat';
import type { NatReasonName } from '../agent/bpf/layout';
import { compareAddresses } from '../agent/arp/desired';
import { table, type StatsRow } from './format';

export interface NatRow {
  readonly elasticIP: string;
  /** The NIC address it is translated to (nat) or forwarded towards (direct). */
  readonly address: string;
  readonly kind: NatEntry['kind'];
  readonly inPackets: number;
  readonly inBytes: number;
  readonly outPackets: number;
  readonly outBytes: number;
}

export function natRows(entries: readonly NatEntry[]): NatRow[] {
  return [...entries]
    .sort((a, b) => compareAddresses(a.elasticIP, b.elasticIP))
    .map((e) => ({
      elasticIP: e.elasticIP,
      address: e.address,
      kind: e.kind,
      inPackets: Number(e.inPackets),
      inBytes: Number(e.inBytes),
      outPackets: Number(e.outPackets),
      outBytes: Number(e.outBytes),
    }));
}

export function renderNat(rows: readonly NatRow[]): string {
  return table(
    ['ELASTIC IP', 'ADDRESS', 'KIND', 'IN PACKETS', 'IN BYTES', 'OUT PACKETS', 'OUT BYTES'],
    rows.map((r) => [
      r.elasticIP,
      r.address,
      r.kind,
      String(r.inPackets),
      String(r.inBytes),
      String(r.outPackets),
      String(r.outBytes),
    ]),
  );
}

export function natStatsRows(stats: Readonly<Record<NatReasonName, bigint>>): StatsRow[] {
  return Object.entries(stats).map(([reason, packets]) => ({
    reason: reason.replace(/^JUNEAU_NAT_/, '').toLowerCase(),
    packets: Number(packets),
  }));
}
