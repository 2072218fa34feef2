// FO-1: the "FO-1 announcements" section of bpf/juneau_maps.h and its mirror in
// runtime/agent/announce/counters.ts agree, read from the BTF of build/bpf/juneau_announce.bpf.o
// (the map's only object; no program reads it, the agent writes it and the CLI dumps it).
import {
  ANNOUNCE_LIMITS,
  ANNOUNCE_MAP_NAME,
  ANNOUNCE_VALUE,
  decodeAnnounceValue,
  encodeAnnounceValue,
} from '../../runtime/agent/announce/counters';
import { Btf, compileStaticAsserts, layoutAsserts, loadBtf } from './btf';

let btf: Btf;

describe('FO-1 announcement counters layout: C (BTF of build/bpf/juneau_announce.bpf.o) equals runtime/agent/announce/counters.ts', () => {
  beforeAll(() => {
    btf = loadBtf('juneau_announce.bpf.o');
  });

  test('FO-1: struct juneau_announce_value: size, field names, offsets and sizes', () => {
    expect(btf.layoutOf(ANNOUNCE_VALUE.name)).toEqual({ size: ANNOUNCE_VALUE.size, fields: ANNOUNCE_VALUE.fields });
  });

  test('FO-1: map juneau_announce: a hash keyed by juneau_arp_key, JUNEAU_ANNOUNCE_MAX entries', () => {
    expect(btf.mapMember(ANNOUNCE_MAP_NAME, 'type').nr_elems).toBe(1); // BPF_MAP_TYPE_HASH
    expect(btf.mapShape(ANNOUNCE_MAP_NAME)).toEqual({
      key: 'struct juneau_arp_key',
      value: `struct ${ANNOUNCE_VALUE.name}`,
      maxEntries: ANNOUNCE_LIMITS.JUNEAU_ANNOUNCE_MAX,
    });
  });

  test('FO-1: the limit, size and offsets compile as static assertions against bpf/juneau_maps.h', () => {
    compileStaticAsserts(layoutAsserts(ANNOUNCE_LIMITS, [ANNOUNCE_VALUE]));
  });

  test('FO-1: a value round-trips through its encoding', () => {
    const e = { probes: 3n, announcements: 2n, lastAnnounceNs: 123_456_789_000n, gaveUp: 1n };
    expect(decodeAnnounceValue(encodeAnnounceValue(e))).toEqual(e);
  });
});
