// The NAT section of bpf/juneau_maps.h and its mirror in runtime/agent/bpf/layout.ts agree, read
// from the BTF of build/bpf/tc_nat.bpf.o (the ARP structs are checked by bpf-layout.test.ts against
// xdp_arp.bpf.o; the NAT structs exist only in this object's BTF).
import * as layout from '../../runtime/agent/bpf/layout';
import { Btf, compileStaticAsserts, layoutAsserts, loadBtf } from './btf';

let btf: Btf;

describe('NAT map layouts: C (BTF of build/bpf/tc_nat.bpf.o) equals runtime/agent/bpf/layout.ts', () => {
  beforeAll(() => {
    btf = loadBtf('tc_nat.bpf.o');
  });

  test.each(layout.NAT_STRUCTS.map((s) => [s.name, s] as const))(
    'struct %s: size, field names, offsets and sizes',
    (name, mirror) => expect(btf.layoutOf(name)).toEqual({ size: mirror.size, fields: mirror.fields }),
  );

  test.each([
    [layout.NAT_MAP_NAMES.in, 'struct juneau_nat_key', 'struct juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.out, 'struct juneau_nat_key', 'struct juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [layout.NAT_MAP_NAMES.direct, 'struct juneau_nat_key', 'struct juneau_nat_value', layout.NAT_LIMITS.JUNEAU_NAT_MAX],
    [
      layout.NAT_MAP_NAMES.counters,
      'struct juneau_nat_key',
      'struct juneau_nat_counters',
      layout.NAT_LIMITS.JUNEAU_NAT_MAX,
    ],
    [layout.NAT_MAP_NAMES.config, '__u32', 'struct juneau_nat_config', 1],
    [
      layout.NAT_MAP_NAMES.skip,
      'struct juneau_guard_key',
      'struct juneau_nat_skip_value',
      layout.NAT_LIMITS.JUNEAU_NAT_SKIP_MAX,
    ],
    [layout.NAT_MAP_NAMES.stats, '__u32', 'struct juneau_stats_value', layout.NAT_REASONS.JUNEAU_NAT_REASON_MAX],
    [
      layout.NAT_MAP_NAMES.remote,
      'struct juneau_nat_key',
      'struct juneau_nat_remote',
      layout.NAT_LIMITS.JUNEAU_NAT_MAX,
    ],
    [
      layout.NAT_MAP_NAMES.vni,
      'struct juneau_nat_vni_key',
      'struct juneau_nat_vni_value',
      layout.NAT_LIMITS.JUNEAU_NAT_VNI_MAX,
    ],
  ])('map %s: key %s, value %s, %d entries', (map, key, value, maxEntries) =>
    expect(btf.mapShape(map)).toEqual({ key, value, maxEntries }),
  );

  test('NAT constants, sizes and offsets of layout.ts compile as static assertions against bpf/juneau_maps.h', () => {
    const asserts = layoutAsserts(
      { ...layout.NAT_REASONS, ...layout.NAT_LIMITS, ...layout.NAT_CONFIG_FLAGS },
      layout.NAT_STRUCTS,
    );
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
