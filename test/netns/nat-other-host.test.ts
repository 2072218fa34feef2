// tc_nat_in translates only frames addressed to the node's own MAC (skb->pkt_type PACKET_HOST). A
// switch floods a unicast frame whose destination MAC it has not learned to every port, so the
// external interface also receives frames for another node's MAC (PACKET_OTHERHOST) and broadcast
// ones; the kernel drops those after TC, but translated and redirected they reached the pod a
// second time (the EN-9 rig saw a duplicate SYN). Crafted frames from the router's r0, each to the
// ElasticIP: the pod's capture shows only the one sent to the node's MAC, and the others are
// counted as JUNEAU_NAT_PASS_OTHER_HOST and not in the ElasticIP's counters.
import { describeAsRoot } from './rig';
import { EIP, POD, ROUTER_EXT, useBoundNatRig } from './nat-rig';
import { craftFrame, parseIpv4, tcpSyn, udpDatagram, type Ipv4Packet } from './ipv4';
import type { NatReasonName } from '../../runtime/agent/bpf/layout';

jest.setTimeout(30_000);

/** A locally administered unicast MAC that no interface of the rig has: another node's. */
const OTHER_NODE_MAC = '02:00:5e:00:53:09';
const BROADCAST = 'ff:ff:ff:ff:ff:ff';

describeAsRoot('tc_nat_in leaves frames for another host untouched (NAT-1, EN-9)', () => {
  const rig = useBoundNatRig();

  const stats = (): Record<NatReasonName, bigint> => rig.maps().stats();
  const inPackets = () =>
    rig
      .maps()
      .entries()
      .find((e) => e.elasticIP === EIP)!.inPackets;

  test('NAT-1: UDP and a TCP SYN to the ElasticIP in frames for another MAC or broadcast pass untranslated and counted; the one for the node MAC is translated', async () => {
    const frame = (dstMac: string, sport: number) =>
      craftFrame({
        srcMac: rig.routerMac,
        dstMac,
        src: ROUTER_EXT,
        dst: EIP,
        proto: 17,
        payload: udpDatagram(ROUTER_EXT, EIP, sport, true),
      });
    const before = stats();
    const packetsBefore = inPackets();
    const atPod = await rig.capture(
      rig.pod,
      'eth0',
      async () => {
        await rig.sendFrame(frame(OTHER_NODE_MAC, 6001));
        await rig.sendFrame(frame(BROADCAST, 6002));
        await rig.sendFrame(
          craftFrame({
            srcMac: rig.routerMac,
            dstMac: OTHER_NODE_MAC,
            src: ROUTER_EXT,
            dst: EIP,
            proto: 6,
            payload: tcpSyn(ROUTER_EXT, EIP),
          }),
        );
        await rig.sendFrame(frame(rig.nodeExtMac, 6003));
      },
      ['ip', 'and', 'dst', 'host', POD],
    );
    const seen = atPod
      .map((f) => parseIpv4(f))
      .filter((p): p is Ipv4Packet => p !== undefined)
      .map((p) => ({ src: p.src, dst: p.dst, proto: p.proto, sport: p.payload.readUInt16BE(0) }));
    expect(seen).toEqual([{ src: ROUTER_EXT, dst: POD, proto: 17, sport: 6003 }]);
    const after = stats();
    expect({
      otherHost: after.JUNEAU_NAT_PASS_OTHER_HOST - before.JUNEAU_NAT_PASS_OTHER_HOST,
      translated:
        after.JUNEAU_NAT_DNAT_REDIRECT -
        before.JUNEAU_NAT_DNAT_REDIRECT +
        (after.JUNEAU_NAT_DNAT - before.JUNEAU_NAT_DNAT),
      elasticIPInPackets: inPackets() - packetsBefore,
    }).toEqual({ otherHost: 3n, translated: 1n, elasticIPInPackets: 1n });
  });
});
