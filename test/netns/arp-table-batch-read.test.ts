// The agent reads external_arp_table in batches (BPF_MAP_LOOKUP_BATCH) on every pass and poll
// (bench/scale): the batched read must return exactly what the key-by-key walk returns,
// keys and per-CPU counters, however the batch size cuts the table's buckets (a bucket larger than
// the batch makes the kernel answer ENOSPC, and the read retries it with more room).
import { describeAsRoot, useRig, CLIENT_IP, SUBNET, repliesFor } from './rig';
import { perCpuValueSize, ARP_VALUE, encodeArpKey, encodeArpValues } from '../../runtime/agent/bpf/layout';
import { numPossibleCpus } from '../../runtime/agent/bpf/libbpf';

jest.setTimeout(60_000);

describeAsRoot('external_arp_table batch read', () => {
  const rig = useRig(1);

  test('ARP-10: the batched read returns every entry and its counters, as the walk does, for any batch size', async () => {
    await rig.attach(0, { mode: 'generic' });
    const maps = rig.maps(0);
    const many = Array.from({ length: 3000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.7`);
    // Straight into external_arp_table (the hash, which the batched read is for): the agent would
    // put most of them in the slots.
    for (const a of many) maps.arpTableMap.insert(encodeArpKey(a), encodeArpValues(numPossibleCpus()));
    const vip = `${SUBNET}.70`;
    maps.addAddress(vip);
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: vip, count: 2 }));
    expect(repliesFor(frames, vip)).toHaveLength(2);
    const bytes = perCpuValueSize(ARP_VALUE.size, numPossibleCpus());
    const text = (pairs: Array<[Buffer, Buffer]>) =>
      pairs.map(([k, v]) => `${k.toString('hex')}=${v.toString('hex')}`).sort();
    const walked = text(maps.arpTableMap.entries(bytes));
    expect(walked).toHaveLength(3000);
    for (const batch of [1, 7, 1024, 100_000])
      expect(text(maps.arpTableMap.entriesBatched(bytes, batch))).toEqual(walked);
    expect(maps.addresses().get(vip)).toMatchObject({ requests: 2n, replies: 2n });
    expect(maps.addresses().size).toBe(3001);
    expect(maps.addressKeys().sort()).toEqual([...many, vip].sort());
  });
});
