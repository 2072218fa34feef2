// Pinned maps for the upgrade tests (test/netns/*-upgrade.test.ts): each opens what it reads
// afresh and closes it, because an upgrade replaces pins under any map held open.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { MAP_NAMES } from '../../runtime/agent/bpf/layout';
import { BpfMap } from '../../runtime/agent/bpf/map';

/** Hands `opened` to `use`, then closes it. */
function closing<M extends { close(): void }, T>(opened: M, use: (m: M) => T): T {
  try {
    return use(opened);
  } finally {
    opened.close();
  }
}

/** Opens the map pinned in `dir` under its `name`, hands it to `use`, closes it. */
export const withPinnedMap = <T>(dir: string, name: string, use: (map: BpfMap) => T): T =>
  closing(BpfMap.openPinned(path.join(dir, name)), use);

/** Opens the responder's maps pinned in `dir`, hands them to `use`, closes them. */
export const withArpMaps = <T>(dir: string, use: (maps: ArpMaps) => T): T => closing(ArpMaps.openPinned(dir), use);

/** The responder's maps an upgrade adopts, sorted: all but the `replaced` ones. */
export const responderMapsBut = (...replaced: string[]): string[] =>
  Object.values(MAP_NAMES)
    .filter((name) => !replaced.includes(name))
    .sort();

/** How libbpf made a map for an older agent: what `bpftool map create` needs to make it again. */
export interface OlderMap {
  readonly name: string;
  readonly type: string;
  readonly key: number;
  readonly value: number;
  readonly entries: number;
  readonly flags?: number;
}

/** Replaces the map pinned in `dir` under `older.name` by one made as an older agent's libbpf made
 * it (bpftool), so an upgrade test does not depend on an old build. */
export function pinOlderMap(dir: string, older: OlderMap): void {
  const pin = path.join(dir, older.name);
  fs.unlinkSync(pin);
  const flags = older.flags === undefined ? [] : ['flags', String(older.flags)];
  execFileSync('bpftool', [
    'map',
    'create',
    pin,
    'type',
    older.type,
    'key',
    String(older.key),
    'value',
    String(older.value),
    'entries',
    String(older.entries),
    'name',
    older.name,
    ...flags,
  ]);
}
