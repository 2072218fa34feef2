// bpf/juneau_maps.h and its one TS mirror (runtime/agent/bpf/layout/) agree: struct sizes, field
// offsets and sizes, and the maps' key/value types and sizes, read from the BTF of each built
// object (xdp_arp.bpf.o, tc_nat.bpf.o, juneau_announce.bpf.o: a struct is only in the BTF of an
// object that uses it); the constants (reasons, actions, flags, limits) checked by clang against
// the header, and the probe slots computed by the header's own functions, compiled and run.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as layout from '../../../runtime/agent/bpf/layout';
import { Btf, compileStaticAsserts, layoutAsserts, loadBtf, REPO } from '../btf';

/** The BTF of each built object, read once. */
const btfs = new Map<string, Btf>();
const btfOf = (object: string): Btf => btfs.get(object) ?? btfs.set(object, loadBtf(object)).get(object)!;

/** Each object and the structs of layout/ whose BTF it carries. */
const OBJECT_STRUCTS = [
  ['xdp_arp.bpf.o', layout.STRUCTS],
  ['tc_nat.bpf.o', layout.NAT_STRUCTS],
  ['juneau_announce.bpf.o', [layout.ANNOUNCE_VALUE]],
] as const;

test.each(OBJECT_STRUCTS.flatMap(([object, structs]) => structs.map((s) => [s.name, object, s] as const)))(
  'struct %s (BTF of build/bpf/%s): size, field names, offsets and sizes',
  (name, object, mirror) => expect(btfOf(object).layoutOf(name)).toEqual({ size: mirror.size, fields: mirror.fields }),
);

describe('bpf map layouts: C (BTF of build/bpf/xdp_arp.bpf.o) equals runtime/agent/bpf/layout/arp.ts', () => {
  const btf = (): Btf => btfOf('xdp_arp.bpf.o');

  test('no implicit padding: fields tile each struct exactly (every hole is a named pad)', () => {
    for (const s of layout.STRUCTS) {
      const fields = Object.values(s.fields).sort((a, b) => a.offset - b.offset);
      let end = 0;
      for (const f of fields) {
        expect({ struct: s.name, offset: f.offset }).toEqual({ struct: s.name, offset: end });
        end = f.offset + f.size;
      }
      expect({ struct: s.name, end }).toEqual({ struct: s.name, end: s.size });
    }
  });

  test.each([
    [layout.MAP_NAMES.arpTable, 'struct juneau_arp_key', 'struct juneau_arp_value', layout.LIMITS.JUNEAU_ARP_TABLE_MAX],
    [layout.MAP_NAMES.guard, 'struct juneau_guard_key', 'struct juneau_guard_value', layout.LIMITS.JUNEAU_GUARD_MAX],
    [layout.MAP_NAMES.config, '__u32', 'struct juneau_config_value', layout.LIMITS.JUNEAU_CONFIG_MAX],
    [layout.MAP_NAMES.stats, '__u32', 'struct juneau_stats_value', layout.REASONS.JUNEAU_REASON_MAX],
    [layout.MAP_NAMES.filter, '__u32', 'struct juneau_arp_filter', 1],
    [layout.MAP_NAMES.slots, '__u32', 'struct juneau_arp_slot', layout.LIMITS.JUNEAU_ARP_SLOTS],
    [layout.MAP_NAMES.counters, '__u32', 'struct juneau_arp_value', layout.LIMITS.JUNEAU_ARP_SLOTS],
    [layout.MAP_NAMES.classes, 'struct juneau_arp_key', 'struct juneau_arp_class', layout.LIMITS.JUNEAU_ARP_TABLE_MAX],
  ])('map %s: key %s, value %s, %d entries', (map, key, value, maxEntries) =>
    expect(btf().mapShape(map)).toEqual({ key, value, maxEntries }),
  );

  test('external_arp_table is a per-CPU hash without preallocation, as the agent checks on its pin; the filter an array', () => {
    expect(btf().mapMember(layout.MAP_NAMES.arpTable, 'type').nr_elems).toBe(layout.ARP_TABLE_TYPE);
    expect(layout.ARP_TABLE_TYPE).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_PERCPU_HASH);
    expect(btf().mapMember(layout.MAP_NAMES.arpTable, 'map_flags').nr_elems).toBe(layout.BPF_F_NO_PREALLOC);
    expect(btf().mapMember(layout.MAP_NAMES.filter, 'type').nr_elems).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_ARRAY);
  });

  test('the address slots are an array and their counters a per-CPU array, so the program reads both without a call', () => {
    expect(btf().mapMember(layout.MAP_NAMES.slots, 'type').nr_elems).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_ARRAY);
    expect(btf().mapMember(layout.MAP_NAMES.counters, 'type').nr_elems).toBe(6); // BPF_MAP_TYPE_PERCPU_ARRAY
  });

  test('juneau_config is an array of slots (read without a call), as the agent checks on its pin', () => {
    expect(btf().mapMember(layout.MAP_NAMES.config, 'type').nr_elems).toBe(layout.CONFIG_TYPE);
    expect(layout.CONFIG_TYPE).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_ARRAY);
  });

  test('constants and layouts of layout/arp.ts compile as static assertions against bpf/juneau_maps.h', () => {
    const constants = {
      ...layout.REASONS,
      ...layout.GUARD_ACTION,
      ...layout.CONFIG_FLAGS,
      ...layout.EXPIRY_CLASSES,
      ...layout.LIMITS,
    };
    const asserts = layoutAsserts(constants, layout.STRUCTS);
    compileStaticAsserts(asserts);
    expect(asserts.length).toBeGreaterThan(50);
  });
});

describe('bpf map encoders', () => {
  test('IPv4 keys are in network byte order (__be32)', () => {
    expect(layout.encodeArpKey('192.0.2.1')).toEqual(Buffer.from([192, 0, 2, 1]));
    expect(layout.decodeArpKey(Buffer.from([10, 225, 51, 7]))).toBe('10.225.51.7');
  });

  test('guard keys: host-order prefix length, then the network-order address', () => {
    const key = layout.encodeGuardKey({ address: '10.225.51.0', prefixLength: 24 });
    expect(key).toEqual(Buffer.from([24, 0, 0, 0, 10, 225, 51, 0]));
    expect(layout.decodeGuardKey(key)).toEqual({ address: '10.225.51.0', prefixLength: 24 });
  });

  test('arp values round-trip, and a fresh value is all zero (padding included)', () => {
    expect(layout.encodeArpValue()).toEqual(Buffer.alloc(40));
    const entry = {
      requests: 3n,
      replies: 2n,
      conflicts: 1n,
      lastConflictNs: 123456789n,
      lastConflictMac: '02:00:00:00:0c:0f',
    };
    expect(layout.decodeArpValue(layout.encodeArpValue(entry))).toEqual(entry);
    expect(layout.decodeArpValue(Buffer.alloc(40)).lastConflictMac).toBeUndefined();
  });

  test('per-CPU arp values: counters summed over 40-byte slots, the last conflict from the CPU that saw the latest', () => {
    const cpus = 3;
    const value = Buffer.alloc(layout.perCpuValueSize(layout.ARP_VALUE.size, cpus));
    layout
      .encodeArpValue({
        requests: 5n,
        replies: 4n,
        conflicts: 1n,
        lastConflictNs: 900n,
        lastConflictMac: '02:00:00:00:00:0a',
      })
      .copy(value, 0);
    layout.encodeArpValue({ requests: 7n, replies: 7n }).copy(value, 40);
    layout
      .encodeArpValue({ requests: 1n, conflicts: 2n, lastConflictNs: 1000n, lastConflictMac: '02:00:00:00:00:0b' })
      .copy(value, 80);
    expect(layout.sumArpValues(value, cpus)).toEqual({
      requests: 13n,
      replies: 11n,
      conflicts: 3n,
      lastConflictNs: 1000n,
      lastConflictMac: '02:00:00:00:00:0b',
    });
    expect(layout.sumArpValues(layout.encodeArpValues(cpus), cpus)).toEqual({
      requests: 0n,
      replies: 0n,
      conflicts: 0n,
      lastConflictNs: 0n,
      lastConflictMac: undefined,
    });
    const carried = {
      requests: 9n,
      replies: 8n,
      conflicts: 1n,
      lastConflictNs: 77n,
      lastConflictMac: '02:00:00:00:00:0c',
    };
    expect(layout.sumArpValues(layout.encodeArpValues(cpus, carried), cpus)).toEqual(carried);
    expect(() => layout.sumArpValues(Buffer.alloc(40), cpus)).toThrow(/3 CPUs need 120/);
  });

  test('the arp filter sets exactly the bits juneau_arp_filter_bit() computes (clang evaluates the C side)', () => {
    const addresses = ['192.0.2.50', '10.225.51.7', '0.0.0.1', '255.255.255.255'];
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-filter-'));
    try {
      const file = path.join(dir, 'filter_check.c');
      const asserts = addresses.map((a) => {
        const raw = layout.encodeArpKey(a).readUInt32LE(0);
        return `_Static_assert(((__u32)${raw}u * 0x9e3779b1u) >> 16 == ${layout.arpFilterBit(a)}, "${a}");`;
      });
      // juneau_arp_filter_bit itself is an inline function; its expression is repeated here and
      // compared with the header's text so that a change there fails this test.
      const header = fs.readFileSync(path.join(REPO, 'bpf/juneau_slots.h'), 'utf8');
      expect(header).toContain('return ((__u32)addr * 0x9e3779b1u) >> 16;');
      fs.writeFileSync(file, `#include <linux/types.h>\n${asserts.join('\n')}\n`);
      const arch = `/usr/include/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`;
      execFileSync('clang', ['-target', 'bpf', '-fsyntax-only', `-I${arch}`, file], { stdio: 'pipe' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const filter = layout.encodeArpFilter(addresses);
    expect(filter.length).toBe(8192);
    for (const a of addresses) expect(layout.arpFilterHas(filter, a)).toBe(true);
    const set = [...filter].reduce((n, byte) => n + byte.toString(2).split('1').length - 1, 0);
    expect(set).toBe(new Set(addresses.map(layout.arpFilterBit)).size);
    expect(layout.arpFilterHas(layout.encodeArpFilter([]), '192.0.2.50')).toBe(false);
  });

  test('config values: protections are on when their OFF flag is clear', () => {
    const value = layout.encodeConfigValue({ mac: '02:00:00:00:00:01', guard: false, conflictDetection: true });
    expect(value).toEqual(
      Buffer.concat([
        Buffer.from([2, 0, 0, 0, 0, 1, 0, 0, layout.CONFIG_FLAGS.JUNEAU_CFG_GUARD_OFF, 0, 0, 0]),
        Buffer.alloc(20),
      ]),
    );
    expect(layout.decodeConfigValue(value)).toEqual({
      mac: '02:00:00:00:00:01',
      guard: false,
      conflictDetection: true,
      heartbeatNs: 0n,
      expiryNs: 0n,
      orphanExpiries: 0,
    });
  });

  test('SEC-16: the orphan bound is a little-endian u16 of expiries at 6, where the pad was (old entries read 0: never); SEC-11: an expiry class is a u32', () => {
    const value = layout.encodeConfigValue({
      mac: '02:00:00:00:00:01',
      guard: true,
      conflictDetection: true,
      expiryNs: 10_000_000_000n,
      orphanExpiries: 360,
    });
    expect(value.readUInt16LE(6)).toBe(360);
    expect(layout.decodeConfigValue(value).orphanExpiries).toBe(360);
    expect(layout.orphanExpiries(3_600_000, 10_000)).toBe(360);
    expect(layout.orphanExpiries(3_600_001, 10_000)).toBe(361);
    expect(layout.orphanExpiries(0, 10_000)).toBe(0);
    expect(() => layout.orphanExpiries(65_536_000, 1_000)).toThrow(/--orphan-after .* at most 65535/);
    expect(layout.decodeArpClass(layout.encodeArpClass('held'))).toBe('held');
    expect(layout.encodeArpClass('held').readUInt32LE(0)).toBe(layout.EXPIRY_CLASSES.JUNEAU_EXPIRY_HELD);
    expect(layout.decodeArpClass(Buffer.from([7, 0, 0, 0]))).toBe('moveable');
  });

  test('FO-2: config values carry the heartbeat and the expiry as little-endian u64 at 16 and 24; zero expiry means never', () => {
    const value = layout.encodeConfigValue({
      mac: '02:00:00:00:00:01',
      guard: true,
      conflictDetection: true,
      heartbeatNs: 123_456_789_012n,
      expiryNs: 10_000_000_000n,
    });
    expect(value.readBigUInt64LE(16)).toBe(123_456_789_012n);
    expect(value.readBigUInt64LE(24)).toBe(10_000_000_000n);
    expect(layout.decodeConfigValue(value)).toMatchObject({ heartbeatNs: 123_456_789_012n, expiryNs: 10_000_000_000n });
  });

  test('guard values carry the action; an unknown action is an error, not a guess', () => {
    expect(layout.decodeGuardValue(layout.encodeGuardValue('allow'))).toEqual({ action: 'allow', hits: 0n });
    expect(() => layout.decodeGuardValue(Buffer.alloc(16))).toThrow(/unknown action 0/);
  });

  test('per-CPU stats are summed over 8-byte slots', () => {
    const value = Buffer.alloc(layout.perCpuValueSize(8, 3));
    value.writeBigUInt64LE(1n, 0);
    value.writeBigUInt64LE(2n, 8);
    value.writeBigUInt64LE(40n, 16);
    expect(layout.sumPerCpuStats(value, 3)).toBe(43n);
  });

  test('malformed addresses are refused', () => {
    expect(() => layout.encodeArpKey('192.0.2.256')).toThrow(/not an IPv4 address/);
    expect(() => layout.encodeArpKey('192.0.2')).toThrow(/not an IPv4 address/);
    expect(() => layout.encodeConfigValue({ mac: '02:00:00:00:00', guard: true, conflictDetection: true })).toThrow(
      /not a MAC/,
    );
  });
});

describe('NAT map layouts: C (BTF of build/bpf/tc_nat.bpf.o) equals runtime/agent/bpf/layout/nat.ts', () => {
  const btf = (): Btf => btfOf('tc_nat.bpf.o');

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
    [
      layout.NAT_MAP_NAMES.peers,
      'struct juneau_nat_key',
      'struct juneau_nat_peer_value',
      layout.NAT_LIMITS.JUNEAU_NAT_PEERS_MAX,
    ],
  ])('map %s: key %s, value %s, %d entries', (map, key, value, maxEntries) =>
    expect(btf().mapShape(map)).toEqual({ key, value, maxEntries }),
  );

  test('NAT constants, sizes and offsets of layout/nat.ts compile as static assertions against bpf/juneau_maps.h', () => {
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

describe('FO-1 announcement counters layout: C (BTF of build/bpf/juneau_announce.bpf.o) equals runtime/agent/bpf/layout/announce.ts', () => {
  const btf = (): Btf => btfOf('juneau_announce.bpf.o');

  test('FO-1: map juneau_announce: a hash keyed by juneau_arp_key, JUNEAU_ANNOUNCE_MAX entries', () => {
    expect(btf().mapMember(layout.ANNOUNCE_MAP_NAME, 'type').nr_elems).toBe(1); // BPF_MAP_TYPE_HASH
    expect(btf().mapShape(layout.ANNOUNCE_MAP_NAME)).toEqual({
      key: 'struct juneau_arp_key',
      value: `struct ${layout.ANNOUNCE_VALUE.name}`,
      maxEntries: layout.ANNOUNCE_LIMITS.JUNEAU_ANNOUNCE_MAX,
    });
  });

  test('FO-1: the limit, size and offsets compile as static assertions against bpf/juneau_maps.h', () => {
    compileStaticAsserts(layoutAsserts(layout.ANNOUNCE_LIMITS, [layout.ANNOUNCE_VALUE]));
  });

  test('FO-1: a value round-trips through its encoding', () => {
    const e = { probes: 3n, announcements: 2n, lastAnnounceNs: 123_456_789_000n, gaveUp: 1n };
    expect(layout.decodeAnnounceValue(layout.encodeAnnounceValue(e))).toEqual(e);
  });
});

// The slots the agent places entries in are the ones the program probes: juneau_arp_slot() and
// juneau_config_slot() of bpf/juneau_slots.h, compiled by clang for this host and run.
const ADDRESSES = ['192.0.2.50', '10.225.51.7', '0.0.0.1', '255.255.255.255', '10.112.39.16'];
const IFINDEXES = [1, 2, 63, 64, 65, 4_000_000_000];

/** Lines `arp <addr> <probe> <slot>` and `cfg <ifindex> <probe> <slot>` from the C functions. */
function slotsFromC(): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-slots-'));
  try {
    const src = path.join(dir, 'slots.c');
    const bin = path.join(dir, 'slots');
    const arpCalls = ADDRESSES.flatMap((a) =>
      Array.from(
        { length: layout.LIMITS.JUNEAU_ARP_PROBES },
        (_, p) => `printf("arp ${a} ${p} %u\\n", juneau_arp_slot(${layout.encodeArpKey(a).readUInt32LE(0)}u, ${p}));`,
      ),
    );
    const cfgCalls = IFINDEXES.flatMap((i) =>
      Array.from(
        { length: layout.LIMITS.JUNEAU_CONFIG_PROBES },
        (_, p) => `printf("cfg ${i} ${p} %u\\n", juneau_config_slot(${i}u, ${p}));`,
      ),
    );
    fs.writeFileSync(
      src,
      `#include <stdio.h>\n#include "juneau_slots.h"\nint main(void) {\n${[...arpCalls, ...cfgCalls].join('\n')}\nreturn 0;\n}\n`,
    );
    execFileSync('clang', ['-O1', `-I${path.join(REPO, 'bpf')}`, src, '-o', bin], { stdio: 'pipe' });
    return execFileSync(bin, { encoding: 'utf8' }).trim().split('\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('ARP-10: the address and config slots of layout/arp.ts are those of bpf/juneau_slots.h, probe by probe', () => {
  const expected = [
    ...ADDRESSES.flatMap((a) =>
      Array.from({ length: layout.LIMITS.JUNEAU_ARP_PROBES }, (_, p) => `arp ${a} ${p} ${layout.arpSlot(a, p)}`),
    ),
    ...IFINDEXES.flatMap((i) =>
      Array.from({ length: layout.LIMITS.JUNEAU_CONFIG_PROBES }, (_, p) => `cfg ${i} ${p} ${layout.configSlot(i, p)}`),
    ),
  ];
  expect(slotsFromC()).toEqual(expected);
  // Probing wraps around the end of the array.
  expect(layout.configSlot(63, 1)).toBe(0);
});
