// FO-1: the "FO-1 announcements" section of bpf/juneau_arp.h and its mirror in
// runtime/agent/announce/counters.ts agree, read from the BTF of build/bpf/juneau_announce.bpf.o
// (the map's only object; no program reads it, the agent writes it and the CLI dumps it).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ANNOUNCE_LIMITS, ANNOUNCE_MAP_NAME, ANNOUNCE_VALUE, decodeAnnounceValue, encodeAnnounceValue } from '../../runtime/agent/announce/counters';

const REPO = path.resolve(__dirname, '../..');
const OBJECT = path.join(REPO, 'build/bpf/juneau_announce.bpf.o');

interface BtfType {
  id: number;
  kind: string;
  name: string;
  size?: number;
  type_id?: number;
  nr_elems?: number;
  members?: Array<{ name: string; type_id: number; bits_offset: number }>;
}

let types: Map<number, BtfType>;
const byName = (kind: string, name: string): BtfType => {
  const found = [...types.values()].find((t) => t.kind === kind && t.name === name);
  if (!found) throw new Error(`${kind} ${name} not in the BTF of ${OBJECT}`);
  return found;
};
const resolve = (id: number): BtfType => {
  const t = types.get(id)!;
  return ['TYPEDEF', 'CONST', 'VOLATILE'].includes(t.kind) ? resolve(t.type_id!) : t;
};
const sizeOf = (id: number): number => {
  const t = types.get(id)!;
  if (t.kind === 'ARRAY') return t.nr_elems! * sizeOf(t.type_id!);
  return t.size ?? sizeOf(t.type_id!);
};
const mapMember = (member: string): BtfType => {
  const def = resolve(byName('VAR', ANNOUNCE_MAP_NAME).type_id!);
  const m = def.members!.find((x) => x.name === member)!;
  return resolve(types.get(m.type_id)!.type_id!);
};

describe('FO-1 announcement counters layout: C (BTF of build/bpf/juneau_announce.bpf.o) equals runtime/agent/announce/counters.ts', () => {
  beforeAll(() => {
    execFileSync('bash', [path.join(REPO, 'bpf/build.sh')], { stdio: 'pipe' });
    const json = execFileSync('bpftool', ['-j', 'btf', 'dump', 'file', OBJECT], { encoding: 'utf8' });
    types = new Map((JSON.parse(json) as { types: BtfType[] }).types.map((t) => [t.id, t]));
  });

  test('FO-1: struct juneau_announce_value: size, field names, offsets and sizes', () => {
    const c = byName('STRUCT', ANNOUNCE_VALUE.name);
    expect(c.size).toBe(ANNOUNCE_VALUE.size);
    expect(Object.fromEntries(c.members!.map((m) => [m.name, { offset: m.bits_offset / 8, size: sizeOf(m.type_id) }]))).toEqual(ANNOUNCE_VALUE.fields);
  });

  test('FO-1: map juneau_announce: a hash keyed by juneau_arp_key, JUNEAU_ANNOUNCE_MAX entries', () => {
    expect(mapMember('type').nr_elems).toBe(1); // BPF_MAP_TYPE_HASH
    expect(mapMember('key')).toMatchObject({ kind: 'STRUCT', name: 'juneau_arp_key' });
    expect(mapMember('value')).toMatchObject({ kind: 'STRUCT', name: ANNOUNCE_VALUE.name });
    expect(mapMember('max_entries').nr_elems).toBe(ANNOUNCE_LIMITS.JUNEAU_ANNOUNCE_MAX);
  });

  test('FO-1: the limit and offsets compile as static assertions against bpf/juneau_arp.h', () => {
    const asserts = [`_Static_assert(JUNEAU_ANNOUNCE_MAX == ${ANNOUNCE_LIMITS.JUNEAU_ANNOUNCE_MAX}, "max");`];
    for (const [field, f] of Object.entries(ANNOUNCE_VALUE.fields)) asserts.push(`_Static_assert(offsetof(struct ${ANNOUNCE_VALUE.name}, ${field}) == ${f.offset}, "${field}");`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-layout-announce-'));
    try {
      const file = path.join(dir, 'layout_check.c');
      fs.writeFileSync(file, `#include <stddef.h>\n#include "juneau_arp.h"\n${asserts.join('\n')}\n`);
      const arch = `/usr/include/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`;
      execFileSync('clang', ['-target', 'bpf', '-fsyntax-only', `-I${arch}`, `-I${path.join(REPO, 'bpf')}`, file], { stdio: 'pipe' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('FO-1: a value round-trips through its encoding', () => {
    const e = { probes: 3n, announcements: 2n, lastAnnounceNs: 123_456_789_000n, gaveUp: 1n };
    expect(decodeAnnounceValue(encodeAnnounceValue(e))).toEqual(e);
  });
});
