// What an ElasticIP user may not use although it names it, on the real API server with the
// reconcilers in-process: a NIC whose Pod has stopped, is being deleted or is gone (SEC-1), and a
// NIC that already has an attachment or holds an ElasticIP directly (SEC-12); and the Pod cache that
// decides it, trimmed to the fields read (SEC-4). No node answers for
// the address then (no ARPAdvertisement), and the agent, which only translates for an Attached
// attachment or a Ready NIC, installs nothing.
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { sleep } from '../sleep';
import type { KubeObject } from '../../runtime/kube/types';
import { useNamespace, waitFor, waitForMatch } from './fixture';
import {
  attachmentIn,
  condition,
  createAttachment,
  createEip,
  createPod,
  deleteObject,
  direct,
  eipAdName,
  eipIn,
  getAd,
  getAttachment,
  getEip,
  getNic,
  plain,
  rest,
  terminatePod,
  useEipSetup,
} from './eip-harness';

const setup = useEipSetup('eipv', { addresses: ['198.18.226.0/28'], networkID: 5126 });
const { network: NET, nodes } = setup;

/** The kubelet's report that the Pod's containers have all ended. */
const setPodPhase = (ns: string, name: string, phase: 'Succeeded' | 'Failed') =>
  rest.patch(Resources.pods, ns, name, 'merge', { status: { phase } }, { subresource: 'status' });

/** ElasticIP `eip` attached through NAT to Pod `batch` (Running, 10.244.7.9) on node a, and advertised there. */
async function attachedBatch(namespace: string): Promise<string> {
  await createEip(namespace, 'eip', NET);
  await createPod(namespace, 'batch', { nodeName: nodes[0], annotations: plain, podIP: '10.244.7.9' });
  await createAttachment(namespace, 'batch-eip', 'eip', 'batch.eth0');
  await attachmentIn(namespace, 'batch-eip', 'Attached');
  const adName = eipAdName(namespace, 'eip');
  await waitFor(async () => (await getAd(adName))?.spec.nodeName === nodes[0], { what: 'ARPAdvertisement on node a' });
  return adName;
}

/** The attachment Pending PodNotRunning naming the Pod, the ElasticIP Available saying why, no ARPAdvertisement. */
async function expectWithheldFromPod(namespace: string, adName: string, state: string): Promise<void> {
  const pending = await waitForMatch(
    () => getAttachment(namespace, 'batch-eip'),
    (a) => a?.status?.reason === 'PodNotRunning',
    'attachment PodNotRunning',
  );
  expect(pending.status).toMatchObject({ phase: 'Pending', message: expect.stringContaining(`Pod batch`) });
  expect(pending.status?.message).toContain(state);
  expect(condition(pending, 'Attached')).toMatchObject({ status: 'False', reason: 'PodNotRunning' });
  const eip = await eipIn(namespace, 'eip', 'Available');
  expect(eip.status?.attachment).toBeUndefined();
  expect(condition(eip, 'Attached')).toMatchObject({
    status: 'False',
    reason: 'PodNotRunning',
    message: expect.stringContaining('ElasticIPAttachment batch-eip'),
  });
  // The ElasticIP's pass that wrote this status deletes the ARPAdvertisement next (it existed above).
  await waitFor(async () => (await getAd(adName)) === undefined, { what: 'ARPAdvertisement withdrawn' });
}

describe('SEC-1: a NIC whose Pod is not running uses no ElasticIP', () => {
  const ns = useNamespace();

  it('SEC-1, EIPA-1: NAT — Attached, then the Pod Succeeded: Pending PodNotRunning naming the Pod, ARPAdvertisement withdrawn', async () => {
    const namespace = ns();
    const adName = await attachedBatch(namespace);
    await setPodPhase(namespace, 'batch', 'Succeeded');
    await expectWithheldFromPod(namespace, adName, 'has Succeeded');
  });

  it('SEC-1, EIPA-1: NAT — the Pod Failed: Pending PodNotRunning', async () => {
    const namespace = ns();
    const adName = await attachedBatch(namespace);
    await setPodPhase(namespace, 'batch', 'Failed');
    await expectWithheldFromPod(namespace, adName, 'has Failed');
  });

  it('SEC-1, EIPA-1: NAT — the Pod is being deleted (deletionTimestamp): Pending PodNotRunning at once, not when the NIC is collected', async () => {
    const namespace = ns();
    const adName = await attachedBatch(namespace);
    await terminatePod(namespace, 'batch');
    await expectWithheldFromPod(namespace, adName, 'is being deleted');
    // The NIC is still there (no kubelet: the Pod stays Terminating), so this is the Pod's verdict.
    expect(await getNic(namespace, 'batch.eth0')).toBeDefined();
  });

  it('SEC-1, EIP-11: direct — the holder Pod Succeeded: its NIC Pending PodNotRunning, the waiting NIC gets the address and the ARPAdvertisement moves', async () => {
    const namespace = ns();
    await createEip(namespace, 'eip', NET);
    await createPod(namespace, 'vm-old', { nodeName: nodes[0], annotations: direct('eip'), podIP: '10.244.7.10' });
    await eipIn(namespace, 'eip', 'Attached');
    await createPod(namespace, 'vm-new', { nodeName: nodes[1], annotations: direct('eip'), podIP: '10.244.8.10' });
    await waitFor(async () => (await getNic(namespace, 'vm-new.eth0'))?.status?.reason === 'ElasticIPHeldElsewhere', {
      what: 'vm-new waits for vm-old (EIP-11 rule 1)',
    });
    const adName = eipAdName(namespace, 'eip');
    expect((await getAd(adName))?.spec.nodeName).toBe(nodes[0]);

    await setPodPhase(namespace, 'vm-old', 'Succeeded');
    const stopped = await waitForMatch(
      () => getNic(namespace, 'vm-old.eth0'),
      (n) => n?.status?.reason === 'PodNotRunning',
      'vm-old.eth0 PodNotRunning',
    );
    expect(stopped.status).toMatchObject({ phase: 'Pending', message: expect.stringContaining('Pod vm-old') });
    const attached = await waitForMatch(
      () => getEip(namespace, 'eip'),
      (e) => e?.status?.attachment?.name === 'vm-new.eth0',
      'vm-new.eth0 holds the ElasticIP',
    );
    expect(attached.status?.phase).toBe('Attached');
    await waitFor(async () => (await getAd(adName))?.spec.nodeName === nodes[1], { what: 'ARPAdvertisement on b' });
    await waitFor(async () => (await getNic(namespace, 'vm-new.eth0'))?.status?.phase === 'Ready', {
      what: 'vm-new.eth0 Ready',
    });
  });
});

describe('SEC-12: one attachment per NIC, and no NAT on a NIC that holds an ElasticIP', () => {
  const ns = useNamespace();

  it('SEC-12, EIPA-1: a second attachment of the same NIC is Pending NetworkInterfaceInUse naming the first, with no ARPAdvertisement; it takes over once the first is deleted', async () => {
    const namespace = ns();
    await createEip(namespace, 'first', NET);
    await createEip(namespace, 'second', NET);
    await createPod(namespace, 'web', { nodeName: nodes[0], annotations: plain, podIP: '10.244.7.11' });
    await createAttachment(namespace, 'web-first', 'first', 'web.eth0');
    await attachmentIn(namespace, 'web-first', 'Attached');
    // creationTimestamp has a one-second resolution: the second one is younger, not a tie broken by name.
    await sleep(1_100);
    await createAttachment(namespace, 'a-second', 'second', 'web.eth0');

    const inUse = await waitForMatch(
      () => getAttachment(namespace, 'a-second'),
      (a) => a?.status?.reason === 'NetworkInterfaceInUse',
      'a-second NetworkInterfaceInUse',
    );
    expect(inUse.status).toMatchObject({
      phase: 'Pending',
      message: expect.stringContaining('ElasticIPAttachment web-first'),
    });
    const second = await waitForMatch(
      () => getEip(namespace, 'second'),
      (e) => condition(e, 'Attached')?.reason === 'NetworkInterfaceInUse',
      'ElasticIP second says why',
    );
    expect(second.status?.phase).toBe('Available');
    // Positive control: the first one's ARPAdvertisement exists; the second's pass wrote no other.
    expect((await getAd(eipAdName(namespace, 'first')))?.spec.nodeName).toBe(nodes[0]);
    expect(await getAd(eipAdName(namespace, 'second'))).toBeUndefined();
    expect((await getAttachment(namespace, 'web-first'))?.status?.phase).toBe('Attached');

    await deleteObject(JuneauResources.elasticIPAttachments, namespace, 'web-first');
    await attachmentIn(namespace, 'a-second', 'Attached');
    await waitFor(async () => (await getAd(eipAdName(namespace, 'second')))?.spec.nodeName === nodes[0], {
      what: "the second one's ARPAdvertisement",
    });
  });

  it('SEC-12, EIP-5: an attachment of a NIC that holds another ElasticIP directly is Pending NetworkInterfaceInUse naming it', async () => {
    const namespace = ns();
    await createEip(namespace, 'held', NET);
    await createEip(namespace, 'nat', NET);
    await createPod(namespace, 'web', { nodeName: nodes[0], annotations: direct('held'), podIP: '10.244.7.12' });
    await eipIn(namespace, 'held', 'Attached');
    await createAttachment(namespace, 'web-nat', 'nat', 'web.eth0');
    const inUse = await waitForMatch(
      () => getAttachment(namespace, 'web-nat'),
      (a) => a?.status?.reason === 'NetworkInterfaceInUse',
      'web-nat NetworkInterfaceInUse',
    );
    expect(inUse.status).toMatchObject({ phase: 'Pending', message: expect.stringContaining('ElasticIP held') });
    const nat = await waitForMatch(
      () => getEip(namespace, 'nat'),
      (e) => condition(e, 'Attached')?.reason === 'NetworkInterfaceInUse',
      'ElasticIP nat says why',
    );
    expect(nat.status?.phase).toBe('Available');
    expect((await getAd(eipAdName(namespace, 'held')))?.spec.nodeName).toBe(nodes[0]);
    expect(await getAd(eipAdName(namespace, 'nat'))).toBeUndefined();
  });
});

describe("SEC-4: the controller's Pod cache keeps only what it reads", () => {
  const ns = useNamespace();

  it('SEC-4, H4: no managedFields, containers or foreign annotations; the Juneau annotation, labels (a NATGateway podSelector, NGW-1), node, phase and IP stay', async () => {
    const namespace = ns();
    await rest.create(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'big',
        namespace,
        labels: { app: 'big' },
        annotations: { ...plain, 'example.com/blob': 'x'.repeat(10_000) },
      },
      spec: { nodeName: nodes[0], containers: [{ name: 'main', image: 'registry.invalid/none' }] },
    } as KubeObject);
    await rest.patch(
      Resources.pods,
      namespace,
      'big',
      'merge',
      { status: { phase: 'Running', podIP: '10.244.7.20' } },
      { subresource: 'status' },
    );
    const cached = await waitForMatch(
      async () => setup.replica.ctx.caches.pods.get(namespace, 'big'),
      (p) => p?.status?.podIP === '10.244.7.20',
      'the cache has the Pod with its IP',
    );
    expect(cached).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'big',
        namespace,
        uid: expect.any(String),
        resourceVersion: expect.any(String),
        creationTimestamp: expect.any(String),
        labels: { app: 'big' },
        annotations: plain,
      },
      spec: { nodeName: nodes[0] },
      status: { phase: 'Running', podIP: '10.244.7.20' },
    });
  });
});
