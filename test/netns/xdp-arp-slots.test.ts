// The address table as juneau_arp_slots (open addressing, read by the program without a call)
// with external_arp_table for what does not fit (bpf/juneau_maps.h): an address whose probes are
// all taken is answered from the hash, and both kinds count exactly.
import { LIMITS, arpSlot, encodeArpKey } from '../../runtime/agent/bpf/layout';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

/** `count` addresses in 10.0.0.0/8 whose first probe is the same slot. */
function sameFirstSlot(count: number): string[] {
  const out: string[] = [];
  const slot = arpSlot('10.0.0.1', 0);
  for (let n = 1; out.length < count; n++) {
    const address = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
    if (arpSlot(address, 0) === slot) out.push(address);
  }
  return out;
}

describeAsRoot('address slots, and external_arp_table for what does not fit', () => {
  const rig = useRig(1);

  test('ARP-10: the address past its last free probe is answered from external_arp_table; both kinds count exactly and leave cleanly', async () => {
    const { mac } = await rig.attach(0, { mode: 'generic' });
    const maps = rig.maps(0);
    const crowd = sameFirstSlot(LIMITS.JUNEAU_ARP_PROBES + 1);
    const overflow = crowd[LIMITS.JUNEAU_ARP_PROBES];
    expect(maps.syncAddresses(crowd).added.sort()).toEqual([...crowd].sort());
    // The probes are full, so the last one went to the hash; the others are not there.
    expect(maps.arpTableMap.keys().map((k) => k.toString('hex'))).toEqual([encodeArpKey(overflow).toString('hex')]);
    expect(maps.addressKeys().sort()).toEqual([...crowd].sort());

    const first = crowd[0];
    const frames = await rig.capture(async () => {
      await rig.sendArp({ sip: CLIENT_IP, tip: overflow, count: 3 });
      await rig.sendArp({ sip: CLIENT_IP, tip: first, count: 2 });
    });
    expect(repliesFor(frames, overflow).map((f) => f.src)).toEqual([mac, mac, mac]);
    expect(repliesFor(frames, first).map((f) => f.src)).toEqual([mac, mac]);
    expect(maps.lookupAddress(overflow)).toMatchObject({ requests: 3n, replies: 3n });
    expect(maps.lookupAddress(first)).toMatchObject({ requests: 2n, replies: 2n });
    expect(maps.lookupAddress(crowd[1])).toMatchObject({ requests: 0n, replies: 0n });

    // A slotted address leaves: its slot frees, the hash's entry stays where it is (it never
    // moves while it stays), and a newcomer takes the slot with zeroed counters.
    expect(maps.syncAddresses(crowd.slice(1)).removed).toEqual([first]);
    expect(maps.lookupAddress(first)).toBeUndefined();
    expect(maps.lookupAddress(overflow)).toMatchObject({ requests: 3n, replies: 3n });
    const [newcomer] = sameFirstSlot(LIMITS.JUNEAU_ARP_PROBES + 2).slice(-1);
    expect(maps.addAddress(newcomer)).toBe(true);
    expect(maps.lookupAddress(newcomer)).toMatchObject({ requests: 0n, replies: 0n });
    const gone = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: first, count: 2 }));
    expect(repliesFor(gone, first)).toEqual([]);
    expect(() => maps.addAddress('0.0.0.0')).toThrow(/0\.0\.0\.0 is never answered/);
  });

  test("ARP-10: with many slots taken, the counters read in batches are each address's own, as one by one", async () => {
    const maps = rig.maps(0);
    const many = Array.from({ length: 2000 }, (_, i) => `10.7.${i >> 8}.${i & 255}`);
    const vip = `${SUBNET}.57`;
    maps.syncAddresses([...many, vip]);
    expect(maps.arpTableMap.keys()).toEqual([]); // all in slots: a spread hash, an eighth full
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: vip, count: 3 }));
    expect(repliesFor(frames, vip)).toHaveLength(3);
    const all = maps.addresses(); // 2,001 of 16,384 slots: the batched read
    expect(all.size).toBe(2001);
    expect(all.get(vip)).toMatchObject({ requests: 3n, replies: 3n });
    expect(all.get(vip)).toEqual(maps.lookupAddress(vip));
    expect([...all.values()].filter((e) => e.requests > 0n)).toHaveLength(1);
  });
});
