// FO-1: the per-address announcement counters juneau_announce (bpf/juneau_announce.bpf.c, which
// has no program; struct in bpf/juneau_maps.h, section "FO-1 announcements"). Keyed by
// struct juneau_arp_key, like external_arp_table (encodeArpKey).
import { cStruct, fieldOffset as at } from './common';

export const ANNOUNCE_MAP_NAME = 'juneau_announce';
export const ANNOUNCE_LIMITS = { JUNEAU_ANNOUNCE_MAX: 65536 } as const;

export const ANNOUNCE_VALUE = cStruct('juneau_announce_value', [
  ['probes', 8],
  ['announcements', 8],
  ['last_announce_ns', 8],
  ['gave_up', 8],
]);

export interface AnnounceEntry {
  readonly probes: bigint;
  readonly announcements: bigint;
  /** CLOCK_MONOTONIC ns of the last announcement; 0n when none. */
  readonly lastAnnounceNs: bigint;
  readonly gaveUp: bigint;
}

export function encodeAnnounceValue(e: AnnounceEntry): Buffer {
  const b = Buffer.alloc(ANNOUNCE_VALUE.size);
  b.writeBigUInt64LE(e.probes, at(ANNOUNCE_VALUE, 'probes'));
  b.writeBigUInt64LE(e.announcements, at(ANNOUNCE_VALUE, 'announcements'));
  b.writeBigUInt64LE(e.lastAnnounceNs, at(ANNOUNCE_VALUE, 'last_announce_ns'));
  b.writeBigUInt64LE(e.gaveUp, at(ANNOUNCE_VALUE, 'gave_up'));
  return b;
}

export function decodeAnnounceValue(b: Buffer): AnnounceEntry {
  return {
    probes: b.readBigUInt64LE(at(ANNOUNCE_VALUE, 'probes')),
    announcements: b.readBigUInt64LE(at(ANNOUNCE_VALUE, 'announcements')),
    lastAnnounceNs: b.readBigUInt64LE(at(ANNOUNCE_VALUE, 'last_announce_ns')),
    gaveUp: b.readBigUInt64LE(at(ANNOUNCE_VALUE, 'gave_up')),
  };
}
