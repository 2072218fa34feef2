// The pin policy of runtime/agent/bpf/pins.ts at attach, over pins whose shape differs from the
// object's: a counters map is made anew, a state map is carried over with its entries, and a
// state map no codec can carry is refused with every pin left as it was. The differing maps are
// made with bpftool (as libbpf makes a map, in another shape), so the test needs no other build.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { numPossibleCpus } from '../../runtime/agent/bpf/libbpf';
import { LIMITS, MAP_NAMES, REASONS, encodeArpKey, encodeArpValues } from '../../runtime/agent/bpf/layout';
import type { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { PIN_ROOT, PIN_SUBDIR, ensureBpffs, removePins } from '../../runtime/agent/bpf/pins';
import { pinMapOfShape, responderMapsBut, withArpMaps, withPinnedMap } from './pins';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const VIP = `${SUBNET}.50`;
const TABLED = `${SUBNET}.51`;

describeAsRoot('pins of another shape at attach (pins.ts PIN_POLICY)', () => {
  const rig = useRig(1);
  const withMaps = <T>(use: (maps: ArpMaps) => T): T => withArpMaps(rig.pinDir(0), use);
  const entriesOf = (name: string) => withPinnedMap(rig.pinDir(0), name, (map) => map.info.maxEntries);
  const asides = () => fs.readdirSync(rig.pinDir(0)).filter((name) => name.endsWith('_aside'));

  test('OPS-1 ARP-12: a counters map (juneau_stats with fewer reason slots) is made anew; the rest is adopted and answering goes on', async () => {
    const first = await rig.attach(0, { mode: 'generic' });
    withMaps((maps) => maps.addAddress(VIP));
    pinMapOfShape(rig.pinDir(0), { name: MAP_NAMES.stats, type: 'percpu_array', key: 4, value: 8, entries: 13 });
    expect(entriesOf(MAP_NAMES.stats)).toBe(13);

    const second = await rig.attach(0, { mode: 'auto' });
    expect(second.replacedProgramId).toBe(first.programId);
    expect(second.adoptedMaps.sort()).toEqual(responderMapsBut(MAP_NAMES.stats));
    expect(entriesOf(MAP_NAMES.stats)).toBe(REASONS.JUNEAU_REASON_MAX);
    expect(withMaps((maps) => [...maps.addresses().keys()])).toEqual([VIP]);

    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 2 }));
    expect(repliesFor(frames, VIP).map((f) => f.src)).toEqual([first.mac, first.mac]);
    expect(withMaps((maps) => maps.stats().JUNEAU_TX_REPLY)).toBe(2n);
  });

  test('OPS-1 ARP-10: a state map (external_arp_table sized otherwise) is carried over with its entries and counters, and nothing is left aside', async () => {
    pinMapOfShape(rig.pinDir(0), {
      name: MAP_NAMES.arpTable,
      type: 'percpu_hash',
      key: 4,
      value: 40,
      entries: 4096,
      flags: 1, // BPF_F_NO_PREALLOC, as the program declares it
    });
    const counted = encodeArpValues(numPossibleCpus(), { requests: 7n, replies: 7n });
    withPinnedMap(rig.pinDir(0), MAP_NAMES.arpTable, (map) => map.update(encodeArpKey(TABLED), counted));
    withMaps((maps) => maps.rebuildFilter());
    expect(entriesOf(MAP_NAMES.arpTable)).toBe(4096);

    const third = await rig.attach(0, { mode: 'auto' });
    expect(third.adoptedMaps.sort()).toEqual(responderMapsBut(MAP_NAMES.arpTable));
    expect(entriesOf(MAP_NAMES.arpTable)).toBe(LIMITS.JUNEAU_ARP_TABLE_MAX);
    expect(asides()).toEqual([]);
    expect(withMaps((maps) => maps.addressKeys().sort())).toEqual([VIP, TABLED].sort());

    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: TABLED, count: 3 }));
    expect(repliesFor(frames, TABLED).map((f) => f.src)).toEqual([third.mac, third.mac, third.mac]);
    expect(withMaps((maps) => maps.lookupAddress(TABLED))).toMatchObject({ requests: 10n, replies: 10n });
  });

  test('a state map whose value no codec carries (juneau_config of 12 bytes) is refused by name; the pins stay as they were and the responder answers on', async () => {
    const before = await rig.xdpProgramId(0);
    pinMapOfShape(rig.pinDir(0), { name: MAP_NAMES.config, type: 'array', key: 4, value: 12, entries: 64 });
    await expect(rig.attach(0, { mode: 'auto' })).rejects.toThrow(/juneau_config.*needs a carry codec/s);
    expect(await rig.xdpProgramId(0)).toBe(before);
    expect(withPinnedMap(rig.pinDir(0), MAP_NAMES.config, (map) => map.valueSize)).toBe(12);
    expect(entriesOf(MAP_NAMES.arpTable)).toBe(LIMITS.JUNEAU_ARP_TABLE_MAX);
    expect(asides()).toEqual([]);
  });
});

describeAsRoot('removePins over versioned pin directories', () => {
  const bpffs = `/sys/fs/bpf/juneau-test-${process.pid}-pins`;
  const pinMap = (dir: string) =>
    execFileSync('bpftool', [
      'map',
      'create',
      path.join(dir, 'm'),
      'type',
      'array',
      'key',
      '4',
      'value',
      '4',
      'entries',
      '1',
      'name',
      'm',
    ]);
  afterAll(() => removePins(bpffs));

  test("uninstall: removing a version's directory keeps <bpffs>/juneau while another version is in it; removing <bpffs>/juneau removes every version", () => {
    const current = path.join(bpffs, PIN_SUBDIR);
    const other = path.join(bpffs, PIN_ROOT, 'v0');
    for (const dir of [current, other]) {
      ensureBpffs(dir);
      pinMap(dir);
    }
    removePins(other);
    expect(fs.readdirSync(path.join(bpffs, PIN_ROOT))).toEqual([path.basename(current)]);
    removePins(path.join(bpffs, PIN_ROOT));
    expect(fs.readdirSync(bpffs)).toEqual([]);
    // A version's directory that was the last one takes the root with it.
    ensureBpffs(current);
    pinMap(current);
    removePins(current);
    expect(fs.readdirSync(bpffs)).toEqual([]);
  });
});
