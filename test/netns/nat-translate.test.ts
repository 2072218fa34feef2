// The ElasticIP 1:1 NAT program (bpf/tc_nat.bpf.c) alone, in real namespaces with real traffic:
// router -> node (tc_nat_in/out on ext0, tc_nat_pod on pod0) -> pod; a server behind the router
// on an MTU 1280 link. Loaded by a process that exits before any packet flows (NAT-4). Receiving
// sockets prove what the kernel accepted (checksums verified in software: offloads are off);
// captures prove the bytes (every checksum recomputed here).
import { describeAsRoot } from './rig';
import { EIP, NODE_EXT, NODE_POD, POD, ROUTER_EXT, SERVER, SERVER_MTU, intactEcho, useNatRig } from './nat-rig';
import { type IcmpErrorSummary, checkPacket, craftFrame, icmpErrors, ipv4Packets as ipv4 } from './ipv4';

interface Answers {
  answers: Array<{ from: string; len: number; ok: boolean }>;
  errors: string[];
}
interface Seen {
  seen: Array<{ from: string; port: number; len: number; ok: boolean }>;
}

describeAsRoot('ElasticIP 1:1 NAT at TC (NAT-1..NAT-5, EIP-6), packets through real namespaces', () => {
  const rig = useNatRig();

  beforeAll(async () => {
    await rig.attach();
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
  }, 60_000);

  const counters = () => rig.counters(EIP);
  const stats = () => rig.maps().stats();
  const atPod = (filter: string[]) => ({ ns: rig.pod, dev: 'eth0', filter });
  const atRouter = (filter: string[]) => ({ ns: rig.router, dev: 'r0', filter });
  /** nat_tool.py udp-send from `ns`: `count` datagrams of `len` bytes, DF set or not. */
  const udpSend = (ns: string, to: string, port: number, len: number, count: number, df: 'df' | 'nodf') => () =>
    rig.tool<Answers>(ns, 'udp-send', to, String(port), String(len), String(count), df);
  /** The capture holds one ICMP destination-unreachable, its IP, ICMP and embedded IP checksums valid, with `fields`. */
  const expectOneUnreachable = (frames: Buffer[], fields: Partial<IcmpErrorSummary>) => {
    const errors = icmpErrors(frames);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ type: 3, ip: true, icmp: true, innerIp: true, ...fields });
  };
  /** Fragmentation needed, naming the MTU of the server's link. */
  const fragNeeded = { code: 4, mtu: SERVER_MTU };

  test('NAT-1, NAT-3: a TCP connection to the ElasticIP reaches the pod, which sees the router as client; bytes both ways', async () => {
    expect(await rig.tcpEcho(rig.router, rig.pod, EIP, 8080, 300000)).toEqual(intactEcho(ROUTER_EXT, 300000));
  });

  test('NAT-2, NAT-3: a TCP connection the pod opens to a server beyond the router arrives from the ElasticIP', async () => {
    expect(await rig.tcpEcho(rig.pod, rig.server, SERVER, 8081, 100000)).toEqual(intactEcho(EIP, 100000));
  });

  test('NAT-3, NAT-5: UDP both ways with correct checksums; per-ElasticIP packet and byte counters exact', async () => {
    const before = counters();
    const beforeStats = stats();
    const server = await rig.serve<Seen>(rig.pod, 'udp-server', '9000', '5');
    const { sent, frames } = await rig.sendCaptured(atPod(['udp']), udpSend(rig.router, EIP, 9000, 100, 5, 'nodf'));
    expect(sent).toEqual({ answers: Array(5).fill({ from: EIP, len: 100, ok: true }), errors: [] });
    expect((await server.result).seen.map((s) => s.from)).toEqual(Array(5).fill(ROUTER_EXT));
    const inbound = ipv4(frames).filter((p) => p.dst === POD);
    expect(inbound).toHaveLength(5);
    for (const p of inbound) expect({ src: p.src, ...checkPacket(p) }).toEqual({ src: ROUTER_EXT, ip: true, l4: true });
    const after = counters();
    const frame = 14 + 20 + 8 + 100;
    expect({
      inPackets: after.inPackets - before.inPackets,
      inBytes: after.inBytes - before.inBytes,
      outPackets: after.outPackets - before.outPackets,
      outBytes: after.outBytes - before.outBytes,
    }).toEqual({ inPackets: 5n, inBytes: BigInt(5 * frame), outPackets: 5n, outBytes: BigInt(5 * frame) });
    expect(rig.statsSince(beforeStats)).toEqual({
      JUNEAU_NAT_DNAT_REDIRECT: 5n,
      JUNEAU_NAT_SNAT_REDIRECT: 5n,
      JUNEAU_NAT_PASS_UNMAPPED: 5n,
    });
  });

  test('NAT-3: a UDP datagram sent with a zero checksum arrives at the pod with a zero checksum and is received', async () => {
    const server = await rig.serve<Seen>(rig.pod, 'udp-server', '9001', '1');
    const { frames } = await rig.sendCaptured(atPod(['udp', 'and', 'dst', 'port', '9001']), async () => {
      await rig.tool(rig.router, 'udp-raw', ROUTER_EXT, EIP, '5555', '9001', '64', 'zero', '1');
      expect((await server.result).seen).toEqual([{ from: ROUTER_EXT, port: 5555, len: 64, ok: true }]);
    });
    const [p] = ipv4(frames);
    expect({ dst: p.dst, ...checkPacket(p) }).toEqual({ dst: POD, ip: true, l4: 'zero' });
  });

  test('NAT-3: ICMP echo to the ElasticIP is answered from the ElasticIP', async () => {
    const { sent, frames } = await rig.sendCaptured(atPod(['icmp']), () => rig.tool(rig.router, 'ping', EIP, '3'));
    expect(sent).toEqual({ replies: [EIP, EIP, EIP] });
    const requests = ipv4(frames).filter((p) => p.dst === POD && p.payload[0] === 8);
    expect(requests).toHaveLength(3);
    for (const p of requests) expect(checkPacket(p)).toEqual({ ip: true, l4: true });
  });

  test("EIP-6 inbound: the router's fragmentation-needed reaches the pod naming the pod's own address; the pod learns MTU 1280", async () => {
    const { sent, frames } = await rig.sendCaptured(atPod(['icmp']), udpSend(rig.pod, SERVER, 9100, 1400, 2, 'df'));
    // The first datagram dies at the MTU 1280 link and the error comes back to the socket (the
    // pod's kernel matched the rewritten embedded header to its flow); the second is refused
    // locally by the MTU it learned.
    expect(sent.errors).toEqual(['Message too long', 'Message too long']);
    expectOneUnreachable(frames, { ...fragNeeded, dst: POD, innerSrc: POD, innerDst: SERVER });
    expect(await rig.learnedMtu(rig.pod, SERVER)).toBe(SERVER_MTU);
  });

  test("EIP-6 inbound: a port-unreachable carrying the whole datagram has its embedded UDP checksum rewritten too; the pod's socket gets it", async () => {
    const beforeStats = stats();
    const { sent, frames } = await rig.sendCaptured(atPod(['icmp']), udpSend(rig.pod, SERVER, 9199, 100, 1, 'nodf'));
    expect(sent).toEqual({ answers: [], errors: ['Connection refused'] });
    expectOneUnreachable(frames, { code: 3, innerSrc: POD, innerUdp: true });
    expect(rig.statsSince(beforeStats)).toMatchObject({ JUNEAU_NAT_EVENT_ICMP_ERROR: 1n });
  });

  test("EIP-6 outbound: the pod's port-unreachable leaves from the ElasticIP naming it inside; the router's socket gets it", async () => {
    const { sent, frames } = await rig.sendCaptured(atRouter(['icmp']), udpSend(rig.router, EIP, 9999, 100, 1, 'nodf'));
    expect(sent).toEqual({ answers: [], errors: ['Connection refused'] });
    expectOneUnreachable(frames, { src: EIP, innerSrc: ROUTER_EXT, innerDst: EIP, innerUdp: true });
  });

  test("EIP-6 outbound: the node's own fragmentation-needed about a translated packet names the ElasticIP; the router learns the MTU", async () => {
    await rig.in(rig.node, 'ip', 'link', 'set', 'pod0', 'mtu', String(SERVER_MTU));
    try {
      const { sent, frames } = await rig.sendCaptured(
        atRouter(['icmp']),
        udpSend(rig.router, EIP, 9200, 1400, 2, 'df'),
      );
      expect(sent.errors).toEqual(['Message too long', 'Message too long']);
      expectOneUnreachable(frames, { ...fragNeeded, src: NODE_EXT, innerSrc: ROUTER_EXT, innerDst: EIP });
      expect(await rig.learnedMtu(rig.router, EIP)).toBe(SERVER_MTU);
    } finally {
      await rig.in(rig.node, 'ip', 'link', 'set', 'pod0', 'mtu', '1500');
      await rig.in(rig.router, 'ip', 'route', 'flush', 'cache');
    }
  });

  test('EIP-6: traceroute from the pod shows the node and the router, and ends at the server; traceroute to the ElasticIP ends at the pod', async () => {
    type Hops = { hops: Array<{ ttl: number; from: string | null; type: number | null }> };
    // TTL 1 expires at the node (its own error to the pod), TTL 2 at the router: its error goes to
    // the ElasticIP and reaches the pod's socket only with the embedded header naming the pod.
    expect(await rig.tool<Hops>(rig.pod, 'trace', SERVER, '33434', '5')).toEqual({
      hops: [
        { ttl: 1, from: NODE_POD, type: 11, code: 0 },
        { ttl: 2, from: ROUTER_EXT, type: 11, code: 0 },
        { ttl: 3, from: SERVER, type: 3, code: 3 },
      ],
    });
    // From the router, TTL 1 expires at the node, whose error names the ElasticIP inside (tc_nat_out);
    // TTL 2 reaches the pod, which answers port-unreachable from the ElasticIP.
    expect(await rig.tool<Hops>(rig.router, 'trace', EIP, '33434', '5')).toEqual({
      hops: [
        { ttl: 1, from: NODE_EXT, type: 11, code: 0 },
        { ttl: 2, from: EIP, type: 3, code: 3 },
      ],
    });
  });

  test('NAT-3: IP fragments (DF off, 3000 bytes) are translated one by one, the first with its UDP checksum; both kernels reassemble', async () => {
    const before = counters();
    const beforeStats = stats();
    const server = await rig.serve<Seen>(rig.pod, 'udp-server', '9300', '1');
    const { sent, frames } = await rig.sendCaptured(
      atPod(['ip', 'and', 'dst', POD]),
      udpSend(rig.router, EIP, 9300, 3000, 1, 'nodf'),
    );
    expect(sent).toEqual({ answers: [{ from: EIP, len: 3000, ok: true }], errors: [] });
    expect((await server.result).seen).toEqual([{ from: ROUTER_EXT, port: expect.any(Number), len: 3000, ok: true }]);
    const fragments = ipv4(frames);
    expect(fragments.map((f) => [f.fragOffset, f.moreFragments, checkPacket(f).ip])).toEqual([
      [0, true, true],
      [1480, true, true],
      [2960, false, true],
    ]);
    // Reassembled here: the UDP checksum the first fragment carries covers the whole datagram.
    const whole = Buffer.concat(fragments.map((f) => f.payload));
    expect(checkPacket({ ...fragments[0], fragOffset: 0, moreFragments: false, payload: whole }).l4).toBe(true);
    const after = counters();
    expect([after.inPackets - before.inPackets, after.outPackets - before.outPackets]).toEqual([3n, 3n]);
    expect(rig.statsSince(beforeStats)).toMatchObject({ JUNEAU_NAT_EVENT_FRAGMENT: 6n });
  });

  test('NAT-3: truncated and malformed frames pass untouched, each counted with its reason', async () => {
    const before = counters();
    const beforeStats = stats();
    const base = { srcMac: rig.routerMac, dstMac: rig.nodeExtMac, src: ROUTER_EXT, dst: EIP };
    const udp = Buffer.from([0x15, 0xb3, 0x23, 0x28, 0x00, 0x10, 0x12, 0x34, 1, 2, 3, 4, 5, 6, 7, 8]);
    const { frames } = await rig.sendCaptured(atPod(['ip']), async () => {
      // Total length beyond the frame.
      await rig.sendFrame(craftFrame({ ...base, proto: 17, payload: udp, totalLength: 400 }));
      // IHL below 5, and an IPv6 version nibble in an IPv4 frame.
      await rig.sendFrame(craftFrame({ ...base, proto: 17, payload: udp, versionIhl: 0x44 }));
      await rig.sendFrame(craftFrame({ ...base, proto: 17, payload: udp, versionIhl: 0x65 }));
      // A first fragment of TCP that ends before the TCP checksum.
      await rig.sendFrame(craftFrame({ ...base, proto: 6, payload: Buffer.alloc(10, 1), fragment: 0x2000 }));
      // An ICMP error whose embedded header is cut short.
      await rig.sendFrame(
        craftFrame({ ...base, proto: 1, payload: Buffer.from([3, 3, 0, 0, 0, 0, 0, 0, 0x45, 0, 0, 40, 0, 0]) }),
      );
    });
    expect(ipv4(frames)).toEqual([]);
    expect(rig.statsSince(beforeStats)).toEqual({
      JUNEAU_NAT_PASS_TRUNCATED: 2n,
      JUNEAU_NAT_PASS_MALFORMED: 2n,
      JUNEAU_NAT_PASS_ICMP_MALFORMED: 1n,
    });
    expect(counters()).toEqual(before);
  });

  test('NAT-2: a destination inside the cluster keeps the pod address', async () => {
    rig.maps().setInClusterPrefixes([{ address: ROUTER_EXT, prefixLength: 32 }]);
    try {
      const { frames } = await rig.sendCaptured(atRouter(['udp', 'and', 'port', '7001']), () =>
        rig.tool(rig.pod, 'udp-raw', POD, ROUTER_EXT, '7000', '7001', '20', 'csum', '1'),
      );
      expect(ipv4(frames).map((p) => p.src)).toEqual([POD]);
    } finally {
      rig.maps().setInClusterPrefixes([]);
    }
  });

  test("SEC-10: the pod connecting to its own ElasticIP is handed to the node's kernel untranslated (counted JUNEAU_NAT_PASS_TO_ELASTIC_IP): the kernel's route answers, EHOSTUNREACH, not a hang", async () => {
    // The rig's node blackholes the ElasticIP (silent); `unreachable` makes the kernel's decision
    // visible to the pod. Translated and redirected to ext0 instead, the SYN would go to the router
    // and the connect would hang (timeout).
    await rig.in(rig.node, 'ip', 'route', 'replace', 'unreachable', `${EIP}/32`);
    try {
      const beforeStats = stats();
      expect(await rig.tool(rig.pod, 'tcp-connect', EIP, '8083', '8')).toEqual({ result: 'EHOSTUNREACH' });
      const moved = rig.statsSince(beforeStats);
      expect(moved.JUNEAU_NAT_PASS_TO_ELASTIC_IP).toBeGreaterThan(0n);
      expect(moved.JUNEAU_NAT_SNAT_REDIRECT).toBeUndefined();
    } finally {
      await rig.in(rig.node, 'ip', 'route', 'replace', 'blackhole', `${EIP}/32`);
    }
  });

  test('NAT-2: a CNI masquerade on the node does not win over the translation, and NAT-4: no conntrack entry is made', async () => {
    // What many CNIs install: masquerade pod traffic that leaves through the external interface.
    await rig.in(rig.node, 'nft', 'add table ip cni');
    await rig.in(rig.node, 'nft', 'add chain ip cni post { type nat hook postrouting priority srcnat; }');
    await rig.in(rig.node, 'nft', 'add rule ip cni post ip saddr 10.0.0.0/24 oifname "ext0" masquerade');
    try {
      const server = await rig.serve<{ client: string }>(rig.server, 'tcp-server', '8082');
      expect(await rig.tool(rig.pod, 'tcp-client', SERVER, '8082', '10000')).toMatchObject({
        banner: `client=${EIP}`,
        intact: true,
      });
      expect((await server.result).client).toBe(EIP);
      const entries = await rig.in(rig.node, 'conntrack', '-L');
      expect(entries.split('\n').filter((l) => l.includes(POD) || l.includes(EIP))).toEqual([]);
    } finally {
      await rig.in(rig.node, 'nft', 'delete', 'table', 'ip', 'cni');
    }
  });

  test('NAT-4: a binding removed stops the translation and leaves no map entry; added back, it translates again', async () => {
    rig.maps().sync([]);
    expect(rig.maps().entries()).toEqual([]);
    expect(rig.maps().outMap.keys()).toEqual([]);
    expect(await rig.tool(rig.router, 'ping', EIP, '1')).toEqual({ replies: [] });
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
    expect(await rig.tool(rig.router, 'ping', EIP, '1')).toEqual({ replies: [EIP] });
  });
});
