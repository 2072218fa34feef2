// What the real juneau-agent believes of the cluster's objects before it writes the NAT maps
// (SEC-1, SEC-2, SEC-5, SEC-17): a binding only while its NIC's Pod is Running with the address,
// never onto a Node's or the node's own address, and only the API server's own `kubernetes`
// EndpointSlice names API servers. The NAT rig of test/netns and the real API server; no Juneau
// controller runs in the cluster project, so the test writes the statuses the controller (and a
// kubelet) would.
import { decodeGuardKey } from '../../runtime/agent/bpf/layout/arp';
import { formatPrefix, prefixContains } from '../../runtime/agent/bpf/prefixes';
import { Resources } from '../../runtime/kube/resources';
import { describeAsRoot } from '../netns/rig';
import { EIP, NODE_EXT, POD, POD2 } from '../netns/nat-rig';
import { useAgentNat } from './agent-nat-harness';
import { apiError, ensureNode, waitFor } from './fixture';

jest.setTimeout(120_000);

const OTHER_NODE_IP = '192.0.2.77';
/** The API server's slice's endpoint (the positive control) and a forged slice's. */
const API_SERVER = '198.51.100.66';
const FORGED = '198.51.100.77';

describeAsRoot('juneau-agent binds only what the cluster proves (SEC-1, SEC-2, SEC-5, SEC-17)', () => {
  const other = `trust-other-${process.pid}`;
  let createdApiSlice = false;
  const t = useAgentNat({
    nodePrefix: 'nat-trust',
    namespace: 'agent-nat-trust',
    crd: 'elasticipattachments',
    setup: async (t) => {
      await ensureNode(other, { internalIP: OTHER_NODE_IP });
      t.nodes.push(other);
      await t.createNic('job', { address: POD });
      await t.createAttachment('job', EIP, 'job');
    },
    cleanup: async (t) => {
      for (const name of ['forged', ...(createdApiSlice ? ['kubernetes'] : [])])
        await t.rest.delete(Resources.endpointSlices, 'default', name).catch(() => undefined);
    },
  });

  const natBindings = () => t.maps.bindings().map((b) => `${b.elasticIP}->${b.address}`);
  /** The agent's last report of what it left out. */
  const waitingReport = () =>
    t.agent.lines
      .filter((l) => l.msg === 'ElasticIPs of this node not translated yet')
      .map((l) => (l.waiting as string[]).join('\n'))
      .pop() ?? '';

  test("SEC-1: a Job's Pod Succeeded keeps its podIP in status; the agent drops the binding at once and says why", async () => {
    await waitFor(() => natBindings().includes(`${EIP}->${POD}`), { what: 'the Running Pod bound' });
    await t.patchPodStatus('job', { phase: 'Succeeded', podIP: POD, podIPs: [{ ip: POD }] });
    await t.waitForNoEntries("no NAT entry of the completed Pod's ElasticIP");
    // The agent logs after it wrote the maps, and its stdout reaches the test after the pinned map.
    await waitFor(() => waitingReport().includes(`ElasticIPAttachment ${t.ns}/job:`), {
      what: 'the agent reports the attachment left out',
    });
    expect(waitingReport()).toMatch(
      new RegExp(`ElasticIPAttachment ${t.ns}/job: not translated: its Pod ${t.ns}/job is Succeeded, not Running`),
    );
  });

  test("SEC-2, SEC-5: a NIC on the Node's address, an ElasticIP that is another Node's or this node's own address: refused, named; a sound binding beside them is written", async () => {
    // A Pod whose status claims the node's own address (a forged status, or a host-network Pod).
    await t.createNic('nodeaddr', { address: NODE_EXT });
    await t.createAttachment('onnode', '192.0.2.52', 'nodeaddr');
    await t.createNic('sound', { address: POD2 });
    await t.createAttachment('othernode', OTHER_NODE_IP, 'sound');
    await t.createNic('sound2', { address: '10.0.3.2' });
    await t.createAttachment('local', NODE_EXT, 'sound2');
    await t.createNic('good', { address: '10.0.4.2' });
    await t.createAttachment('good', '192.0.2.53', 'good');
    await waitFor(() => natBindings().includes('192.0.2.53->10.0.4.2'), { what: 'the sound binding written' });
    expect(natBindings()).toEqual(['192.0.2.53->10.0.4.2']);
    await waitFor(() => waitingReport().includes('ElasticIPAttachment') && waitingReport().split('\n').length >= 4, {
      what: 'the refusals reported',
    });
    const report = waitingReport();
    expect(report).toContain(
      `ElasticIPAttachment ${t.ns}/onnode: not translated: NetworkInterface ${t.ns}/nodeaddr.eth0 address ${NODE_EXT} is the address of Node ${t.node} status.addresses InternalIP`,
    );
    expect(report).toContain(
      `ElasticIPAttachment ${t.ns}/othernode: not translated: ElasticIP ${OTHER_NODE_IP} is the address of Node ${other} status.addresses InternalIP`,
    );
    expect(report).toContain(
      `ElasticIPAttachment ${t.ns}/local: not translated: ElasticIP ${NODE_EXT} is an address of this node's own interfaces`,
    );
  });

  test("SEC-17: of the slices labelled kubernetes.io/service-name=kubernetes in default, only the API server's own `kubernetes` one is in the skip list", async () => {
    const slice = (name: string, address: string) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: 'default', name, labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address] }],
    });
    // The shared control plane advertises 127.0.0.1, for which kube-apiserver writes no slice; this
    // one is shaped as kube-apiserver 1.34 writes it (the service-name label only, no managed-by).
    let apiServer = API_SERVER;
    try {
      await t.rest.create(Resources.endpointSlices, slice('kubernetes', API_SERVER));
      createdApiSlice = true;
    } catch (err) {
      if (apiError(err)?.code !== 409) throw err;
      const existing = (await t.rest.get(Resources.endpointSlices, 'default', 'kubernetes')) as {
        endpoints?: Array<{ addresses?: string[] }>;
      };
      apiServer = existing.endpoints?.[0]?.addresses?.[0] ?? '';
    }
    await t.rest.create(Resources.endpointSlices, {
      ...slice('forged', FORGED),
      metadata: {
        ...slice('forged', FORGED).metadata,
        labels: {
          'kubernetes.io/service-name': 'kubernetes',
          'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
        },
      },
    });
    const skip = () => t.maps.skipMap.keys().map((k) => decodeGuardKey(k));
    await waitFor(() => skip().some((p) => prefixContains(p, apiServer)), {
      what: `the API server's endpoint ${apiServer} in juneau_nat_skip`,
    });
    expect(
      skip()
        .filter((p) => prefixContains(p, FORGED))
        .map(formatPrefix),
    ).toEqual([]);
  });
});
