// The NAT with the veths' offloads left on: TCP crosses the node as GSO super-packets whose
// checksum is CHECKSUM_PARTIAL (only the pseudo-header sum is in the packet, the rest is computed
// at the last transmit), the way GRO and TSO hand packets to TC on real NICs. The rewrite must
// adjust that partial sum, or the payload arrives corrupted or not at all (NAT-3).
import { describeAsRoot } from './rig';
import { EIP, POD, ROUTER_EXT, SERVER, intactEcho, useNatRig } from './nat-rig';

// Four 5 MB transfers through real namespaces take about 4.5 s here on their own (with the NAT
// before and after tc_nat_in's fast path alike), over jest's 5 s default once the other netns
// suites load the 2-CPU machine: generous, like the other netns files.
jest.setTimeout(30_000);

describeAsRoot('ElasticIP NAT with GSO/GRO and checksum offload on (NAT-3)', () => {
  const rig = useNatRig({ offloads: true });

  beforeAll(async () => {
    // Where the translated packets leave the node and the router, the checksum is finished in
    // software from the partial sum the NAT adjusted (tx off), and the receivers check it in
    // software (rx off): a wrong adjustment drops the segments and the transfer fails.
    await rig.in(rig.node, 'ethtool', '-K', 'pod0', 'tx', 'off');
    await rig.in(rig.pod, 'ethtool', '-K', 'eth0', 'rx', 'off');
    await rig.in(rig.router, 'ethtool', '-K', 's0', 'tx', 'off');
    await rig.in(rig.server, 'ethtool', '-K', 'eth0', 'rx', 'off');
    await rig.attach();
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
  }, 60_000);

  test('NAT-3: 5 MB each way through the ElasticIP, inbound and outbound connections, arrive intact', async () => {
    expect(await rig.tcpEcho(rig.router, rig.pod, EIP, 8080, 5000000)).toEqual(intactEcho(ROUTER_EXT, 5000000));
    expect(await rig.tcpEcho(rig.pod, rig.server, SERVER, 8081, 5000000)).toEqual(intactEcho(EIP, 5000000));
    const stats = rig.maps().stats();
    expect([
      stats.JUNEAU_NAT_DNAT_REDIRECT > 0n,
      stats.JUNEAU_NAT_SNAT_REDIRECT > 0n,
      stats.JUNEAU_NAT_PASS_REWRITE_FAILED,
    ]).toEqual([true, true, 0n]);
  });
});
