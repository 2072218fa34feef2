// Pins a map the way an older agent's libbpf made it, for the upgrade tests: bpftool creates it
// empty with the older type and sizes at the path the current agent adopts, after the test removed
// the current pin. The tests then do not depend on an old build.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

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
