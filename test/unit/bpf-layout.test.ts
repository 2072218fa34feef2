// bpf/juneau_maps.h and its one TS mirror (runtime/agent/bpf/layout.ts) agree: struct sizes, field
// offsets and sizes, and the maps' key/value types and sizes, read from the BTF of the built
// object; the constants (reasons, actions, flags, limits) checked by clang against the header.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as layout from '../../runtime/agent/bpf/layout';
import { Btf, compileStaticAsserts, layoutAsserts, loadBtf, REPO } from './btf';

describe('bpf map layouts: C (BTF of build/bpf/xdp_arp.bpf.o) equals runtime/agent/bpf/layout.ts', () => {
  let btf: Btf;

  beforeAll(() => {
    btf = loadBtf('xdp_arp.bpf.o');
  });

  test.each(layout.STRUCTS.map((s) => [s.name, s] as const))(
    'struct %s: size, field names, offsets and sizes',
    (name, mirror) => expect(btf.layoutOf(name)).toEqual({ size: mirror.size, fields: mirror.fields }),
  );

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
  ])('map %s: key %s, value %s, %d entries', (map, key, value, maxEntries) =>
    expect(btf.mapShape(map)).toEqual({ key, value, maxEntries }),
  );

  test('external_arp_table is a per-CPU hash without preallocation, as the agent checks on its pin; the filter an array', () => {
    expect(btf.mapMember(layout.MAP_NAMES.arpTable, 'type').nr_elems).toBe(layout.ARP_TABLE_TYPE);
    expect(layout.ARP_TABLE_TYPE).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_PERCPU_HASH);
    expect(btf.mapMember(layout.MAP_NAMES.arpTable, 'map_flags').nr_elems).toBe(layout.BPF_F_NO_PREALLOC);
    expect(btf.mapMember(layout.MAP_NAMES.filter, 'type').nr_elems).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_ARRAY);
  });

  test('the address slots are an array and their counters a per-CPU array, so the program reads both without a call', () => {
    expect(btf.mapMember(layout.MAP_NAMES.slots, 'type').nr_elems).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_ARRAY);
    expect(btf.mapMember(layout.MAP_NAMES.counters, 'type').nr_elems).toBe(6); // BPF_MAP_TYPE_PERCPU_ARRAY
  });

  test('juneau_config is an array of slots (read without a call), as the agent checks on its pin', () => {
    expect(btf.mapMember(layout.MAP_NAMES.config, 'type').nr_elems).toBe(layout.CONFIG_TYPE);
    expect(layout.CONFIG_TYPE).toBe(layout.MAP_TYPES.BPF_MAP_TYPE_ARRAY);
  });

  test('constants and layouts of layout.ts compile as static assertions against bpf/juneau_maps.h', () => {
    const constants = { ...layout.REASONS, ...layout.GUARD_ACTION, ...layout.CONFIG_FLAGS, ...layout.LIMITS };
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
    });
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
