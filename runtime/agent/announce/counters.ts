// FO-1: per-address announcement counters in the pinned map juneau_announce (created by loading
// bpf/juneau_announce.bpf.o, which has no program; its layout is in runtime/agent/bpf/layout/).
// The agent writes it; `kubectl juneau bpf dump announcements` reads it from the pins, so what a
// node sent is visible where its other maps are, and survives an agent restart.
import * as path from 'node:path';
import { BpfMap } from '../bpf/map';
import { BpfObject, findBuiltObject } from '../bpf/object';
import { loadPinned } from '../bpf/pins';
import {
  ANNOUNCE_MAP_NAME,
  decodeAnnounceValue,
  decodeArpKey,
  encodeAnnounceValue,
  encodeArpKey,
  type AnnounceEntry,
} from '../bpf/layout';

const ZERO: AnnounceEntry = { probes: 0n, announcements: 0n, lastAnnounceNs: 0n, gaveUp: 0n };

/** The pinned juneau_announce map, read and written by address. */
export class AnnounceCounters {
  /** Creates the map pinned at `<pinDir>/juneau_announce`, or adopts the one pinned there. */
  static openOrCreate(pinDir: string, objectPath: string = findBuiltObject('juneau_announce.bpf.o')): AnnounceCounters {
    const obj = BpfObject.open(objectPath);
    try {
      loadPinned(obj, pinDir, () => undefined);
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
