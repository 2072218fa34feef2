// tc_nat_in's fast path (bpf/tc_nat.bpf.c): TCP and UDP without IP options or fragments are read
// and rewritten in place, with the IP checksum and the TTL computed in the program, instead of
// through the load/store and checksum helpers. These frames are crafted and sent from a packet
// socket, whose frames carry only the Ethernet header in the linear area: the program pulls the
// headers in first. What the pod receives is checked byte by byte (every checksum recomputed
// here) against what the general path produced before, and a frame with IP options, which the
// fast path hands to the general path, is translated the same way.
import { describeAsRoot } from './rig';
import { EIP, POD, ROUTER_EXT, useNatRig } from './nat-rig';
import { checkPacket, checksum, craftFrame, ipv4Packets as ipv4 } from './ipv4';

jest.setTimeout(30_000);

/** A UDP header and payload whose checksum is right for `src` -> `dst` (or zero: none). */
function udp(src: string, dst: string, sport: number, withChecksum: boolean): Buffer {
  const payload = Buffer.from('juneau fast path');
  const l4 = Buffer.alloc(8 + payload.length);
  l4.writeUInt16BE(sport, 0);
  l4.writeUInt16BE(9, 2);
  l4.writeUInt16BE(l4.length, 4);
  payload.copy(l4, 8);
  if (withChecksum) l4.writeUInt16BE(l4Checksum(src, dst, 17, l4), 6);
  return l4;
}

/** A TCP SYN (20-byte header) with its checksum right for `src` -> `dst`. */
function tcpSyn(src: string, dst: string): Buffer {
  const l4 = Buffer.alloc(20);
  l4.writeUInt16BE(40000, 0);
  l4.writeUInt16BE(8080, 2);
  l4.writeUInt32BE(12345, 4);
  l4[12] = 5 << 4;
  l4[13] = 0x02;
  l4.writeUInt16BE(65535, 14);
  l4.writeUInt16BE(l4Checksum(src, dst, 6, l4), 16);
  return l4;
}

function l4Checksum(src: string, dst: string, proto: number, l4: Buffer): number {
  const addr = (a: string) => Buffer.from(a.split('.').map(Number));
  return checksum(Buffer.concat([addr(src), addr(dst), Buffer.from([0, proto, l4.length >> 8, l4.length & 0xff]), l4]));
}

describeAsRoot(
  'tc_nat_in fast path: in-place rewrite with the checksums and TTL computed in the program (NAT-1, NAT-3)',
  () => {
    const rig = useNatRig();

    beforeAll(async () => {
      await rig.attach();
      rig.maps().sync([{ elasticIP: EIP, address: POD }]);
    }, 60_000);

    const stats = () => rig.maps().stats();

    test('NAT-1, NAT-3: UDP with and without a checksum and a TCP SYN arrive at the pod translated, TTL 63, every checksum right', async () => {
      const base = { srcMac: rig.routerMac, dstMac: rig.nodeExtMac, src: ROUTER_EXT, dst: EIP };
      const before = stats();
      const atPod = await rig.capture(
        rig.pod,
        'eth0',
        async () => {
          await rig.sendFrame(craftFrame({ ...base, proto: 17, payload: udp(ROUTER_EXT, EIP, 5001, true) }));
          await rig.sendFrame(craftFrame({ ...base, proto: 17, payload: udp(ROUTER_EXT, EIP, 5002, false) }));
          await rig.sendFrame(craftFrame({ ...base, proto: 6, payload: tcpSyn(ROUTER_EXT, EIP) }));
        },
        ['ip', 'and', 'dst', 'host', POD],
      ); // not the pod's answers (a RST to the SYN)
      const seen = ipv4(atPod).map((p) => ({ src: p.src, dst: p.dst, proto: p.proto, ttl: p.ttl, ...checkPacket(p) }));
      expect(seen).toEqual([
        { src: ROUTER_EXT, dst: POD, proto: 17, ttl: 63, ip: true, l4: true },
        { src: ROUTER_EXT, dst: POD, proto: 17, ttl: 63, ip: true, l4: 'zero' },
        { src: ROUTER_EXT, dst: POD, proto: 6, ttl: 63, ip: true, l4: true },
      ]);
      expect(rig.statsSince(before)).toMatchObject({ JUNEAU_NAT_DNAT_REDIRECT: 3n });
    });

    test('NAT-3: a datagram with IP options takes the general path and arrives translated the same way', async () => {
      const payload = udp(ROUTER_EXT, EIP, 5003, true);
      const frame = craftFrame({
        srcMac: rig.routerMac,
        dstMac: rig.nodeExtMac,
        src: ROUTER_EXT,
        dst: EIP,
        proto: 17,
        payload,
      });
      // Four bytes of options (end-of-list) after the 20-byte header: IHL 6, header checksum redone.
      const header = Buffer.concat([frame.subarray(14, 34), Buffer.alloc(4)]);
      header[0] = 0x46;
      header.writeUInt16BE(header.length + payload.length, 2);
      header.writeUInt16BE(0, 10);
      header.writeUInt16BE(checksum(header), 10);
      const before = stats();
      const atPod = await rig.capture(
        rig.pod,
        'eth0',
        () => rig.sendFrame(Buffer.concat([frame.subarray(0, 14), header, payload])),
        ['udp', 'and', 'dst', 'host', POD],
      );
      const seen = ipv4(atPod).map((p) => ({ dst: p.dst, ttl: p.ttl, ihl: p.header.length, ...checkPacket(p) }));
      expect(seen).toEqual([{ dst: POD, ttl: 63, ihl: 24, ip: true, l4: true }]);
      expect(rig.statsSince(before)).toMatchObject({ JUNEAU_NAT_DNAT_REDIRECT: 1n });
    });
  },
);
