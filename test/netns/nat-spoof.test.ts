// Bindings tied to their pod's device and MAC (security review H1 data-plane part, M3): another pod
// that sends with a bound pod's address (CAP_NET_RAW is in the containerd default set), or gets the
// address after the bound pod left, never speaks or hears as that pod's ElasticIP. Real namespaces:
// the NAT rig with its pods on one bridge (a bridge CNI, tc_nat_pod on br0) and with a veth each.
// The bindings' devices are resolved by the agent's own netlink code in the node namespace
// (resolvePodDevice); captures on the external link prove what leaves.
import { describeAsRoot } from './rig';
import { EIP, NODE_POD, POD, SERVER, useNatRig, type NatRig } from './nat-rig';
import type { NatReasonName } from '../../runtime/agent/bpf/layout';
import { ipv4Packets as ipv4 } from './ipv4';

const DIRECT_EIP = '192.0.2.51';

/** The reasons of the outbound path: translated, sent unchanged, refused (the rest, the server's
 * port-unreachable coming back and the like, is other traffic). */
const OUTBOUND: readonly NatReasonName[] = [
  'JUNEAU_NAT_SNAT',
  'JUNEAU_NAT_SNAT_REDIRECT',
  'JUNEAU_NAT_DIRECT_OUT',
  'JUNEAU_NAT_DROP_SPOOFED',
  'JUNEAU_NAT_PASS_WRONG_DEVICE',
];

/** Two UDP datagrams from `src` to the server, sent from pod namespace `ns`; the sources seen on
 * the router's side of the external link. */
async function udpFrom(rig: NatRig, ns: string, src: string, port: number): Promise<string[]> {
  const frames = await rig.capture(
    rig.router,
    'r0',
    async () => void (await rig.tool(ns, 'udp-raw', src, SERVER, '7100', String(port), '20', 'csum', '2')),
    ['udp', 'and', 'dst', 'port', String(port)],
  );
  return ipv4(frames).map((p) => p.src);
}

/** What `send` made leave (its result) and which OUTBOUND reasons it moved. */
async function outcome<T>(rig: NatRig, send: () => Promise<T>): Promise<{ sent: T; counted: object }> {
  const before = rig.maps().stats();
  const sent = await send();
  return { sent, counted: outbound(rig, before) };
}

/** How far the OUTBOUND reasons moved since `before`, those that did. */
function outbound(rig: NatRig, before: Record<NatReasonName, bigint>): Partial<Record<NatReasonName, bigint>> {
  const moved = rig.statsSince(before);
  return Object.fromEntries(OUTBOUND.filter((r) => moved[r] !== undefined).map((r) => [r, moved[r]]));
}

describeAsRoot(
  'pods on one bridge: a bound address or direct ElasticIP sent from another pod is dropped (SEC-8, SEC-1)',
  () => {
    const rig = useNatRig();
    let br0 = 0;
    let victimMac = '';

    beforeAll(async () => {
      await rig.bridgePods();
      await rig.attach(['br0']);
      br0 = await rig.nodeIfindex('br0');
      victimMac = await rig.mac(rig.pod, 'eth0');
      await rig.in(rig.pod, 'ip', 'addr', 'add', `${DIRECT_EIP}/32`, 'dev', 'lo');
      // The node has talked to the pod (as it has to a running pod): its neighbour table has the MAC.
      expect(await rig.tool(rig.node, 'ping', POD, '1')).toEqual({ replies: [POD] });
      // The pod range is in the cluster (NAT-2), as the agent learns it.
      rig.maps().setInClusterPrefixes([{ address: '10.0.0.0', prefixLength: 24 }]);
      rig.maps().sync([{ elasticIP: EIP, address: POD }], [{ elasticIP: DIRECT_EIP, address: POD }]);
    }, 60_000);

    const sendFrom = (ns: string, src: string, port: number) => udpFrom(rig, ns, src, port);

    test('SEC-8: each binding names the bridge and the pod MAC, resolved from the node route and neighbour table', () => {
      expect([rig.maps().devices('nat'), rig.maps().devices('direct')]).toEqual([
        [{ elasticIP: EIP, address: POD, device: { ifindex: br0, mac: victimMac } }],
        [{ elasticIP: DIRECT_EIP, address: POD, device: { ifindex: br0, mac: victimMac } }],
      ]);
    });

    test.each([
      ['its NAT address', POD, EIP, 'JUNEAU_NAT_SNAT_REDIRECT', 7101],
      ['its direct ElasticIP', DIRECT_EIP, DIRECT_EIP, 'JUNEAU_NAT_DIRECT_OUT', 7103],
    ])(
      'SEC-8, SEC-1: the bound pod sending from %s (%s) leaves as %s; the same datagram from the other pod on the bridge is dropped, counted, and nothing leaves',
      async (_what, src, leavesAs, reason, port) => {
        expect(await outcome(rig, () => sendFrom(rig.pod, src, port))).toEqual({
          sent: [leavesAs, leavesAs],
          counted: { [reason]: 2n },
        });
        expect(await outcome(rig, () => sendFrom(rig.pod2, src, port + 1))).toEqual({
          sent: [],
          counted: { JUNEAU_NAT_DROP_SPOOFED: 2n },
        });
      },
    );

    test('SEC-1: the bound pod gone and its address taken by another pod on the bridge (another MAC), the stale binding neither reaches nor speaks for the new pod', async () => {
      await rig.in(rig.pod, 'ip', 'addr', 'del', `${POD}/24`, 'dev', 'eth0');
      await rig.in(rig.pod2, 'ip', 'addr', 'add', `${POD}/24`, 'dev', 'eth0');
      // The new pod speaks from the address (its ARP request names it, and the node learns its MAC);
      // inside the cluster it is not refused.
      await rig.in(rig.pod2, 'ip', 'neigh', 'flush', 'dev', 'eth0');
      let before = rig.maps().stats();
      await rig.tool(rig.pod2, 'udp-raw', POD, NODE_POD, '7106', '7107', '20', 'csum', '1');
      expect(outbound(rig, before)).toEqual({ JUNEAU_NAT_PASS_WRONG_DEVICE: 1n });
      const [neigh] = JSON.parse(await rig.in(rig.node, 'ip', '-j', 'neigh', 'show', POD, 'dev', 'br0')) as Array<{
        lladdr: string;
      }>;
      expect(neigh.lladdr).toBe(await rig.mac(rig.pod2, 'eth0'));
      before = rig.maps().stats();
      expect(await rig.tool(rig.router, 'ping', EIP, '2')).toEqual({ replies: [] });
      expect(rig.statsSince(before)).toMatchObject({ JUNEAU_NAT_PASS_WRONG_DEVICE: 2n });
      expect(await outcome(rig, () => sendFrom(rig.pod2, POD, 7105))).toEqual({
        sent: [],
        counted: { JUNEAU_NAT_DROP_SPOOFED: 2n },
      });
      // What the agent resolves again keeps the device and MAC of the pod the binding was made for.
      expect(rig.maps().refreshDevices()).toBe(0);
      expect(rig.maps().devices('nat')).toEqual([
        { elasticIP: EIP, address: POD, device: { ifindex: br0, mac: victimMac } },
      ]);
    });
  },
);

describeAsRoot('pods behind a veth each: a bound address from another veth is not the bound pod (SEC-8, SEC-1)', () => {
  const rig = useNatRig();
  let pod0 = 0;

  beforeAll(async () => {
    await rig.addSecondPod();
    // tc_nat_pod on pod1 only: pod0's traffic is translated by tc_nat_out, the catch-all, which
    // must tell the devices apart by itself.
    await rig.attach(['pod1']);
    pod0 = await rig.nodeIfindex('pod0');
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
  }, 60_000);

  const sendFrom = (ns: string, port: number) => udpFrom(rig, ns, POD, port);

  test('SEC-8: the binding names pod0; from it, the pod leaves as its ElasticIP; from pod1 the same source is not translated, by tc_nat_pod nor by tc_nat_out', async () => {
    expect(rig.maps().devices('nat')).toEqual([
      { elasticIP: EIP, address: POD, device: expect.objectContaining({ ifindex: pod0 }) },
    ]);
    expect(await outcome(rig, () => sendFrom(rig.pod, 7201))).toEqual({
      sent: [EIP, EIP],
      counted: { JUNEAU_NAT_SNAT: 2n },
    });
    expect(await outcome(rig, () => sendFrom(rig.pod2, 7202))).toEqual({
      sent: [POD, POD],
      counted: { JUNEAU_NAT_PASS_WRONG_DEVICE: 4n },
    });
  });

  test("SEC-8: without tc_nat_pod on the spoofer's veth, tc_nat_out alone leaves its packets with the pod address", async () => {
    await rig.in(rig.node, 'tc', 'qdisc', 'del', 'dev', 'pod1', 'clsact');
    try {
      expect(await outcome(rig, () => sendFrom(rig.pod2, 7203))).toEqual({
        sent: [POD, POD],
        counted: { JUNEAU_NAT_PASS_WRONG_DEVICE: 2n },
      });
    } finally {
      await rig.attach(['pod1']);
    }
  });

  test('SEC-1: the bound pod gone and its address routed to another veth, the stale binding neither reaches the new pod nor lets it leave as the ElasticIP; the new pod still reaches the node', async () => {
    await rig.in(rig.node, 'ip', 'link', 'set', 'pod0', 'down');
    await rig.in(rig.pod2, 'ip', 'addr', 'add', `${POD}/32`, 'dev', 'eth0');
    await rig.in(rig.node, 'ip', 'route', 'add', `${POD}/32`, 'dev', 'pod1');
    expect(await rig.tool(rig.node, 'ping', POD, '1')).toEqual({ replies: [POD] });
    let before = rig.maps().stats();
    expect(await rig.tool(rig.router, 'ping', EIP, '2')).toEqual({ replies: [] });
    expect(rig.statsSince(before)).toMatchObject({ JUNEAU_NAT_PASS_WRONG_DEVICE: 2n });
    expect(await outcome(rig, () => sendFrom(rig.pod2, 7204))).toEqual({
      sent: [POD, POD],
      counted: { JUNEAU_NAT_PASS_WRONG_DEVICE: 4n },
    });
    // What the agent resolves again keeps the device of the pod the binding was made for.
    expect(rig.maps().refreshDevices()).toBe(0);
    expect(rig.maps().devices('nat')).toEqual([
      { elasticIP: EIP, address: POD, device: expect.objectContaining({ ifindex: pod0 }) },
    ]);
  });
});
