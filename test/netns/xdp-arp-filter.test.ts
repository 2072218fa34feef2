// juneau_arp_filter: the XDP program consults it before each hash lookup of external_arp_table
// (the sender, for conflicts; the target, for the answer). It must never miss an address of the
// table, whichever way the table is written, or the node would stop answering or stop seeing
// conflicts for it; and what the filter rules out goes to the kernel exactly as before.
import { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { arpFilterBit, arpFilterHas } from '../../runtime/agent/bpf/layout';
import { writeDesired } from '../../runtime/agent/arp/writer';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

jest.setTimeout(30_000);

const OTHER_MAC = '02:00:00:00:0c:0f';

describeAsRoot('juneau_arp_filter follows external_arp_table', () => {
  const rig = useRig(1);
  const maps = (): ArpMaps => rig.maps(0);
  const table = () => [...maps().addresses().keys()];

  test('ARP-10: every address of the table has its bit after sync, add and remove; a removed address leaves its bit unless another shares it', async () => {
    await rig.attach(0, { mode: 'generic' });
    const many = Array.from({ length: 200 }, (_, i) => `10.${i >> 8}.${i & 255}.1`);
    maps().syncAddresses(many);
    for (const a of table()) expect(arpFilterHas(maps().filter(), a)).toBe(true);
    maps().syncAddresses(many.slice(100));
    for (const a of table()) expect(arpFilterHas(maps().filter(), a)).toBe(true);
    const kept = new Set(table().map(arpFilterBit));
    const cleared = many.slice(0, 100).filter((a) => !kept.has(arpFilterBit(a)));
    expect(cleared.length).toBeGreaterThan(90);
    for (const a of cleared) expect(arpFilterHas(maps().filter(), a)).toBe(false);
    maps().syncAddresses([]);
    expect(maps().filter().equals(Buffer.alloc(maps().filter().length))).toBe(true);
  });

  test('ARP-10 RFC 5227: an address added alone is answered and its conflicts counted; removed, it is neither, its stale bit costing only the lookup', async () => {
    const vip = `${SUBNET}.54`;
    maps().addAddress(vip);
    let frames = await rig.capture(async () => {
      await rig.sendArp({ sip: CLIENT_IP, tip: vip, count: 2 });
      await rig.sendArp({ sip: vip, tip: CLIENT_IP, sha: OTHER_MAC, count: 1 });
    });
    expect(repliesFor(frames, vip)).toHaveLength(2);
    expect(maps().lookupAddress(vip)).toMatchObject({
      requests: 2n,
      replies: 2n,
      conflicts: 1n,
      lastConflictMac: OTHER_MAC,
    });
    const unmappedBefore = maps().stats().JUNEAU_PASS_UNMAPPED;
    expect(maps().removeAddress(vip)).toBe(true);
    // The bit stays until a rebuild (a false positive): the table lookup decides.
    expect(arpFilterHas(maps().filter(), vip)).toBe(true);
    frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: vip, count: 2 }));
    expect(repliesFor(frames, vip)).toHaveLength(0);
    expect(maps().stats().JUNEAU_PASS_UNMAPPED - unmappedBefore).toBe(2n);
    maps().rebuildFilter();
    expect(arpFilterHas(maps().filter(), vip)).toBe(false);
  });

  test("ARP-10: the agent's writer clears the bits of the addresses it removed, in one rebuild per pass", () => {
    const [a, b] = [`${SUBNET}.55`, `${SUBNET}.56`];
    writeDesired(maps(), { addresses: [a, b], guard: { drop: [], allow: [] } });
    expect([arpFilterHas(maps().filter(), a), arpFilterHas(maps().filter(), b)]).toEqual([true, true]);
    writeDesired(maps(), { addresses: [b], guard: { drop: [], allow: [] } });
    expect(table()).toEqual([b]);
    expect(arpFilterHas(maps().filter(), a)).toBe(arpFilterBit(a) === arpFilterBit(b));
    expect(arpFilterHas(maps().filter(), b)).toBe(true);
  });
});
