// For the tests that look at the pins across an upgrade. pinOlderMap pins a map the way an older
// agent's libbpf made it: bpftool creates it
// empty with the older type and sizes at the path the current agent adopts, after the test removed
// the current pin. The tests then do not depend on an old build.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { BpfMap } from '../../runtime/agent/bpf/map';

export interface OlderMap {
  /** bpftool's type name: hash, percpu_array, ... */
  readonly type: string;
  readonly keySize: number;
  readonly valueSize: number;
  readonly entries: number;
}

/** Replaces the pin `<pinDir>/<name>` with an empty map of the older shape. */
export function pinOlderMap(pinDir: string, name: string, older: OlderMap): void {
  const pin = path.join(pinDir, name);
  fs.unlinkSync(pin);
  execFileSync('bpftool', [
    'map',
    'create',
    pin,
    'type',
    older.type,
    'key',
    String(older.keySize),
    'value',
    String(older.valueSize),
    'entries',
    String(older.entries),
    'name',
    name,
  ]);
}

/** `use` on the map pinned at `pin`, opened for the call and closed after. */
export function withPinnedMap<T>(pin: string, use: (map: BpfMap) => T): T {
  const map = BpfMap.openPinned(pin);
  try {
    return use(map);
  } finally {
    map.close();
  }
}

/** `use` on the responder's maps pinned in `pinDir`, opened afresh (rig.maps() keeps the maps it
 * opened first, and an upgrade replaces pins) and closed after. */
export function withPinnedMaps<T>(pinDir: string, use: (maps: ArpMaps) => T): T {
  const maps = ArpMaps.openPinned(pinDir);
  try {
    return use(maps);
  } finally {
    maps.close();
  }
}
