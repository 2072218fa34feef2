// ARP-12: the guard also applies to ARP requests that arrive VLAN-tagged (802.1Q, 802.1ad, QinQ).
// One node whose kernel holds the VIP and a guarded address nobody owns on a kube-ipvs0-like
// interface with arp_ignore=0 (the incident behind OPS-1). Frames are built byte by byte, tags in the frame, as a
// switch trunk port delivers them. What the responder does with tags is written at the top of
// bpf/xdp_arp.bpf.c: priority tags (VLAN id 0) are our network and handled like untagged
// frames; a nonzero VLAN id is another network, where it never answers, only guards.
//
// This machine's kernel has neither 802.1Q sub-interfaces (`ip link add ... type vlan`: "Unknown
// device type") nor bridge VLAN filtering, so no kernel here can answer on VLAN 100. The bypass
// the guard closes is shown with what every kernel does: it strips priority tags (VLAN id 0, of
// either TPID, nested too, any number of them) and answers the request as if untagged. Requests
// with a VLAN id are asserted by their counters and by the absence of any reply. The kernel also
// takes a request sent to a multicast MAC like a broadcast one: the guard covers those too.
import { poolItemsToPrefixes } from '../../runtime/agent/bpf/prefixes';
import { ipv4ToBytes, macToBytes } from '../../runtime/agent/bpf/addr';
import type { ReasonName } from '../../runtime/agent/bpf/layout';
import { ETH_P_8021AD, ETH_P_8021Q, type Frame, type VlanTag } from './pcap';
import { CLIENT_IP, Rig, SUBNET, describeAsRoot } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const POOL = [`${SUBNET}.0/25`];
const VIP = `${SUBNET}.60`; // in node 0's external_arp_table
const HELD_BY_NOBODY = `${SUBNET}.61`; // on the kernel's kube-ipvs0, in no external_arp_table
const OTHER_MAC = '02:00:00:00:0b:0b';
const MULTICAST_MAC = '01:00:5e:00:00:01';

type Stack = readonly VlanTag[];
const q = (id: number): VlanTag => ({ tpid: ETH_P_8021Q, id });
const ad = (id: number): VlanTag => ({ tpid: ETH_P_8021AD, id });

/** Priority tags only: the untagged network (802.1Q 6.9.1), as the kernel treats them. */
const PRIORITY: ReadonlyArray<readonly [string, Stack]> = [
  ['802.1Q VLAN id 0', [q(0)]],
  ['802.1ad VLAN id 0', [ad(0)]],
  ['QinQ 802.1ad 0 + 802.1Q 0', [ad(0), q(0)]],
  ['three priority tags', [ad(0), q(0), q(0)]],
  ['eight priority tags (JUNEAU_VLAN_PRIORITY_MAX_DEPTH)', Array<VlanTag>(8).fill(q(0))],
];

/** A VLAN id somewhere in the stack: another L2 network. */
const OTHER_VLAN: ReadonlyArray<readonly [string, Stack]> = [
  ['802.1Q VLAN 100', [q(100)]],
  ['802.1ad VLAN 200', [ad(200)]],
  ['QinQ 802.1ad 300 + 802.1Q 30', [ad(300), q(30)]],
  ['QinQ 802.1ad 0 + 802.1Q 100', [ad(0), q(100)]],
];

interface ArpFrame {
  readonly op?: 'request' | 'reply';
  /** The destination MAC; broadcast unless given. */
  readonly dst?: string;
  readonly sha: string;
  readonly tags: Stack;
  readonly sip: string;
  readonly tip: string;
}

/** An ARP frame behind `tags` (outermost first; priority bits set, which must not matter). */
function arpFrame(f: ArpFrame): Buffer {
  const tagBytes = f.tags.map((t) => {
    const b = Buffer.alloc(4);
    b.writeUInt16BE(t.tpid, 0);
    b.writeUInt16BE((5 << 13) | t.id, 2);
    return b;
  });
  const arp = Buffer.alloc(28);
  arp.writeUInt16BE(1, 0); // Ethernet
  arp.writeUInt16BE(0x0800, 2); // IPv4
  arp.writeUInt8(6, 4);
  arp.writeUInt8(4, 5);
  arp.writeUInt16BE(f.op === 'reply' ? 2 : 1, 6);
  macToBytes(f.sha).copy(arp, 8);
  ipv4ToBytes(f.sip).copy(arp, 14);
  ipv4ToBytes(f.tip).copy(arp, 24);
  const dst = f.dst ? macToBytes(f.dst) : Buffer.alloc(6, 0xff);
  return Buffer.concat([dst, macToBytes(f.sha), ...tagBytes, Buffer.from([0x08, 0x06]), arp]);
}

/** ARP replies answering for `address`: who sent them and behind which tags. */
function replies(frames: Frame[], address: string): Array<{ src: string; vlans: Stack }> {
  return frames.filter((f) => f.arp?.op === 2 && f.arp.sip === address).map((f) => ({ src: f.src, vlans: f.vlans }));
}

describeAsRoot('ARP-12: the guard applies to VLAN-tagged ARP requests (802.1Q, 802.1ad, QinQ)', () => {
  const rig = new Rig(1);
  let mac = '';
  let ifindex = 0;
  const setGuard = (guard: boolean) => rig.maps(0).setInterfaceConfig(ifindex, { mac, guard, conflictDetection: true });
  const request = (tags: Stack, tip: string, count: number) =>
    rig.sendFrame(arpFrame({ sha: rig.clientMac, tags, sip: CLIENT_IP, tip }), count);
  const multicast = (tags: Stack, tip: string, count: number) =>
    rig.sendFrame(arpFrame({ dst: MULTICAST_MAC, sha: rig.clientMac, tags, sip: CLIENT_IP, tip }), count);
  const counters = () => rig.maps(0).stats();
  /** Packets counted for `reason` since `before` was read. */
  const since = (before: Record<ReasonName, bigint>, reason: ReasonName) => counters()[reason] - before[reason];

  beforeAll(async () => {
    await rig.setup();
    const ns = rig.node(0);
    // kube-proxy ipvs with strictARP: false (the incident behind OPS-1), as in xdp-arp-guard.test.ts.
    await rig.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kube-ipvs0p');
    await rig.in(ns, 'ip', 'addr', 'add', `${VIP}/32`, 'dev', 'kube-ipvs0');
    await rig.in(ns, 'ip', 'addr', 'add', `${HELD_BY_NOBODY}/32`, 'dev', 'kube-ipvs0');
    for (const scope of ['all', 'eth0']) await rig.sysctl(ns, `net.ipv4.conf.${scope}.arp_ignore`, '0');
    const attached = await rig.attach(0, { mode: 'generic' });
    mac = attached.mac;
    ifindex = attached.ifindex;
    rig.maps(0).syncGuard({ drop: poolItemsToPrefixes(POOL), allow: [rig.nodeIp(0)] });
    rig.maps(0).syncAddresses([VIP]);
  }, 90_000);

  afterAll(async () => {
    await rig.destroy();
  }, 60_000);

  test.each(PRIORITY)(
    'ARP-12 the bypass, %s: with the guard off, the kernel answers a tagged request for a guarded address it holds',
    async (_name, tags) => {
      setGuard(false);
      try {
        const frames = await rig.capture(() => request(tags, HELD_BY_NOBODY, 3));
        expect(replies(frames, HELD_BY_NOBODY)).toEqual(Array(3).fill({ src: mac, vlans: [] }));
      } finally {
        setGuard(true);
      }
    },
  );

  test.each(PRIORITY)(
    'ARP-12 EN-11, %s: with the guard on, the request for a guarded address this node does not answer is dropped (drop_guarded)',
    async (_name, tags) => {
      const before = counters();
      const hits = rig
        .maps(0)
        .guardEntries()
        .find((e) => e.action === 'drop')!.hits;
      const frames = await rig.capture(() => request(tags, HELD_BY_NOBODY, 5));
      expect(replies(frames, HELD_BY_NOBODY)).toEqual([]);
      expect(since(before, 'JUNEAU_DROP_GUARDED')).toBe(5n);
      expect(
        rig
          .maps(0)
          .guardEntries()
          .find((e) => e.action === 'drop')!.hits - hits,
      ).toBe(5n);
    },
  );

  test.each(PRIORITY)(
    'ARP-12 EN-11, %s: the responder answers for its VIP, keeping the tags; the kernel does not answer too (tx_reply)',
    async (_name, tags) => {
      const before = counters();
      const frames = await rig.capture(() => request(tags, VIP, 3));
      expect(replies(frames, VIP)).toEqual(Array(3).fill({ src: mac, vlans: tags }));
      expect(since(before, 'JUNEAU_TX_REPLY')).toBe(3n);
    },
  );

  test.each(OTHER_VLAN)(
    'ARP-12 EN-11, %s: a request for a guarded address this node does not answer is dropped (drop_guarded_vlan)',
    async (_name, tags) => {
      const before = counters();
      const frames = await rig.capture(() => request(tags, HELD_BY_NOBODY, 5));
      expect(replies(frames, HELD_BY_NOBODY)).toEqual([]);
      expect(since(before, 'JUNEAU_DROP_GUARDED_VLAN')).toBe(5n);
      expect(since(before, 'JUNEAU_DROP_GUARDED')).toBe(0n);
    },
  );

  test.each(OTHER_VLAN)(
    'ARP-12, %s: a request for the VIP is left to the kernel (pass_vlan_ours); the responder answers nothing on another VLAN',
    async (_name, tags) => {
      const before = counters();
      const entry = rig.maps(0).lookupAddress(VIP)!;
      const frames = await rig.capture(() => request(tags, VIP, 3));
      expect(replies(frames, VIP)).toEqual([]);
      expect(since(before, 'JUNEAU_PASS_VLAN_OURS')).toBe(3n);
      expect(since(before, 'JUNEAU_TX_REPLY')).toBe(0n);
      expect(rig.maps(0).lookupAddress(VIP)).toMatchObject({ requests: entry.requests, replies: entry.replies });
    },
  );

  test('ARP-12 RFC 5227: a claim of the VIP behind priority tags is a conflict; the same claim on another VLAN is not', async () => {
    const claim = (tags: Stack) =>
      rig.sendFrame(arpFrame({ op: 'reply', sha: OTHER_MAC, tags, sip: VIP, tip: VIP }), 2);
    const before = rig.maps(0).lookupAddress(VIP)!.conflicts;
    await claim([q(100)]);
    await claim([ad(300), q(30)]);
    expect(rig.maps(0).lookupAddress(VIP)!.conflicts).toBe(before);
    await claim([ad(0), q(0)]);
    expect(rig.maps(0).lookupAddress(VIP)).toMatchObject({ conflicts: before + 2n, lastConflictMac: OTHER_MAC });
  });

  test('ARP-12: parsing is bounded: three tags pass unparsed (pass_vlan_too_deep), a frame ending inside a tag passes (pass_truncated)', async () => {
    const before = counters();
    await request([ad(300), q(30), q(3)], HELD_BY_NOBODY, 4);
    await request([ad(0), q(0), q(100)], HELD_BY_NOBODY, 2); // a VLAN id behind two priority tags
    await request(Array<VlanTag>(9).fill(q(0)), HELD_BY_NOBODY, 3); // beyond JUNEAU_VLAN_PRIORITY_MAX_DEPTH
    const cut = arpFrame({ sha: rig.clientMac, tags: [ad(300), q(30)], sip: CLIENT_IP, tip: HELD_BY_NOBODY });
    await rig.sendFrame(cut.subarray(0, 12 + 4 + 2), 2); // addresses, one tag, half of the next
    expect(since(before, 'JUNEAU_PASS_VLAN_TOO_DEEP')).toBe(9n);
    expect(since(before, 'JUNEAU_PASS_TRUNCATED')).toBe(2n);
    expect(since(before, 'JUNEAU_DROP_GUARDED_VLAN')).toBe(0n);
    expect(since(before, 'JUNEAU_DROP_GUARDED')).toBe(0n);
  });

  test('EN-11 the bypass: with the guard off, the kernel answers a request sent to a multicast MAC for a guarded address it holds', async () => {
    setGuard(false);
    try {
      const frames = await rig.capture(() => multicast([], HELD_BY_NOBODY, 3));
      expect(replies(frames, HELD_BY_NOBODY)).toEqual(Array(3).fill({ src: mac, vlans: [] }));
    } finally {
      setGuard(true);
    }
  });

  test('EN-11: a request sent to a multicast MAC is guarded (drop_guarded, drop_guarded_vlan), never answered here (pass_not_for_us); unicast to another MAC passes', async () => {
    const before = counters();
    const entry = rig.maps(0).lookupAddress(VIP)!;
    const frames = await rig.capture(async () => {
      await multicast([], HELD_BY_NOBODY, 3);
      await multicast([q(100)], HELD_BY_NOBODY, 2);
      await multicast([], VIP, 2);
      await rig.sendFrame(
        arpFrame({ dst: OTHER_MAC, sha: rig.clientMac, tags: [], sip: CLIENT_IP, tip: HELD_BY_NOBODY }),
        2,
      );
    });
    expect(replies(frames, HELD_BY_NOBODY)).toEqual([]);
    expect(since(before, 'JUNEAU_DROP_GUARDED')).toBe(3n);
    expect(since(before, 'JUNEAU_DROP_GUARDED_VLAN')).toBe(2n);
    expect(since(before, 'JUNEAU_PASS_NOT_FOR_US')).toBe(4n);
    // The VIP's request is left to the kernel (which holds it here and answers): the responder
    // sent nothing and counted nothing against the VIP.
    expect(since(before, 'JUNEAU_TX_REPLY')).toBe(0n);
    expect(rig.maps(0).lookupAddress(VIP)).toMatchObject({ requests: entry.requests, replies: entry.replies });
  });

  test('untagged requests are unchanged: the VIP is answered by the responder, the guarded address dropped', async () => {
    const before = counters();
    const frames = await rig.capture(async () => {
      await rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 3 });
      await rig.sendArp({ sip: CLIENT_IP, tip: HELD_BY_NOBODY, count: 3 });
    });
    expect(replies(frames, VIP)).toEqual(Array(3).fill({ src: mac, vlans: [] }));
    expect(replies(frames, HELD_BY_NOBODY)).toEqual([]);
    expect(since(before, 'JUNEAU_TX_REPLY')).toBe(3n);
    expect(since(before, 'JUNEAU_DROP_GUARDED')).toBe(3n);
  });
});
