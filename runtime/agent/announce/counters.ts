// FO-1: per-address announcement counters in the pinned map juneau_announce (bpf/juneau_maps.h,
// section "FO-1 announcements"; created by loading bpf/juneau_announce.bpf.o, which has no
// program). The agent writes it; `kubectl juneau bpf dump announcements` reads it from the pins,
// so what a node sent is visible where its other maps are, and survives an agent restart.
// This file is the TS mirror of that section (test/unit/bpf-layout-announce.test.ts checks it).
import { BpfMap } from '../bpf/map';
import { BpfObject } from '../bpf/object';
import { cStruct, encodeArpKey, decodeArpKey } from '../bpf/layout';
import { findBuiltObject } from '../bpf/responder';
import * as path from 'node:path';

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

const at = (field: string) => ANNOUNCE_VALUE.fields[field].offset;

export function encodeAnnounceValue(e: AnnounceEntry): Buffer {
  const b = Buffer.alloc(ANNOUNCE_VALUE.size);
  b.writeBigUInt64LE(e.probes, at('probes'));
  b.writeBigUInt64LE(e.announcements, at('announcements'));
  b.writeBigUInt64LE(e.lastAnnounceNs, at('last_announce_ns'));
  b.writeBigUInt64LE(e.gaveUp, at('gave_up'));
  return b;
}

export function decodeAnnounceValue(b: Buffer): AnnounceEntry {
  return {
    probes: b.readBigUInt64LE(at('probes')),
    announcements: b.readBigUInt64LE(at('announcements')),
    lastAnnounceNs: b.readBigUInt64LE(at('last_announce_ns')),
    gaveUp: b.readBigUInt64LE(at('gave_up')),
  };
}

const ZERO: AnnounceEntry = { probes: 0n, announcements: 0n, lastAnnounceNs: 0n, gaveUp: 0n };

/** The pinned juneau_announce map, read and written by address. */
export class AnnounceCounters {
  /** Creates the map pinned at `<pinDir>/juneau_announce`, or adopts the one pinned there. */
  static openOrCreate(pinDir: string, objectPath: string = findBuiltObject('juneau_announce.bpf.o')): AnnounceCounters {
    const obj = BpfObject.open(objectPath);
    try {
      obj.setPinDir(pinDir);
      obj.load();
    } finally {
      obj.close(); // the pin keeps the map
    }
    return AnnounceCounters.openPinned(pinDir);
  }

  /** Opens the map already pinned (the CLI's dump); throws when it is not there. */
  static openPinned(pinDir: string): AnnounceCounters {
    return new AnnounceCounters(BpfMap.openPinned(path.join(pinDir, ANNOUNCE_MAP_NAME)));
  }

  private constructor(private readonly map: BpfMap) {}

  /** Adds to `address`'s counters (read, add, write: only this agent writes the map). */
  add(
    address: string,
    delta: { probes?: number; announcements?: number; gaveUp?: number; announcedAtNs?: bigint },
  ): void {
    const key = encodeArpKey(address);
    const old = this.map.lookup(key);
    const e = old ? decodeAnnounceValue(old) : ZERO;
    this.map.update(
      key,
      encodeAnnounceValue({
        probes: e.probes + BigInt(delta.probes ?? 0),
        announcements: e.announcements + BigInt(delta.announcements ?? 0),
        lastAnnounceNs: delta.announcedAtNs ?? e.lastAnnounceNs,
        gaveUp: e.gaveUp + BigInt(delta.gaveUp ?? 0),
      }),
    );
  }

  /** The address left this node: its counters go with it (as its metrics series do). */
  forget(address: string): void {
    this.map.delete(encodeArpKey(address));
  }

  entries(): Map<string, AnnounceEntry> {
    return new Map(this.map.entries().map(([k, v]) => [decodeArpKey(k), decodeAnnounceValue(v)]));
  }

  close(): void {
    this.map.close();
  }
}
