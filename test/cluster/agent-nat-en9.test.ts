// The real juneau-agent programs EN-9 from the real API server: a direct ElasticIP whose
// NetworkInterface is on another node is written to juneau_nat_remote with that Node's InternalIP
// and the ExternalNetwork's status.networkID, only once the networkID is written (EN-8), and goes
// when the NetworkInterface goes. The agent runs in the node namespace of the NAT rig and makes its
// VXLAN device there. No Juneau controller runs in the cluster project: the test writes the
// statuses the controller would. The packets themselves: test/netns/nat-en9.test.ts.
import { JuneauResources } from '../../runtime/kube/resources';
import { VXLAN_DEVICE } from '../../runtime/agent/nat/vxlan';
import { NODE_EXT } from '../netns/nat-rig';
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

  /** The VXLAN devices of the node namespace. */
  const vxlanDevices = async () =>
    (
      JSON.parse(await rig.in(rig.node, 'ip', '-d', '-j', 'link', 'show', 'type', 'vxlan')) as Array<{
        ifname: string;
        flags: string[];
        linkinfo: {
          info_kind: string;
          info_data: { external?: boolean; port: number; learning?: boolean; local?: string; link?: string };
        };
      }>
    ).map((d) => ({
      name: d.ifname,
      up: d.flags.includes('UP'),
      external: d.linkinfo.info_data.external,
      port: d.linkinfo.info_data.port,
      learning: d.linkinfo.info_data.learning,
      local: d.linkinfo.info_data.local,
      link: d.linkinfo.info_data.link,
    }));

  test('EN-8, EN-9, SEC-3: nothing is carried and no VXLAN device exists while status.networkID is 0; once written, the ElasticIP goes to the other node with that VNI through the agent VXLAN device, bound to the node address', async () => {
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9202/readyz')).toContain('[+]nat-reconciled ok');
    expect(t.maps.remoteBindings()).toEqual([]);
    expect(await vxlanDevices()).toEqual([]);
    await t.patchStatus(JuneauResources.externalNetworks, '', network, { networkID: VNI });
    await remote([{ elasticIP: EIP, node: OTHER_NODE_IP, vni: VNI }]);
    expect(await vxlanDevices()).toEqual([
      { name: VXLAN_DEVICE, up: true, external: true, port: 4789, learning: false, local: NODE_EXT, link: 'ext0' },
    ]);
    expect(t.maps.peers()).toEqual([NODE_EXT, OTHER_NODE_IP]);
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9201/metrics')).toContain(
      'juneau_agent_nat_bindings{kind="remote"} 1',
    );
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9202/healthz')).toContain(
      '[+]nat-tunnel-attached ok',
    );
  });

  test('EN-9, SEC-3: the NetworkInterface gone, the remote binding goes, counters included, and the VXLAN device with it', async () => {
    await rest.delete(JuneauResources.networkInterfaces, t.ns, 'far.eth0');
    await t.waitForNoEntries('no NAT entry left: the remote binding and its counters');
    await waitFor(async () => (await vxlanDevices()).length === 0, { what: 'no VXLAN device left' });
  });
});
