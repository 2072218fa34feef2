// The NAT section of bpf/juneau_arp.h and its mirror in runtime/agent/bpf/layout.ts agree, read
// from the BTF of build/bpf/tc_nat.bpf.o (the ARP structs are checked by bpf-layout.test.ts against
// xdp_arp.bpf.o; the NAT structs exist only in this object's BTF).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as layout from '../../runtime/agent/bpf/layout';

const REPO = path.resolve(__dirname, '../..');
const OBJECT = path.join(REPO, 'build/bpf/tc_nat.bpf.o');

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
const mapMember = (map: string, member: string): BtfType => {
  const def = resolve(byName('VAR', map).type_id!);
  const m = def.members!.find((x) => x.name === member)!;
  return resolve(types.get(m.type_id)!.type_id!);
};

describe('NAT map layouts: C (BTF of build/bpf/tc_nat.bpf.o) equals runtime/agent/bpf/layout.ts', () => {
  beforeAll(() => {
    execFileSync('bash', [path.join(REPO, 'bpf/build.sh')], { stdio: 'pipe' });
    const json = execFileSync('bpftool', ['-j', 'btf', 'dump', 'file', OBJECT], { encoding: 'utf8' });
    types = new Map((JSON.parse(json) as { types: BtfType[] }).types.map((t) => [t.id, t]));
  });

  test.each(layout.NAT_STRUCTS.map((s) => [s.name, s] as const))('struct %s: size, field names, offsets and sizes', (name, mirror) => {
    const c = byName('STRUCT', name);
    expect(c.size).toBe(mirror.size);
    expect(Object.fromEntries(c.members!.map((m) => [m.name, { offset: m.bits_offset / 8, size: sizeOf(m.type_id) }]))).toEqual(mirror.fields);
  });

  test.each([
    [layout.NAT_MAP_NAMES.in, 'juneau_nat_key', 'juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.out, 'juneau_nat_key', 'juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.direct, 'juneau_nat_key', 'juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.counters, 'juneau_nat_key', 'juneau_nat_counters', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.config, '__u32', 'juneau_nat_config', 1],
    [layout.NAT_MAP_NAMES.skip, 'juneau_guard_key', 'juneau_nat_skip_value', layout.NAT_LIMITS.JUNEAU_NAT_SKIP_MAX],
    [layout.NAT_MAP_NAMES.stats, '__u32', 'juneau_stats_value', layout.NAT_REASONS.JUNEAU_NAT_REASON_MAX],
  ])('map %s: key %s, value %s, %d entries', (map, key, value, maxEntries) => {
    const keyType = mapMember(map, 'key');
    if (key === '__u32') expect(keyType).toMatchObject({ kind: 'INT', size: 4 });
    else expect(keyType).toMatchObject({ kind: 'STRUCT', name: key });
    expect(mapMember(map, 'value')).toMatchObject({ kind: 'STRUCT', name: value });
    expect(mapMember(map, 'max_entries').nr_elems).toBe(maxEntries);
  });

  test('NAT constants and layouts of layout.ts compile as static assertions against bpf/juneau_arp.h', () => {
    const asserts: string[] = [];
    for (const [name, value] of Object.entries({ ...layout.NAT_REASONS, ...layout.NAT_LIMITS, ...layout.NAT_CONFIG_FLAGS })) {
      asserts.push(`_Static_assert(${name} == ${value}, "${name}");`);
    }
    for (const s of layout.NAT_STRUCTS) {
      for (const [field, f] of Object.entries(s.fields)) asserts.push(`_Static_assert(offsetof(struct ${s.name}, ${field}) == ${f.offset}, "${s.name}.${field}");`);
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-layout-nat-'));
    try {
      const file = path.join(dir, 'layout_check.c');
      fs.writeFileSync(file, `#include <stddef.h>\n#include "juneau_arp.h"\n${asserts.join('\n')}\n`);
      const arch = `/usr/include/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`;
      execFileSync('clang', ['-target', 'bpf', '-fsyntax-only', `-I${arch}`, `-I${path.join(REPO, 'bpf')}`, file], { stdio: 'pipe' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(asserts.length).toBeGreaterThan(20);
  });

  test('per-CPU NAT counters are summed field by field over 32-byte slots', () => {
    const value = Buffer.alloc(layout.perCpuValueSize(32, 2));
    value.writeBigUInt64LE(1n, 0);
    value.writeBigUInt64LE(100n, 8);
    value.writeBigUInt64LE(2n, 32 + 16);
    value.writeBigUInt64LE(7n, 32 + 24);
    value.writeBigUInt64LE(3n, 32);
    expect(layout.sumNatCounters(value, 2)).toEqual({ inPackets: 4n, inBytes: 100n, outPackets: 2n, outBytes: 7n });
  });
});
