// The XDP responder answering real ARP between real network namespaces (generic XDP on a veth).
import { ARP_REPLY } from './pcap';
import { CLIENT_IP, Rig, SUBNET, arpFramesAbout, describeAsRoot, repliesFor } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const VIP = `${SUBNET}.50`;
const UNOWNED = `${SUBNET}.77`;

describeAsRoot('XDP ARP responder on one node', () => {
  const rig = new Rig(1);
  let nodeMac = '';
  let ifindex = 0;

  beforeAll(async () => {
    await rig.setup();
    const attached = await rig.attach(0, { mode: 'generic' });
    nodeMac = attached.mac;
    ifindex = attached.ifindex;
    expect(attached.mode).toBe('generic');
    rig.maps(0).addAddress(VIP);
  }, 60_000);

  afterAll(async () => {
    await rig.destroy();
  }, 60_000);

  test('EN-10 ARP-10 OPS-2: 40 broadcast requests for a mapped address get 40 replies, all with the node interface MAC, and the counters move', async () => {
    const before = rig.maps(0).lookupAddress(VIP)!;
    const statsBefore = rig.maps(0).stats();
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 40, gapMs: 5 }));

    const replies = repliesFor(frames, VIP);
    expect(replies).toHaveLength(40);
    for (const reply of replies) {
      expect(reply.src).toBe(nodeMac);
      expect(reply.dst).toBe(rig.clientMac);
      expect(reply.arp).toEqual({ op: ARP_REPLY, sha: nodeMac, sip: VIP, tha: rig.clientMac, tip: CLIENT_IP });
    }
    const after = rig.maps(0).lookupAddress(VIP)!;
    expect(after.requests - before.requests).toBe(40n);
    expect(after.replies - before.replies).toBe(40n);
    expect(rig.maps(0).stats().JUNEAU_TX_REPLY - statsBefore.JUNEAU_TX_REPLY).toBe(40n);
  });

  test("OPS-3 EN-10: a fresh client resolves the mapped address to the node MAC (neighbour table), and arping's unicast re-probes are answered too", async () => {
    expect(await rig.resolveFresh(VIP)).toBe(nodeMac);
    // Without -b, arping sends its second request unicast to the MAC that answered the first.
    const statsBefore = rig.maps(0).stats();
    const macs = await rig.arping(VIP, ['-c', '2', '-w', '3']);
    expect(macs).toEqual([nodeMac, nodeMac]);
    expect(rig.maps(0).stats().JUNEAU_TX_REPLY - statsBefore.JUNEAU_TX_REPLY).toBe(2n);
  });

  test('an unmapped address passes to the kernel: it answers for its own address, and nobody for an address no one holds', async () => {
    const statsBefore = rig.maps(0).stats();
    const frames = await rig.capture(async () => {
      await rig.sendArp({ sip: CLIENT_IP, tip: rig.nodeIp(0) });
      await rig.sendArp({ sip: CLIENT_IP, tip: UNOWNED, count: 3 });
    });
    expect(repliesFor(frames, rig.nodeIp(0)).map((f) => f.src)).toEqual([nodeMac]);
    expect(repliesFor(frames, UNOWNED)).toHaveLength(0);
    expect(rig.maps(0).stats().JUNEAU_PASS_UNMAPPED - statsBefore.JUNEAU_PASS_UNMAPPED).toBe(4n);
    expect(rig.maps(0).stats().JUNEAU_TX_REPLY).toBe(statsBefore.JUNEAU_TX_REPLY);
  });

  test('ARP-8: a gratuitous announcement for a mapped address is not answered and the node emits nothing', async () => {
    const statsBefore = rig.maps(0).stats();
    const frames = await rig.capture(() => rig.sendArp({ sip: VIP, tip: VIP, count: 3 }), 1000);
    expect(arpFramesAbout(frames, nodeMac, [VIP])).toEqual([]);
    expect(rig.maps(0).stats().JUNEAU_PASS_GRATUITOUS - statsBefore.JUNEAU_PASS_GRATUITOUS).toBe(3n);
  });

  test('an RFC 5227 probe (sender 0.0.0.0) is answered exactly the way Linux answers one', async () => {
    const statsBefore = rig.maps(0).stats();
    const frames = await rig.capture(async () => {
      await rig.sendArp({ sip: '0.0.0.0', tip: rig.nodeIp(0) }); // the kernel answers this one
      await rig.sendArp({ sip: '0.0.0.0', tip: VIP }); // the XDP program answers this one
    });
    expect(repliesFor(frames, rig.nodeIp(0))).toHaveLength(1);
    expect(repliesFor(frames, VIP)).toHaveLength(1);
    const [linux] = repliesFor(frames, rig.nodeIp(0));
    const [ours] = repliesFor(frames, VIP);
    expect(linux.arp?.sha).toBe(nodeMac);
    // Same shape: unicast to the prober, its MAC as target hw, 0.0.0.0 as target address.
    expect({ ...ours, arp: { ...ours.arp, sip: 'probed' } }).toEqual({
      ...linux,
      arp: { ...linux.arp, sip: 'probed' },
    });
    expect(ours.arp).toEqual({ op: ARP_REPLY, sha: nodeMac, sip: VIP, tha: rig.clientMac, tip: '0.0.0.0' });
    expect(rig.maps(0).stats().JUNEAU_TX_PROBE_REPLY - statsBefore.JUNEAU_TX_PROBE_REPLY).toBe(1n);
  });

  test('RFC 5227 conflict detection: a sender claiming a mapped address with another MAC is counted with that MAC; our own MAC is not a conflict', async () => {
    const intruder = '02:00:00:00:0c:0f';
    const before = rig.maps(0).lookupAddress(VIP)!;
    await rig.sendArp({ op: 'reply', sha: intruder, sip: VIP, tip: CLIENT_IP, ethDst: nodeMac, count: 2 });
    await rig.sendArp({ sha: intruder, sip: VIP, tip: rig.nodeIp(0) });
    await rig.sendArp({ sha: nodeMac, sip: VIP, tip: rig.nodeIp(0) });
    const after = rig.maps(0).lookupAddress(VIP)!;
    expect(after.conflicts - before.conflicts).toBe(3n);
    expect(after.lastConflictMac).toBe(intruder);
    expect(after.lastConflictNs).toBeGreaterThan(before.lastConflictNs);
  });

  test('conflict detection switched off in juneau_config counts nothing', async () => {
    const maps = rig.maps(0);
    /** Frames the program finished, by every exit reason (JUNEAU_EVENT_* are counted besides one). */
    const exits = (stats: Record<string, bigint>) =>
      Object.entries(stats)
        .filter(([reason]) => !reason.startsWith('JUNEAU_EVENT_'))
        .reduce((n, [, packets]) => n + packets, 0n);
    maps.setInterfaceConfig(ifindex, { mac: nodeMac, guard: true, conflictDetection: false });
    try {
      const before = maps.lookupAddress(VIP)!;
      const statsBefore = maps.stats();
      await rig.sendArp({ sha: '02:00:00:00:0c:10', sip: VIP, tip: rig.nodeIp(0) });
      const statsAfter = maps.stats();
      // The frame reached the program (one exit more), and no conflict was counted for it.
      console.log(`xdp-arp-answer: conflict detection off, ${exits(statsAfter) - exits(statsBefore)} frame(s) seen`);
      expect(exits(statsAfter) - exits(statsBefore)).toBe(1n);
      expect(statsAfter.JUNEAU_EVENT_CONFLICT - statsBefore.JUNEAU_EVENT_CONFLICT).toBe(0n);
      expect(maps.lookupAddress(VIP)!.conflicts).toBe(before.conflicts);
    } finally {
      maps.setInterfaceConfig(ifindex, { mac: nodeMac, guard: true, conflictDetection: true });
    }
  });

  test('non-ARP traffic passes untouched: TCP to the node gets its RST back', async () => {
    const statsBefore = rig.maps(0).stats();
    for (let i = 0; i < 3; i++) expect(await rig.tcpRefused(rig.nodeIp(0))).toBe(true);
    expect(rig.maps(0).stats().JUNEAU_PASS_NOT_ARP - statsBefore.JUNEAU_PASS_NOT_ARP).toBeGreaterThanOrEqual(3n);
  });

  test('ARP-10: a removed address is no longer answered', async () => {
    expect(rig.maps(0).removeAddress(VIP)).toBe(true);
    try {
      const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 3 }));
      expect(repliesFor(frames, VIP)).toHaveLength(0);
    } finally {
      rig.maps(0).addAddress(VIP);
    }
  });
});
