// Upgrading over an older agent's pins when enum juneau_reason grew (ARP-12 appended three
// reasons, so juneau_stats went from 13 slots to 16). libbpf refuses to reuse a pinned map of
// another size, so without care the new agent could not load at all on such a node. The older
// map is made here the way libbpf would have made it (bpftool: same type, key, value and flags,
// 13 entries), so the test does not depend on an old build.
import { MAP_NAMES, REASONS } from '../../runtime/agent/bpf/layout';
import type { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { pinOlderMap, responderMapsBut, withArpMaps, withPinnedMap } from './pins';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const VIP = `${SUBNET}.50`;
const SLOTS_BEFORE_ARP_12 = 13;

describeAsRoot('upgrade over pins whose juneau_stats has fewer reason slots', () => {
  const rig = useRig(1);
  const slots = () => withPinnedMap(rig.pinDir(0), MAP_NAMES.stats, (map) => map.info.maxEntries);
  const withMaps = <T>(use: (maps: ArpMaps) => T): T => withArpMaps(rig.pinDir(0), use);

  test('OPS-1 ARP-12: the new responder loads, replaces only the stats map (counters), adopts the table and keeps answering', async () => {
    const first = await rig.attach(0, { mode: 'generic' });
    withMaps((maps) => maps.addAddress(VIP));
    pinOlderMap(rig.pinDir(0), {
      name: MAP_NAMES.stats,
      type: 'percpu_array',
      key: 4,
      value: 8,
      entries: SLOTS_BEFORE_ARP_12,
    });
    expect(slots()).toBe(SLOTS_BEFORE_ARP_12);

    const second = await rig.attach(0, { mode: 'auto' });
    expect(second.replacedProgramId).toBe(first.programId);
    expect(second.adoptedMaps.sort()).toEqual(responderMapsBut(MAP_NAMES.stats));
    expect(slots()).toBe(REASONS.JUNEAU_REASON_MAX);
    expect(withMaps((maps) => [...maps.addresses().keys()])).toEqual([VIP]);

    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 2 }));
    expect(repliesFor(frames, VIP).map((f) => f.src)).toEqual([first.mac, first.mac]);
    expect(withMaps((maps) => maps.stats().JUNEAU_TX_REPLY)).toBe(2n);
  });
});
