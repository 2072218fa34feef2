// The NAT section of bpf/juneau_arp.h and its mirror in runtime/agent/bpf/layout.ts agree, read
// from the BTF of build/bpf/tc_nat.bpf.o (the ARP structs are checked by bpf-layout.test.ts against
// xdp_arp.bpf.o; the NAT structs exist only in this object's BTF).
import * as layout from '../../runtime/agent/bpf/layout';
import { Btf, compileStaticAsserts, loadBtf } from './btf';

let btf: Btf;

describe('NAT map layouts: C (BTF of build/bpf/tc_nat.bpf.o) equals runtime/agent/bpf/layout.ts', () => {
  beforeAll(() => {
    btf = loadBtf('tc_nat.bpf.o');
  });

  test.each(layout.NAT_STRUCTS.map((s) => [s.name, s] as const))(
    'struct %s: size, field names, offsets and sizes',
    (name, mirror) => {
      const c = btf.struct(name);
      expect(c.size).toBe(mirror.size);
      expect(
        Object.fromEntries(c.members!.map((m) => [m.name, { offset: m.bits_offset / 8, size: btf.sizeOf(m.type_id) }])),
      ).toEqual(mirror.fields);
    },
  );

  test.each([
    [layout.NAT_MAP_NAMES.in, 'juneau_nat_key', 'juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.out, 'juneau_nat_key', 'juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.direct, 'juneau_nat_key', 'juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.counters, 'juneau_nat_key', 'juneau_nat_counters', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.config, '__u32', 'juneau_nat_config', 1],
    [layout.NAT_MAP_NAMES.skip, 'juneau_guard_key', 'juneau_nat_skip_value', layout.NAT_LIMITS.JUNEAU_NAT_SKIP_MAX],
    [layout.NAT_MAP_NAMES.stats, '__u32', 'juneau_stats_value', layout.NAT_REASONS.JUNEAU_NAT_REASON_MAX],
    [layout.NAT_MAP_NAMES.remote, 'juneau_nat_key', 'juneau_nat_remote', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.vni, 'juneau_nat_vni_key', 'juneau_nat_vni_value', layout.NAT_LIMITS.JUNEAU_NAT_VNI_MAX],
  ])('map %s: key %s, value %s, %d entries', (map, key, value, maxEntries) => {
    const keyType = btf.mapMember(map, 'key');
    if (key === '__u32') expect(keyType).toMatchObject({ kind: 'INT', size: 4 });
    else expect(keyType).toMatchObject({ kind: 'STRUCT', name: key });
    expect(btf.mapMember(map, 'value')).toMatchObject({ kind: 'STRUCT', name: value });
    expect(btf.mapMember(map, 'max_entries').nr_elems).toBe(maxEntries);
  });

  test('NAT constants and layouts of layout.ts compile as static assertions against bpf/juneau_arp.h', () => {
    const asserts: string[] = [];
    for (const [name, value] of Object.entries({
      ...layout.NAT_REASONS,
      ...layout.NAT_LIMITS,
      ...layout.NAT_CONFIG_FLAGS,
    })) {
      asserts.push(`_Static_assert(${name} == ${value}, "${name}");`);
    }
    for (const s of layout.NAT_STRUCTS) {
      for (const [field, f] of Object.entries(s.fields))
        asserts.push(`_Static_assert(offsetof(struct ${s.name}, ${field}) == ${f.offset}, "${s.name}.${field}");`);
    }
    compileStaticAsserts(asserts);
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
