// tc_nat_in's fast path (bpf/tc_nat.bpf.c): TCP and UDP without IP options or fragments are read
// and rewritten in place, with the IP checksum and the TTL computed in the program, instead of
// through the load/store and checksum helpers. These frames are crafted and sent from a packet
// socket, whose frames carry only the Ethernet header in the linear area: the program pulls the
// headers in first. What the pod receives is checked byte by byte (every checksum recomputed
// here) against what the general path produced before, and a frame with IP options, which the
// fast path hands to the general path, is translated the same way.
import { describeAsRoot } from './rig';
import { EIP, POD, ROUTER_EXT, useBoundNatRig } from './nat-rig';
import { checkPacket, checksum, craftFrame, ipv4Packets as ipv4, tcpSyn, udpDatagram as udp } from './ipv4';

jest.setTimeout(30_000);

describeAsRoot(
  'tc_nat_in fast path: in-place rewrite with the checksums and TTL computed in the program (NAT-1, NAT-3)',
  () => {
    const rig = useBoundNatRig();

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
