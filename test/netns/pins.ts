// Pinned maps for the pin-policy tests (test/netns/*-pins.test.ts): each opens what it reads
// afresh and closes it, because an attach replaces pins under any map held open.
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

/** The responder's maps an attach adopts, sorted: all but the `replaced` ones. */
export const responderMapsBut = (...replaced: string[]): string[] =>
  Object.values(MAP_NAMES)
    .filter((name) => !replaced.includes(name))
    .sort();

/** A map's shape: what `bpftool map create` needs to make it. */
export interface MapShape {
  readonly name: string;
  readonly type: string;
  readonly key: number;
  readonly value: number;
  readonly entries: number;
  readonly flags?: number;
}

/** Replaces the map pinned in `dir` under `shape.name` by one of the shape `shape` (bpftool), as
 * another layout would have pinned it. */
export function pinMapOfShape(dir: string, shape: MapShape): void {
  const pin = path.join(dir, shape.name);
  fs.unlinkSync(pin);
  const flags = shape.flags === undefined ? [] : ['flags', String(shape.flags)];
  execFileSync('bpftool', [
    'map',
    'create',
    pin,
    'type',
    shape.type,
    'key',
    String(shape.key),
    'value',
    String(shape.value),
    'entries',
    String(shape.entries),
    'name',
    shape.name,
    ...flags,
  ]);
}
