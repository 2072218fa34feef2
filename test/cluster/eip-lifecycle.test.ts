// ElasticIP rules that need time and several objects, on the real API server with the reconcilers
// in-process: the EIP-10 conflict and its recovery from either side, the EIP-11/12 handover
// between a terminating Pod's NIC and its replacement, EIP-15/16 deletion that waits for NICs,
// and the pod controller's EN-8 wait and malformed annotations (NIC-1).
import { ANNOTATIONS, type ElasticIP, type NetworkInterface } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import { deletePodNow, useNamespace, waitFor, waitForMatch } from './fixture';
import { expectNoChangesFor, watchForChanges } from './quiet-watch';
import {
  attachmentIn,
  condition,
  createAttachment,
  createEip,
  createNetwork,
  createPod,
  createPool,
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
  plain,
  setNetworkID,
  terminatePod,
  touchAndAwaitPass,
  useEipSetup,
} from './eip-harness';

const setup = useEipSetup('eipl', { addresses: ['198.18.91.0/28'], networkID: 5002 });
const { suffix, network: NET, nodes } = setup;
/** Inside a quiet window: the ElasticIP is touched and its pass runs before the window closes. */
const touchEip = (namespace: string) =>
  touchAndAwaitPass(setup.replica, 'elasticip', JuneauResources.elasticIPs, namespace, 'eip');
/** A watch that fails on any change of `project` of the ElasticIP `eip`. */
const eipChanges = (namespace: string, project: (e: ElasticIP) => unknown) =>
  watchForChanges<ElasticIP>({ type: JuneauResources.elasticIPs, namespace, name: 'eip', project });

describe('EIP-10: an attachment and a NIC at once', () => {
  const ns = useNamespace();
  /** ElasticIP `eip` held by Pod web's NIC (node 0), then attached to Pod nat's NIC (node 1) too: Error. */
  const conflict = async (namespace: string) => {
    await createEip(namespace, 'eip', NET);
    await createPod(namespace, 'web', { nodeName: nodes[0], annotations: direct('eip') });
    await createPod(namespace, 'nat', { nodeName: nodes[1], annotations: plain });
    await eipIn(namespace, 'eip', 'Attached');
    // The slip-through of EIP-5 (no webhook here): an attachment for an ElasticIP a NIC holds.
    await createAttachment(namespace, 'nat-attach', 'eip', 'nat.eth0');
    return eipIn(namespace, 'eip', 'Error');
  };

  it('EIP-10: Error Conflict naming both; the NIC Pending WaitingForElasticIP naming the attachment; the attachment Pending; deleting the attachment gives the NIC the address', async () => {
    const namespace = ns();
    const error = await conflict(namespace);
    expect(condition(error, 'Attached')).toMatchObject({ status: 'False', reason: 'Conflict' });
    expect(condition(error, 'Attached')?.message).toMatch(
      /ElasticIPAttachment\(s\) nat-attach.*NetworkInterface\(s\) web\.eth0/,
    );
    expect(error.status?.attachment).toBeUndefined();
    await waitFor(async () => (await getAd(eipAdName(namespace, 'eip'))) === undefined, {
      what: 'no ARPAdvertisement during the conflict',
    });
    const nic = await waitForMatch(
      () => getNic(namespace, 'web.eth0'),
      (n) => n?.status?.phase === 'Pending',
      'NIC Pending',
    );
    expect(nic.status).toMatchObject({ reason: 'WaitingForElasticIP', message: expect.stringContaining('nat-attach') });
    await waitFor(async () => (await getAttachment(namespace, 'nat-attach'))?.status?.reason === 'Conflict', {
      what: 'attachment Pending Conflict',
    });
    expect((await getAttachment(namespace, 'nat-attach'))?.status?.phase).toBe('Pending');

    // Recovery: delete the attachment -> the NIC proceeds.
    await deleteObject(JuneauResources.elasticIPAttachments, namespace, 'nat-attach');
    const attached = await eipIn(namespace, 'eip', 'Attached');
    expect(attached.status?.attachment).toEqual({ kind: 'NetworkInterface', name: 'web.eth0' });
    await waitFor(async () => (await getNic(namespace, 'web.eth0'))?.status?.phase === 'Ready', {
      what: 'NIC Ready again',
    });
    // The status is written before the ARPAdvertisement (one pass, two writes): wait for it to exist.
    expect(
      (
        await waitFor(() => getAd(eipAdName(namespace, 'eip')), {
          what: 'ARPAdvertisement recreated',
        })
      ).spec.nodeName,
    ).toBe(nodes[0]);
  });

  it('EIP-10: recovery from the other side — deleting the Pod gives the attachment the address', async () => {
    const namespace = ns();
    await conflict(namespace);
    await deletePodNow(namespace, 'web');
    const attached = await eipIn(namespace, 'eip', 'Attached');
    expect(attached.status?.attachment).toEqual({ kind: 'ElasticIPAttachment', name: 'nat-attach' });
    await attachmentIn(namespace, 'nat-attach', 'Attached');
    expect(
      (
        await waitFor(() => getAd(eipAdName(namespace, 'eip')), {
          what: 'ARPAdvertisement',
        })
      ).spec.nodeName,
    ).toBe(nodes[1]);
  });
});

describe('EIP-11/12: a terminating Pod and its replacement', () => {
  const ns = useNamespace();

  it('EIP-11 rule 1 keeps the address on the NIC of the terminating Pod; EIP-12 WaitingForHandover once status.attachment is lost; the replacement gets it only when the old NIC is gone', async () => {
    const namespace = ns();
    await createEip(namespace, 'eip', NET);
    await createPod(namespace, 'vm-old', { nodeName: nodes[0], annotations: direct('eip') });
    await eipIn(namespace, 'eip', 'Attached');
    const adName = eipAdName(namespace, 'eip');
    await waitFor(async () => (await getAd(adName))?.spec.nodeName === nodes[0], {
      what: 'ARPAdvertisement on node a',
    });

    // The old Pod terminates (no kubelet: it stays Terminating); the replacement appears on node b.
    await terminatePod(namespace, 'vm-old');
    await createPod(namespace, 'vm-new', { nodeName: nodes[1], annotations: direct('eip') });
    const loser = await waitForMatch(
      () => getNic(namespace, 'vm-new.eth0'),
      (n) => n?.status?.reason === 'ElasticIPHeldElsewhere',
      'replacement NIC Pending',
    );
    expect(loser.status).toMatchObject({ phase: 'Pending', message: expect.stringContaining('vm-old.eth0') });
    // Rule 1: the recorded holder keeps it while terminating; the ARPAdvertisement stays.
    expect((await getEip(namespace, 'eip'))?.status?.attachment).toEqual({
      kind: 'NetworkInterface',
      name: 'vm-old.eth0',
    });
    expect((await getAd(adName))?.spec.nodeName).toBe(nodes[0]);
    const kept = [
      await eipChanges(namespace, (e) => e.status?.attachment),
      await watchForChanges({ type: JuneauResources.arpAdvertisements, name: adName }),
    ];
    await touchEip(namespace);
    await expectNoChangesFor(1_000, ...kept);

    // The ElasticIP passes through Error (EIP-10), which clears status.attachment.
    await createPod(namespace, 'nat', { nodeName: nodes[1], annotations: plain });
    await createAttachment(namespace, 'nat-attach', 'eip', 'nat.eth0');
    await eipIn(namespace, 'eip', 'Error');
    await deleteObject(JuneauResources.elasticIPAttachments, namespace, 'nat-attach');

    // Rule 2 / EIP-12: Available, Attached False WaitingForHandover naming the terminating NIC; nobody answers.
    const waiting = await waitForMatch(
      () => getEip(namespace, 'eip'),
      (e) => condition(e, 'Attached')?.reason === 'WaitingForHandover',
      'WaitingForHandover',
    );
    expect(waiting.status?.phase).toBe('Available');
    expect(condition(waiting, 'Attached')).toMatchObject({
      status: 'False',
      message: expect.stringContaining('vm-old.eth0'),
    });
    expect(condition(waiting, 'Attached')?.message).not.toContain('vm-new.eth0');
    await waitFor(async () => (await getAd(adName)) === undefined, {
      what: 'no ARPAdvertisement while waiting (EIP-18)',
    });
    await waitFor(async () => (await getNic(namespace, 'vm-new.eth0'))?.status?.reason === 'WaitingForHandover', {
      what: 'replacement WaitingForHandover',
    });

    // The old Pod is gone -> its NIC is collected -> the replacement holds it on node b.
    await deletePodNow(namespace, 'vm-old');
    const attached = await eipIn(namespace, 'eip', 'Attached');
    expect(attached.status?.attachment).toEqual({ kind: 'NetworkInterface', name: 'vm-new.eth0' });
    await waitFor(async () => (await getAd(adName))?.spec.nodeName === nodes[1], {
      what: 'ARPAdvertisement on node b',
    });
    await waitFor(async () => (await getNic(namespace, 'vm-new.eth0'))?.status?.phase === 'Ready', {
      what: 'replacement Ready',
    });
  });
});

describe('EIP-15/16: deletion waits for the NICs', () => {
  const ns = useNamespace();
  /** ElasticIP `eip` held by Pod web's NIC on `node` and advertised, then deleted. */
  const deleteHeldEip = async (namespace: string, node: string) => {
    await createEip(namespace, 'eip', NET);
    await createPod(namespace, 'web', { nodeName: node, annotations: direct('eip') });
    const attached = await eipIn(namespace, 'eip', 'Attached');
    const adName = eipAdName(namespace, 'eip');
    await waitFor(() => getAd(adName), { what: 'ARPAdvertisement' });
    await deleteObject(JuneauResources.elasticIPs, namespace, 'eip');
    return { address: attached.status!.address!, adName };
  };
  /** A watch that fails on any change of the NIC's phase. */
  const nicPhaseChanges = (namespace: string, name: string) =>
    watchForChanges<NetworkInterface>({
      type: JuneauResources.networkInterfaces,
      namespace,
      name,
      project: (n) => n.status?.phase,
    });
  /** Deletes the last Pod whose NIC held `eip`: the ElasticIP is finalized and goes. */
  const deleteLastPod = async (namespace: string, pod: string) => {
    await deletePodNow(namespace, pod);
    await waitFor(async () => (await getEip(namespace, 'eip')) === undefined, { what: 'ElasticIP gone' });
  };

  it('EIP-15: the claim and the ARPAdvertisement stay, Allocated says WaitingForNetworkInterfaces listing the NICs; EIP-16: a new NIC gets nothing; gone once the Pods are', async () => {
    const namespace = ns();
    const { address, adName } = await deleteHeldEip(namespace, nodes[0]);
    const waiting = await waitForMatch(
      () => getEip(namespace, 'eip'),
      (e) => condition(e, 'Allocated')?.reason === 'WaitingForNetworkInterfaces',
      'WaitingForNetworkInterfaces',
    );
    expect(waiting.metadata.deletionTimestamp).toBeDefined();
    expect(condition(waiting, 'Allocated')?.message).toContain('web.eth0');
    expect(waiting.status?.attachment).toEqual({ kind: 'NetworkInterface', name: 'web.eth0' });

    // EIP-16: a Pod created now gets no address.
    await createPod(namespace, 'late', { nodeName: nodes[1], annotations: direct('eip') });
    await waitFor(async () => (await getNic(namespace, 'late.eth0'))?.status?.reason === 'ElasticIPDeleting', {
      what: 'late NIC Pending ElasticIPDeleting',
    });
    await waitFor(
      async () => condition(await getEip(namespace, 'eip'), 'Allocated')?.message.includes('late.eth0 and web.eth0'),
      { what: 'both NICs listed' },
    );

    await deletePodNow(namespace, 'web');
    // The holder is gone but the late NIC remains: still waiting, nothing released, nobody answers.
    await waitFor(async () => (await getAd(adName)) === undefined, { what: 'no holder, no ARPAdvertisement' });
    expect((await getClaim(`ipv4.${address}`))?.spec.holder).toMatchObject({ kind: 'ElasticIP', name: 'eip' });
    expect((await getNic(namespace, 'late.eth0'))?.status?.phase).toBe('Pending');
    // ... and stays so: the ElasticIP is not finalized, its claim not released, no ARPAdvertisement
    // comes back, the late NIC stays Pending.
    const waitingStill = [
      await eipChanges(namespace, (e) => [e.metadata.finalizers, e.status?.address]),
      await watchForChanges({ type: JuneauResources.allocationClaims, name: `ipv4.${address}` }),
      await watchForChanges({ type: JuneauResources.arpAdvertisements, name: adName }),
      await nicPhaseChanges(namespace, 'late.eth0'),
    ];
    await touchEip(namespace);
    await expectNoChangesFor(1_000, ...waitingStill);

    await deleteLastPod(namespace, 'late');
    expect(await getClaim(`ipv4.${address}`)).toBeUndefined();
    expect(await getAd(adName)).toBeUndefined();
  });

  it('EIP-15: while the holder remains, the ARPAdvertisement stays', async () => {
    const namespace = ns();
    const { adName } = await deleteHeldEip(namespace, nodes[1]);
    await waitFor(
      async () => condition(await getEip(namespace, 'eip'), 'Allocated')?.reason === 'WaitingForNetworkInterfaces',
      { what: 'waiting' },
    );
    expect((await getAd(adName))?.spec.nodeName).toBe(nodes[1]);
    expect((await getNic(namespace, 'web.eth0'))?.status?.phase).toBe('Ready');
    const stays = [
      await watchForChanges({ type: JuneauResources.arpAdvertisements, name: adName }),
      await nicPhaseChanges(namespace, 'web.eth0'),
    ];
    await touchEip(namespace);
    await expectNoChangesFor(1_000, ...stays);
    await deleteLastPod(namespace, 'web');
    expect(await getAd(adName)).toBeUndefined();
  });
});

describe('pod controller: EN-8 and malformed annotations (NIC-1)', () => {
  const ns = useNamespace();
  const NET0 = `eipl-net0-${suffix}`;
  const POOL0 = `eipl-b-${suffix}`;

  beforeAll(async () => {
    await createPool(POOL0, ['198.18.92.0/29']);
    await createNetwork(NET0, [POOL0]);
  });
  afterAll(async () => {
    await deleteObject(JuneauResources.externalNetworks, undefined, NET0);
    await deleteObject(JuneauResources.addressPools, undefined, POOL0);
  });

  it('EN-8, EIP-13: no NetworkInterface while the network has no networkID, an Event says why; NAT use does not wait; a NIC made while its ElasticIP was missing waits Pending for the ID too', async () => {
    const namespace = ns();
    // EIP-13: the ElasticIP does not exist yet: the NIC is created, Pending, its condition naming spec.elasticIP.
    await createPod(namespace, 'early', { nodeName: nodes[0], annotations: direct('late-eip') });
    const waiting = await waitForMatch(
      () => getNic(namespace, 'early.eth0'),
      (n) => n?.status?.reason === 'WaitingForElasticIP',
      'NIC early.eth0 Pending WaitingForElasticIP',
    );
    expect(waiting.status?.phase).toBe('Pending');
    expect(waiting.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'WaitingForElasticIP',
      message: expect.stringContaining('spec.elasticIP: ElasticIP late-eip'),
    });
    await createEip(namespace, 'eip', NET0);
    await createEip(namespace, 'nat-eip', NET0);
    await createPod(namespace, 'web', { nodeName: nodes[0], annotations: direct('eip') });
    await createPod(namespace, 'nat', { nodeName: nodes[0], annotations: plain });
    // NAT: the plain NIC, the attachment and the ElasticIP proceed without a network ID.
    await createAttachment(namespace, 'nat-attach', 'nat-eip', 'nat.eth0');
    await attachmentIn(namespace, 'nat-attach', 'Attached');
    const event = await waitFor(
      async () =>
        (await listEvents(namespace)).find((e) => e.regarding?.kind === 'Pod' && e.reason === 'WaitingForNetworkID'),
      { what: 'WaitingForNetworkID Event' },
    );
    expect(event.note).toContain(`ExternalNetwork ${NET0}`);
    expect(await getNic(namespace, 'web.eth0')).toBeUndefined();
    expect((await getEip(namespace, 'eip'))?.status?.phase).toBe('Available');
    // The ElasticIP appears on the network without an ID: the NIC that exists gets no address (EN-8).
    await createEip(namespace, 'late-eip', NET0);
    const late = await waitForMatch(
      () => getEip(namespace, 'late-eip'),
      (e) => e?.status?.conditions?.some((c) => c.type === 'Attached' && c.reason === 'WaitingForNetworkID') ?? false,
      'ElasticIP late-eip Attached False WaitingForNetworkID',
    );
    expect({ phase: late.status?.phase, attachment: late.status?.attachment }).toEqual({
      phase: 'Available',
      attachment: undefined,
    });
    expect((await getNic(namespace, 'early.eth0'))?.status).toMatchObject({
      phase: 'Pending',
      reason: 'WaitingForNetworkID',
      message: expect.stringContaining(`ExternalNetwork ${NET0}, which has no status.networkID yet`),
    });

    await setNetworkID(NET0, 5003);
    await waitFor(() => getNic(namespace, 'web.eth0'), { what: 'NIC once networkID is written' });
    await eipIn(namespace, 'eip', 'Attached');
    expect((await eipIn(namespace, 'late-eip', 'Attached')).status?.attachment).toEqual({
      kind: 'NetworkInterface',
      name: 'early.eth0',
    });
  });

  it('NIC-1: a malformed annotation is an Event on the Pod and no NetworkInterface, and the controller keeps working', async () => {
    const namespace = ns();
    await createPod(namespace, 'bad', {
      nodeName: nodes[0],
      annotations: { [ANNOTATIONS.networks]: '[{"interface":"eth0","elasticIp":"x"}]' },
    });
    await createPod(namespace, 'good', { nodeName: nodes[0], annotations: plain });
    const event = await waitFor(
      async () =>
        (await listEvents(namespace)).find(
          (e) => e.regarding?.name === 'bad' && e.reason === 'InvalidNetworksAnnotation',
        ),
      { what: 'InvalidNetworksAnnotation Event' },
    );
    expect(event.type).toBe('Warning');
    expect(event.note).toContain('unknown key(s) "elasticIp"');
    await waitFor(() => getNic(namespace, 'good.eth0'), { what: 'the good Pod still gets its NIC' });
    expect(await getNic(namespace, 'bad.eth0')).toBeUndefined();
  });
});
