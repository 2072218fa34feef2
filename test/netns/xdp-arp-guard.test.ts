// The OPS-1 incident in miniature: two nodes on one segment, and on both a kube-ipvs0-like
// dummy interface holding the LoadBalancer VIP with arp_ignore=0, so both kernels are willing
// to answer ARP for it. Only node 0 owns the VIP (it is in node 0's external_arp_table). The
// guard must leave exactly one answering MAC (EN-11, OPS-1); conflict detection must see a
// second node claiming the address.
import { poolItemsToPrefixes } from '../../runtime/agent/bpf/prefixes';
import { CLIENT_IP, Rig, SUBNET, arpFramesAbout, describeAsRoot, repliesFor } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const POOL = [`${SUBNET}.0/25`];
const VIP = `${SUBNET}.60`; // owned by node 0
const HELD_BY_NOBODY = `${SUBNET}.61`; // on both kernels' kube-ipvs0, in no external_arp_table

describeAsRoot('the OPS-1 incident replayed: guard and conflict detection on two nodes', () => {
  const rig = new Rig(2);
  const macs: string[] = [];
  const ifindexes: number[] = [];

  const setGuard = (node: number, guard: boolean) =>
    rig.maps(node).setInterfaceConfig(ifindexes[node], { mac: macs[node], guard, conflictDetection: true });

  beforeAll(async () => {
    await rig.setup();
    for (const node of [0, 1]) {
      const ns = rig.node(node);
      // kube-proxy ipvs with strictARP: false (the incident behind OPS-1): every LB IP on kube-ipvs0, arp_ignore=0.
      // kube-proxy uses a dummy device, left down; this kernel may lack the dummy driver, and a
      // veth left down is the same thing to ARP: a local address on another interface.
      await rig.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kube-ipvs0p');
      await rig.in(ns, 'ip', 'addr', 'add', `${VIP}/32`, 'dev', 'kube-ipvs0');
      await rig.in(ns, 'ip', 'addr', 'add', `${HELD_BY_NOBODY}/32`, 'dev', 'kube-ipvs0');
      for (const scope of ['all', 'eth0']) await rig.sysctl(ns, `net.ipv4.conf.${scope}.arp_ignore`, '0');
      const attached = await rig.attach(node, { mode: 'generic' });
      macs[node] = attached.mac;
      ifindexes[node] = attached.ifindex;
      rig.maps(node).syncGuard({ drop: poolItemsToPrefixes(POOL), allow: [rig.nodeIp(node)] });
    }
    rig.maps(0).syncAddresses([VIP]);
  }, 90_000);

  afterAll(async () => {
    await rig.destroy();
  }, 60_000);

  test('the OPS-1 incident as it happened: with the guard off, both kernels answer for the VIP (the test can see the race)', async () => {
    setGuard(0, false);
    setGuard(1, false);
    try {
      const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 5 }));
      const answering = new Set(repliesFor(frames, VIP).map((f) => f.arp!.sha));
      expect(answering).toEqual(new Set(macs));
    } finally {
      setGuard(0, true);
      setGuard(1, true);
    }
  });

  test('EN-11 OPS-1 OPS-2: with the guard on, 60 broadcast requests get exactly 60 replies, all from the owner; the other node drops and counts them', async () => {
    const before = rig.maps(1).stats().JUNEAU_DROP_GUARDED;
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 60, gapMs: 5 }));
    const replies = repliesFor(frames, VIP);
    expect(replies).toHaveLength(60);
    expect(new Set(replies.map((f) => f.arp!.sha))).toEqual(new Set([macs[0]]));
    expect(rig.maps(1).stats().JUNEAU_DROP_GUARDED - before).toBe(60n);
    const rule = rig
      .maps(1)
      .guardEntries()
      .find((e) => e.action === 'drop');
    expect(rule?.hits).toBeGreaterThanOrEqual(60n);
  });

  test('OPS-3: a fresh client resolves the VIP to the owner, every time', async () => {
    for (let i = 0; i < 5; i++) expect(await rig.resolveFresh(VIP)).toBe(macs[0]);
  });

  test('guard: a guarded address held by both kernels but owned by nobody gets no answer at all', async () => {
    const before = [0, 1].map((n) => rig.maps(n).stats().JUNEAU_DROP_GUARDED);
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: HELD_BY_NOBODY, count: 5 }));
    expect(repliesFor(frames, HELD_BY_NOBODY)).toEqual([]);
    for (const n of [0, 1]) expect(rig.maps(n).stats().JUNEAU_DROP_GUARDED - before[n]).toBe(5n);
    expect(await rig.resolveFresh(HELD_BY_NOBODY)).toBeUndefined();
  });

  test("guard never drops the node's own address inside a pool: each kernel still answers for its node IP", async () => {
    for (const n of [0, 1]) {
      const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: rig.nodeIp(n), count: 3 }));
      expect(repliesFor(frames, rig.nodeIp(n)).map((f) => f.src)).toEqual([macs[n], macs[n], macs[n]]);
      const allow = rig
        .maps(n)
        .guardEntries()
        .find((e) => e.action === 'allow');
      expect(allow).toMatchObject({ address: rig.nodeIp(n), prefixLength: 32 });
      expect(allow!.hits).toBeGreaterThanOrEqual(3n);
    }
    expect(await rig.tcpRefused(rig.nodeIp(1))).toBe(true);
  });

  test("RFC 5227: a second node claiming the VIP (a broadcast ARP reply from it) is counted on the owner with that node's MAC", async () => {
    const before = rig.maps(0).lookupAddress(VIP)!;
    await rig.in(
      rig.node(1),
      'mausezahn',
      'eth0',
      '-q',
      '-c',
      '2',
      '-b',
      'bcast',
      '-t',
      'arp',
      `reply, sip=${VIP}, tip=${VIP}`,
    );
    const after = rig.maps(0).lookupAddress(VIP)!;
    expect(after.conflicts - before.conflicts).toBe(2n);
    expect(after.lastConflictMac).toBe(macs[1]);
  });

  test('ARP-10: moving the VIP to node 1 moves the answer; the map change alone makes neither XDP program send anything (ARP-8 with an agent: agent-per-event.test.ts)', async () => {
    const quiet = await rig.capture(async () => {
      rig.maps(0).syncAddresses([]);
      rig.maps(1).syncAddresses([VIP]);
    }, 1000);
    expect(arpFramesAbout(quiet, macs[0], [VIP])).toEqual([]);
    expect(arpFramesAbout(quiet, macs[1], [VIP])).toEqual([]);

    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 20 }));
    const replies = repliesFor(frames, VIP);
    expect(replies).toHaveLength(20);
    expect(new Set(replies.map((f) => f.arp!.sha))).toEqual(new Set([macs[1]]));
  });
});
