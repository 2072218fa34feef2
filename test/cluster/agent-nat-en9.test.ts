// The real juneau-agent programs EN-9 from the real API server: a direct ElasticIP whose
// NetworkInterface is on another node is written to juneau_nat_remote with that Node's InternalIP
// and the ExternalNetwork's status.networkID, only once the networkID is written (EN-8), and goes
// when the NetworkInterface goes. The agent runs in the node namespace of the NAT rig and makes its
// VXLAN device there. No Juneau controller runs in the cluster project: the test writes the
// statuses the controller would. The packets themselves: test/netns/nat-en9.test.ts.
import { JuneauResources } from '../../runtime/kube/resources';
import { VXLAN_DEVICE } from '../../runtime/agent/nat/vxlan';
import { describeAsRoot } from '../netns/rig';
import { useAgentNat } from './agent-nat-harness';
import { ensureNode, ignoreNotFound, waitFor } from './fixture';

jest.setTimeout(120_000);

const EIP = '192.0.2.52';
const OTHER_NODE_IP = '192.0.2.9';
const VNI = 4243;

describeAsRoot('juneau-agent carries direct ElasticIPs of other nodes by VXLAN (EN-9)', () => {
  const t = useAgentNat({
    nodePrefix: 'en9',
    namespace: 'agent-en9',
    crd: 'externalnetworks',
    setup: async () => {
      await ensureNode(other, { internalIP: OTHER_NODE_IP });
      t.nodes.push(other);
      await t.create(JuneauResources.externalNetworks, {
        kind: 'ExternalNetwork',
        metadata: { name: network },
        spec: { type: 'arp', addressPools: [network] },
      });
      await t.createAttachedEip('far', network, {
        address: EIP,
        attachment: { kind: 'NetworkInterface', name: 'far.eth0' },
      });
      await t.createNic('far', { nodeName: other, address: '10.9.0.2', elasticIP: 'far' });
      await t.patchStatus(JuneauResources.networkInterfaces, t.ns, 'far.eth0', { phase: 'Ready' });
    },
    cleanup: async () => {
      await rest.delete(JuneauResources.externalNetworks, undefined, network).catch(ignoreNotFound);
    },
  });
  const { rig, rest } = t;
  const other = `en9-${rig.id}-other`;
  const network = `en9-${rig.id}`;

  const remote = (want: object[]) =>
    waitFor(() => JSON.stringify(t.maps.remoteBindings()) === JSON.stringify(want), {
      what: `juneau_nat_remote = ${JSON.stringify(want)}`,
    });

  test('EN-8, EN-9: nothing is carried while status.networkID is 0; once written, the ElasticIP goes to the other node with that VNI through the agent VXLAN device', async () => {
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9202/readyz')).toContain('[+]nat-reconciled ok');
    expect(t.maps.remoteBindings()).toEqual([]);
    const device = JSON.parse(await rig.in(rig.node, 'ip', '-d', '-j', 'link', 'show', VXLAN_DEVICE)) as Array<{
      flags: string[];
      linkinfo: { info_kind: string; info_data: { external?: boolean; port: number; learning?: boolean } };
    }>;
    expect({
      up: device[0].flags.includes('UP'),
      kind: device[0].linkinfo.info_kind,
      external: device[0].linkinfo.info_data.external,
      port: device[0].linkinfo.info_data.port,
      learning: device[0].linkinfo.info_data.learning,
    }).toEqual({ up: true, kind: 'vxlan', external: true, port: 4789, learning: false });
    await t.patchStatus(JuneauResources.externalNetworks, '', network, { networkID: VNI });
    await remote([{ elasticIP: EIP, node: OTHER_NODE_IP, vni: VNI }]);
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9201/metrics')).toContain(
      'juneau_agent_nat_bindings{kind="remote"} 1',
    );
  });

  test('EN-9: the NetworkInterface gone, the remote binding goes, counters included', async () => {
    await rest.delete(JuneauResources.networkInterfaces, t.ns, 'far.eth0');
    await t.waitForNoEntries('no NAT entry left: the remote binding and its counters');
  });
});
