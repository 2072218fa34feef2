// Direct ElasticIPs (EIP-4 direct, DIR-1) in the NAT rig: the pod holds the ElasticIP itself (the
// rig puts it on the pod's loopback, which is the pod network's job in a cluster), the node has no
// route for it, and the TC programs carry its packets to the pod and back unchanged. The node's
// reverse-path filter is strict, as on many distributions: the pod's replies from the ElasticIP
// arrive on a device with no route back to it, so only the redirect lets them out.
import { describeAsRoot } from './rig';
import { EIP, POD, POD2, ROUTER_EXT, intactEcho, useNatRig } from './nat-rig';

describeAsRoot('direct ElasticIPs through the node (DIR-1)', () => {
  const rig = useNatRig();

  beforeAll(async () => {
    await rig.addSecondPod();
    await rig.attach(['pod0', 'pod1']);
    for (const ns of [rig.pod, rig.pod2]) await rig.in(ns, 'ip', 'addr', 'add', `${EIP}/32`, 'dev', 'lo');
    for (const scope of ['all', 'default', 'pod0', 'pod1'])
      await rig.sysctl(rig.node, `net.ipv4.conf.${scope}.rp_filter`, '1');
  }, 60_000);

  test('DIR-1: a TCP connection to a direct ElasticIP reaches the pod that holds it, unchanged both ways; counted per ElasticIP', async () => {
    rig.maps().sync([], [{ elasticIP: EIP, address: POD }]);
    expect(await rig.tcpEcho(rig.router, rig.pod, EIP, 8080, 50000)).toEqual(intactEcho(ROUTER_EXT, 50000));
    const [entry] = rig.maps().entries();
    expect({
      elasticIP: entry.elasticIP,
      kind: entry.kind,
      in: entry.inPackets > 0n,
      out: entry.outPackets > 0n,
    }).toEqual({ elasticIP: EIP, kind: 'direct', in: true, out: true });
    const stats = rig.maps().stats();
    expect([stats.JUNEAU_NAT_DIRECT_IN > 0n, stats.JUNEAU_NAT_DIRECT_OUT > 0n, stats.JUNEAU_NAT_DNAT]).toEqual([
      true,
      true,
      0n,
    ]);
  });

  test('DIR-1: after the pod moves (another NIC address holds the ElasticIP), packets reach the new pod; removed, nothing is left', async () => {
    rig.maps().sync([], [{ elasticIP: EIP, address: POD2 }]);
    const server = await rig.serve<{ client: string; received: number }>(rig.pod2, 'tcp-server', '8080');
    expect(await rig.tool(rig.router, 'tcp-client', EIP, '8080', '1000')).toMatchObject({
      banner: `client=${ROUTER_EXT}`,
      intact: true,
    });
    expect((await server.result).client).toBe(ROUTER_EXT);
    rig.maps().sync([], []);
    expect([rig.maps().directMap.keys(), rig.maps().countersMap.keys()]).toEqual([[], []]);
    expect(await rig.tool(rig.router, 'ping', EIP, '1')).toEqual({ replies: [] });
  });
});
