// ElasticIP end to end on the real API server, the reconcilers in-process: direct use through
// both Pod annotations (NIC-1, EIP-4, EIP-7, EIP-9, EIP-17, EIP-18), the ARPAdvertisement
// following a re-created Pod to another node (EIP-17), NAT through an ElasticIPAttachment
// (EIPA-1, EIP-14), and a requestedIP that is already taken (EIP-3).
import { ANNOTATIONS, FINALIZERS } from '../../api';
import { JuneauResources, Resources, resourcePath } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { deletePodNow, useNamespace, waitFor, waitForMatch } from './fixture';
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
  getClaim,
  getEip,
  getNic,
  listEvents,
  rest,
  useEipSetup,
} from './eip-harness';

const { pool: POOL, network: NET, nodes } = useEipSetup('eipt', { addresses: ['198.18.90.0/28'], networkID: 5001 });
const networks = (list: unknown) => ({ [ANNOTATIONS.networks]: JSON.stringify(list) });

describe('ElasticIP direct use (NIC-1, EIP-4, EIP-7, EIP-9, EIP-17, EIP-18)', () => {
  const ns = useNamespace();

  it('EIP-18/EIP-17: Available without ARPAdvertisement; a Pod with the elastic-ip shorthand gets the address on its node; a re-created Pod on another node moves it', async () => {
    const namespace = ns();
    await createEip(namespace, 'web-eip', NET);
    // EIP-9 Available, EIP-3 a claim held by the ElasticIP, the finalizer (ARP-6, EIP-15), no ARPAdvertisement (EIP-18).
    const available = await eipIn(namespace, 'web-eip', 'Available');
    const address = available.status!.address!;
    expect(address).toMatch(/^198\.18\.90\./);
    expect(available.status?.addressPool).toBe(POOL);
    expect(available.metadata.finalizers).toContain(FINALIZERS.elasticIP);
    expect(condition(available, 'Allocated')).toMatchObject({
      status: 'True',
      reason: 'AddressAllocated',
      observedGeneration: 1,
    });
    expect(condition(available, 'Attached')).toMatchObject({ status: 'False', reason: 'NotInUse' });
    expect((await getClaim(`ipv4.${address}`))?.spec.holder).toMatchObject({
      kind: 'ElasticIP',
      namespace,
      name: 'web-eip',
    });
    const adName = eipAdName(namespace, 'web-eip');
    expect(await getAd(adName)).toBeUndefined();

    // NIC-1: the Pod's NetworkInterface, owned by it, with node, address and ElasticIP.
    await createPod(namespace, 'web', { nodeName: nodes[0], annotations: direct('web-eip'), podIP: '10.1.0.5' });
    const nic = await waitForMatch(
      () => getNic(namespace, 'web.eth0'),
      (n) => n?.spec.address,
      'NetworkInterface web.eth0 with the Pod address',
    );
    expect(nic.spec).toEqual({
      podName: 'web',
      interface: 'eth0',
      nodeName: nodes[0],
      address: '10.1.0.5',
      elasticIP: 'web-eip',
    });
    const pod = await rest.get<KubeObject>(Resources.pods, namespace, 'web');
    expect(nic.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Pod',
        name: 'web',
        uid: pod.metadata!.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);

    // EIP-7/9: Attached, status.attachment names the NIC; the NIC is Ready; EIP-17: the ARPAdvertisement is on the Pod's node.
    const attached = await eipIn(namespace, 'web-eip', 'Attached');
    expect(attached.status?.attachment).toEqual({ kind: 'NetworkInterface', name: 'web.eth0' });
    expect(condition(attached, 'Attached')).toMatchObject({ status: 'True', reason: 'AttachedDirectly' });
    await waitFor(async () => (await getNic(namespace, 'web.eth0'))?.status?.phase === 'Ready', { what: 'NIC Ready' });
    expect((await getNic(namespace, 'web.eth0'))?.status).toMatchObject({ reason: 'ElasticIPHeld' });
    const ad = await waitFor(() => getAd(adName), { what: 'ARPAdvertisement' });
    expect(ad.spec).toEqual({ externalNetwork: NET, address, nodeName: nodes[0] });

    // The Pod is re-created on another node (same name): the old NIC goes with the old Pod, the ARPAdvertisement follows.
    await deletePodNow(namespace, 'web');
    await createPod(namespace, 'web', { nodeName: nodes[1], annotations: direct('web-eip'), podIP: '10.1.0.6' });
    const moved = await waitForMatch(
      () => getAd(adName),
      (a) => a?.spec.nodeName === nodes[1],
      'ARPAdvertisement on node b',
    );
    expect(moved.spec.address).toBe(address);
    expect((await getNic(namespace, 'web.eth0'))?.spec).toMatchObject({ nodeName: nodes[1], address: '10.1.0.6' });

    // EIP-18: unused again -> no ARPAdvertisement, phase Available.
    await deletePodNow(namespace, 'web');
    await waitFor(async () => (await getAd(adName)) === undefined, { what: 'ARPAdvertisement deleted' });
    await waitFor(async () => (await getEip(namespace, 'web-eip'))?.status?.phase === 'Available', {
      what: 'Available again',
    });

    // One Event per phase transition.
    const reasons = (await listEvents(namespace)).filter((e) => e.regarding?.kind === 'ElasticIP').map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['NotInUse', 'AttachedDirectly']));
  });

  it('NIC-1/EIP-4: the networks annotation — a direct NIC and a plain NIC; an unscheduled Pod gets its node later', async () => {
    const namespace = ns();
    await createEip(namespace, 'api-eip', NET);
    await createPod(namespace, 'api', {
      annotations: networks([{ interface: 'eth0' }, { interface: 'net1', elasticIP: 'api-eip' }]),
    });
    const plain = await waitFor(() => getNic(namespace, 'api.eth0'), { what: 'api.eth0' });
    expect(plain.spec).toEqual({ podName: 'api', interface: 'eth0' });
    await waitFor(async () => (await getNic(namespace, 'api.eth0'))?.status?.reason === 'NoElasticIP', {
      what: 'plain NIC Ready',
    });
    // Held, but nobody can answer before the Pod has a node (EIP-17 needs a node).
    const held = await waitForMatch(
      () => getEip(namespace, 'api-eip'),
      (e) => e?.status?.attachment?.name === 'api.net1',
      'api.net1 holds api-eip',
    );
    expect(condition(held, 'Attached')?.message).toContain('not scheduled');
    expect(await getAd(eipAdName(namespace, 'api-eip'))).toBeUndefined();
    // "Scheduling": a binding sets spec.nodeName.
    await rest.request('POST', resourcePath(Resources.pods, namespace, 'api', 'binding'), {
      body: { metadata: { name: 'api' }, target: { kind: 'Node', name: nodes[1] } },
    });
    const ad = await waitFor(() => getAd(eipAdName(namespace, 'api-eip')), {
      what: 'ARPAdvertisement after scheduling',
    });
    expect(ad.spec.nodeName).toBe(nodes[1]);
    expect((await getNic(namespace, 'api.eth0'))?.spec.nodeName).toBe(nodes[1]);
  });

  it('EIP-3: a requestedIP held by another ElasticIP leaves it Pending, naming the holder; nothing is stolen', async () => {
    const namespace = ns();
    await createEip(namespace, 'first', NET, '198.18.90.9');
    await waitFor(async () => (await getEip(namespace, 'first'))?.status?.address === '198.18.90.9', {
      what: 'first has .9',
    });
    await createEip(namespace, 'second', NET, '198.18.90.9');
    const pending = await eipIn(namespace, 'second', 'Pending');
    expect(condition(pending, 'Allocated')).toMatchObject({ status: 'False', reason: 'RequestedIPInUse' });
    expect(condition(pending, 'Allocated')?.message).toContain(`ElasticIP ${namespace}/first`);
    expect(pending.status?.address).toBeUndefined();
    expect((await getClaim('ipv4.198.18.90.9'))?.spec.holder).toMatchObject({ name: 'first' });
    // Once the first lets go, the second gets it.
    await deleteObject(JuneauResources.elasticIPs, namespace, 'first');
    await waitFor(async () => (await getEip(namespace, 'second'))?.status?.address === '198.18.90.9', {
      what: 'second gets .9',
    });
  });
});

describe('ElasticIP through NAT (EIPA-1, EIP-14, EIP-17)', () => {
  const ns = useNamespace();

  it('EIPA-1/EIP-17: an attachment to a Pod NIC is Attached with the node; the ARPAdvertisement is on that node; EIP-14 deletion releases everything', async () => {
    const namespace = ns();
    await createEip(namespace, 'nginx-eip', NET);
    await createPod(namespace, 'nginx', {
      nodeName: nodes[1],
      annotations: networks([{ interface: 'eth0' }]),
      podIP: '10.1.0.9',
    });
    await createAttachment(namespace, 'nginx-attach', 'nginx-eip', 'nginx.eth0');
    const attachment = await attachmentIn(namespace, 'nginx-attach', 'Attached');
    expect(attachment.status).toMatchObject({ nodeName: nodes[1], reason: 'Attached' });
    const eip = await getEip(namespace, 'nginx-eip');
    expect(eip?.status).toMatchObject({
      phase: 'Attached',
      attachment: { kind: 'ElasticIPAttachment', name: 'nginx-attach' },
    });
    expect(condition(eip, 'Attached')).toMatchObject({ status: 'True', reason: 'AttachedThroughNAT' });
    const address = eip!.status!.address!;
    const adName = eipAdName(namespace, 'nginx-eip');
    expect((await waitFor(() => getAd(adName), { what: 'ARPAdvertisement' })).spec).toEqual({
      externalNetwork: NET,
      address,
      nodeName: nodes[1],
    });

    // Detach: Available, no ARPAdvertisement (EIP-18).
    await deleteObject(JuneauResources.elasticIPAttachments, namespace, 'nginx-attach');
    await waitFor(async () => (await getAd(adName)) === undefined, { what: 'ARPAdvertisement gone after detach' });
    await waitFor(async () => (await getEip(namespace, 'nginx-eip'))?.status?.phase === 'Available', {
      what: 'Available',
    });

    // EIP-14: deleted while used through NAT: claim, ARPAdvertisement, finalizer released; the attachment says why it is Pending.
    await createAttachment(namespace, 'nginx-attach', 'nginx-eip', 'nginx.eth0');
    await waitFor(() => getAd(adName), { what: 'ARPAdvertisement again' });
    await deleteObject(JuneauResources.elasticIPs, namespace, 'nginx-eip');
    await waitFor(async () => (await getEip(namespace, 'nginx-eip')) === undefined, { what: 'ElasticIP gone' });
    expect(await getAd(adName)).toBeUndefined();
    expect(await getClaim(`ipv4.${address}`)).toBeUndefined();
    await waitFor(
      async () => (await getAttachment(namespace, 'nginx-attach'))?.status?.reason === 'ElasticIPNotFound',
      { what: 'attachment ElasticIPNotFound' },
    );
  });

  it('EIPA-2: a second attachment puts the ElasticIP in Error and nobody uses it', async () => {
    const namespace = ns();
    await createEip(namespace, 'eip', NET);
    await createPod(namespace, 'p1', { nodeName: nodes[0], annotations: networks([{ interface: 'eth0' }]) });
    await createPod(namespace, 'p2', { nodeName: nodes[1], annotations: networks([{ interface: 'eth0' }]) });
    await createAttachment(namespace, 'a1', 'eip', 'p1.eth0');
    await waitFor(() => getAd(eipAdName(namespace, 'eip')), {
      what: 'ARPAdvertisement for a1',
    });
    await createAttachment(namespace, 'a2', 'eip', 'p2.eth0');
    const error = await eipIn(namespace, 'eip', 'Error');
    expect(condition(error, 'Attached')).toMatchObject({ status: 'False', reason: 'MultipleAttachments' });
    expect(condition(error, 'Attached')?.message).toContain('a1 and a2');
    expect(error.status?.attachment).toBeUndefined();
    await waitFor(async () => (await getAd(eipAdName(namespace, 'eip'))) === undefined, {
      what: 'no ARPAdvertisement',
    });
    await waitFor(async () => (await getAttachment(namespace, 'a1'))?.status?.reason === 'MultipleAttachments', {
      what: 'a1 Pending',
    });
    await deleteObject(JuneauResources.elasticIPAttachments, namespace, 'a2');
    await attachmentIn(namespace, 'a1', 'Attached');
  });
});
