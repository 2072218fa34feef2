// Upgrading over an older agent's pins when external_arp_table became per-CPU (the counters of a
// request no longer cost two atomic adds on a shared cache line). The older table has the same
// key and value sizes but type hash: read as per-CPU it would be misread, and libbpf refuses to
// reuse it. The older map is made here the way libbpf made it (bpftool: hash, 4/40 bytes, 65536
// entries) and filled with an entry and counters, so the test does not depend on an old build.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import {
  ARP_TABLE_TYPE,
  LIMITS,
  MAP_NAMES,
  MAP_TYPES,
  arpFilterHas,
  encodeArpKey,
  encodeArpValue,
} from '../../runtime/agent/bpf/layout';
import type { BpfMap } from '../../runtime/agent/bpf/map';
import { pinOlderMap, responderMapsBut, withArpMaps, withPinnedMap } from './pins';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const VIP = `${SUBNET}.53`;
const OTHER_MAC = '02:00:00:00:0c:0f';
const OLDER = { requests: 10n, replies: 9n, conflicts: 1n, lastConflictNs: 123_456_789n, lastConflictMac: OTHER_MAC };

describeAsRoot('upgrade over pins whose external_arp_table is a plain (not per-CPU) hash', () => {
  const rig = useRig(1);
  const withPinned = <T>(name: string, use: (map: BpfMap) => T): T => withPinnedMap(rig.pinDir(0), name, use);
  const withMaps = <T>(use: (maps: ArpMaps) => T): T => withArpMaps(rig.pinDir(0), use);

  test('OPS-1 ARP-10: the older table is refused by readers, then moved into the per-CPU table with its counters, and the counts go on exactly', async () => {
    const first = await rig.attach(0, { mode: 'generic' });
    // The pins of an agent before the per-CPU table: a hash table holding VIP, and no filter.
    fs.unlinkSync(path.join(rig.pinDir(0), MAP_NAMES.filter));
    pinOlderMap(rig.pinDir(0), {
      name: MAP_NAMES.arpTable,
      type: 'hash',
      key: 4,
      value: 40,
      entries: LIMITS.JUNEAU_ARP_TABLE_MAX,
    });
    withPinned(MAP_NAMES.arpTable, (map) => map.update(encodeArpKey(VIP), encodeArpValue(OLDER)));
    // Not misread: a reader of this version refuses the older table, naming what to do.
    expect(() => ArpMaps.openPinned(rig.pinDir(0))).toThrow(
      /type 1, this agent expects 5 \(per-CPU hash\).*moves its entries over/,
    );

    const second = await rig.attach(0, { mode: 'auto' });
    expect(second.replacedProgramId).toBe(first.programId);
    expect(second.adoptedMaps.sort()).toEqual(responderMapsBut(MAP_NAMES.arpTable, MAP_NAMES.filter));
    expect(withPinned(MAP_NAMES.arpTable, (map) => map.info.type)).toBe(ARP_TABLE_TYPE);
    expect(ARP_TABLE_TYPE).toBe(MAP_TYPES.BPF_MAP_TYPE_PERCPU_HASH);
    expect(fs.readdirSync(rig.pinDir(0)).filter((name) => name.includes('older'))).toEqual([]);
    expect(withMaps((maps) => [...maps.addresses()])).toEqual([[VIP, OLDER]]);
    // The new filter was written from the table before the program attached.
    expect(withMaps((maps) => arpFilterHas(maps.filter(), VIP))).toBe(true);

    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 3 }));
    expect(repliesFor(frames, VIP).map((f) => f.src)).toEqual([first.mac, first.mac, first.mac]);
    expect(withMaps((maps) => maps.lookupAddress(VIP))).toEqual({
      ...OLDER,
      requests: OLDER.requests + 3n,
      replies: OLDER.replies + 3n,
    });
  });

  test('a third attach adopts the per-CPU table as it is (nothing moved, counters kept)', async () => {
    const before = withMaps((maps) => maps.lookupAddress(VIP))!;
    const third = await rig.attach(0, { mode: 'auto' });
    expect(third.adoptedMaps).toContain(MAP_NAMES.arpTable);
    expect(third.adoptedMaps).toContain(MAP_NAMES.filter);
    expect(withMaps((maps) => maps.lookupAddress(VIP))).toEqual(before);
  });
});
