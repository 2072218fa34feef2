// The cluster's own addresses on the real API server, with the reconcilers in-process: a pool
// covering a Node's InternalIP never hands it out, a requestedIP naming it is refused naming the
// Node, and the AddressPool webhook warns about the overlap (SEC-5); a hostNetwork Pod, or one
// whose IP is a Node's, gets no NetworkInterface address (SEC-2).
import { ANNOTATIONS } from '../../api';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { ensureNode, useNamespace, waitFor, waitForMatch } from './fixture';
import {
  condition,
  createEip,
  createPod,
  eipIn,
  getEip,
  getNic,
  listEvents,
  plain,
  rest,
  useEipSetup,
} from './eip-harness';
import { addressPool, apply, deleteClusterObjects, startTestWebhook, type TestWebhook } from './webhook-fixture';

/** Part of the test API server's Service range (harness SERVICE_CLUSTER_IP_RANGE, 10.96.0.0/16). */
const SERVICE_PART = '10.96.255.248/30';
const SERVICE_IP = '10.96.255.249';
/** The API server's default ServiceCIDR, made from its --service-cluster-ip-range. */
const DEFAULT_SERVICE_CIDR = 'kubernetes';
const setup = useEipSetup('eipn', { addresses: ['198.18.227.0/29', SERVICE_PART], networkID: 5127 });
const { network: NET, nodes } = setup;
/** The lowest address the pool could hand out (.0 is the network address, ADDR-2): node a's. */
const NODE_IP = '198.18.227.1';
const OTHER_NODE_IP = '198.18.228.1';

beforeAll(async () => {
  await ensureNode(nodes[0], { internalIP: NODE_IP });
  await ensureNode(nodes[1], { internalIP: OTHER_NODE_IP });
  await waitFor(() => setup.replica.ctx.caches.nodes.get(undefined, nodes[1])?.status?.addresses?.length || undefined, {
    what: "the controller's Node cache has the addresses",
  });
  await waitFor(() => setup.replica.ctx.caches.serviceCIDRs?.get(undefined, DEFAULT_SERVICE_CIDR), {
    what: "the controller's ServiceCIDR cache has the default ServiceCIDR",
  });
});

/** The Events on an object of the namespace, by reason. */
const eventsOf = async (ns: string, name: string, reason: string) =>
  (await listEvents(ns)).filter((e) => e.regarding?.name === name && e.reason === reason);

describe("SEC-5: the cluster's own addresses are never an ElasticIP", () => {
  const ns = useNamespace();

  it("SEC-5, EIP-3: a pool covering a Node's InternalIP and part of the Service range hands out neither: the lowest free address after the Node's is taken", async () => {
    const namespace = ns();
    await createEip(namespace, 'lowest', NET);
    const eip = await waitForMatch(
      () => getEip(namespace, 'lowest'),
      (e) => e?.status?.address,
      'an address',
    );
    expect(eip.status?.address).toBe('198.18.227.2');
  });

  it.each([
    {
      what: 'that is a Node address',
      naming: 'the Node',
      ip: NODE_IP,
      owner: () => `the InternalIP of Node ${nodes[0]}`,
    },
    {
      what: 'in the Service range',
      naming: 'the ServiceCIDR',
      ip: SERVICE_IP,
      owner: () => `(ServiceCIDR ${DEFAULT_SERVICE_CIDR})`,
    },
  ])('SEC-5, EIP-3: a requestedIP $what is refused with a condition naming $naming', async ({ ip, owner }) => {
    const namespace = ns();
    await createEip(namespace, 'asks', NET, ip);
    const eip = await eipIn(namespace, 'asks', 'Error');
    expect(eip.status?.address).toBeUndefined();
    expect(condition(eip, 'Allocated')).toMatchObject({
      status: 'False',
      reason: 'RequestedIPIsClusterAddress',
      message: expect.stringContaining(owner()),
    });
  });
});

describe('SEC-5: the AddressPool webhook warns about an overlap with a Node address', () => {
  let webhook: TestWebhook;
  const pool = `eipn-warn-${setup.suffix}`;
  const servicePool = `eipn-warn-svc-${setup.suffix}`;
  beforeAll(async () => {
    webhook = await startTestWebhook('poolwarn');
  });
  afterAll(async () => {
    await deleteClusterObjects(JuneauResources.addressPools, [pool, servicePool]);
    await webhook?.stop();
  });

  it("SEC-5, AP-2: a pool covering a Node's InternalIP is allowed with a warning naming the Node", async () => {
    const applied = await apply(addressPool(pool, ['198.18.228.0/30'], webhook.labels));
    expect(applied.ok).toBe(true);
    expect(applied.output).toContain(
      `Warning: spec.addresses[0]: "198.18.228.0/30" overlaps the InternalIP of Node ${nodes[1]}`,
    );
  });

  it('SEC-5, AP-2: a pool covering part of the Service range is allowed with a warning naming the ServiceCIDR', async () => {
    const applied = await apply(addressPool(servicePool, ['10.96.254.0/30'], webhook.labels));
    expect(applied.ok).toBe(true);
    expect(applied.output).toContain(
      `Warning: spec.addresses[0]: "10.96.254.0/30" overlaps Service range 10.96.0.0/16 (ServiceCIDR ${DEFAULT_SERVICE_CIDR})`,
    );
  });
});

describe('SEC-2: no NetworkInterface address for a Pod that has a node address', () => {
  const ns = useNamespace();

  it('SEC-2, NIC-1: a hostNetwork Pod gets no NetworkInterface, and an Event says why', async () => {
    const namespace = ns();
    await rest.create(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'host', namespace, annotations: plain },
      spec: { nodeName: nodes[0], hostNetwork: true, containers: [{ name: 'main', image: 'registry.invalid/none' }] },
    } as KubeObject);
    const [event] = await waitFor(
      async () => {
        const found = await eventsOf(namespace, 'host', 'HostNetworkPod');
        return found.length ? found : undefined;
      },
      { what: 'the HostNetworkPod Event' },
    );
    expect(event.note).toContain('spec.hostNetwork');
    // The pass that recorded the Event is the one that would have created the NIC.
    expect(await getNic(namespace, 'host.eth0')).toBeUndefined();
    // Positive control: an ordinary Pod next to it gets its NIC.
    await createPod(namespace, 'web', { nodeName: nodes[0], annotations: plain, podIP: '10.244.9.2' });
    await waitFor(async () => (await getNic(namespace, 'web.eth0'))?.spec.address === '10.244.9.2', {
      what: 'web.eth0 with its address',
    });
  });

  it("SEC-2, NIC-1: a Pod whose IP is a Node's InternalIP: its NetworkInterface never gets that address, and an Event names the Node", async () => {
    const namespace = ns();
    await createPod(namespace, 'spoof', {
      nodeName: nodes[0],
      annotations: { [ANNOTATIONS.networks]: JSON.stringify([{ interface: 'eth0' }]) },
      podIP: NODE_IP,
    });
    const [event] = await waitFor(
      async () => {
        const found = await eventsOf(namespace, 'spoof', 'PodIPIsNodeAddress');
        return found.length ? found : undefined;
      },
      { what: 'the PodIPIsNodeAddress Event' },
    );
    expect(event.note).toContain(`status.podIP ${NODE_IP} is the InternalIP of Node ${nodes[0]}`);
    // The NIC may exist from before the IP was known; the pass that recorded the Event patched nothing.
    expect((await getNic(namespace, 'spoof.eth0'))?.spec.address).toBeUndefined();
  });
});
