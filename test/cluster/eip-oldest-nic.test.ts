// EIP-11 rule 3 on the real API server: with no recorded holder (status.attachment is cleared when
// the ElasticIP passes through Error, EIP-10) and no referencing NIC being deleted, the oldest
// NetworkInterface gets the address — by the creationTimestamp the API server wrote — and NICs of
// the same second are ordered by name. The reconcilers run in-process (eip-harness).
import { type ARPAdvertisement, type NetworkInterface } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { sleep } from '../sleep';
import { deletePodNow, useNamespace, waitFor, waitForMatch } from './fixture';
import {
  condition,
  createAttachment,
  createEip,
  createPod,
  deleteObject,
  direct,
  eipIn,
  getEip,
  getNic,
  plain,
  rest,
  useEipSetup,
} from './eip-harness';

const { network: NET, nodes } = useEipSetup('eipo', { addresses: ['198.18.95.0/28'], networkID: 5011 });

const createdAt = (nic: NetworkInterface | undefined) => Date.parse(String(nic?.metadata.creationTimestamp));

/** The ARPAdvertisement of an address, found by address (its name is the controller's business, NAME-1). */
async function advertisementOf(address: string | undefined): Promise<ARPAdvertisement | undefined> {
  const list = await rest.list<ARPAdvertisement & KubeObject>(JuneauResources.arpAdvertisements);
  return list.items.find((a) => a.spec.address === address);
}

async function nicOf(namespace: string, name: string): Promise<NetworkInterface> {
  return waitFor(() => getNic(namespace, name), { what: `NetworkInterface ${name}` });
}

/** Clears status.attachment the way EIP-11 describes: an attachment makes the ElasticIP Error
 * (EIP-10), then goes; from then on only rule 2 or 3 can pick the holder. */
async function passThroughError(namespace: string, eip: string): Promise<void> {
  await createPod(namespace, `nat-${eip}`, { nodeName: nodes[1], annotations: plain });
  await createAttachment(namespace, `attach-${eip}`, eip, `nat-${eip}.eth0`);
  const error = await eipIn(namespace, eip, 'Error');
  expect(error.status?.attachment).toBeUndefined();
  await deleteObject(JuneauResources.elasticIPAttachments, namespace, `attach-${eip}`);
}

async function holderAfterError(namespace: string, eip: string): Promise<string | undefined> {
  return (await eipIn(namespace, eip, 'Attached')).status?.attachment?.name;
}

describe('EIP-11 rule 3: the oldest NIC, ties broken by name', () => {
  const ns = useNamespace();

  it('EIP-11 rule 3: the older NIC gets the address, although the younger one comes first by name', async () => {
    const namespace = ns();
    await createEip(namespace, 'eip', NET);
    await createPod(namespace, 'b-old', { nodeName: nodes[0], annotations: direct('eip') });
    const old = await nicOf(namespace, 'b-old.eth0');
    // The API server's timestamps have whole seconds: the second NIC must be created in a later one.
    await sleep(Math.max(0, createdAt(old) + 1_000 - Date.now()) + 50);
    await createPod(namespace, 'a-new', { nodeName: nodes[1], annotations: direct('eip') });
    const young = await waitForMatch(
      () => getNic(namespace, 'a-new.eth0'),
      (n) => n?.status?.reason === 'ElasticIPHeldElsewhere',
      'a-new.eth0 Pending behind b-old.eth0',
    );
    expect(createdAt(young)).toBeGreaterThan(createdAt(old));

    await passThroughError(namespace, 'eip');
    expect(await holderAfterError(namespace, 'eip')).toBe('b-old.eth0');
    const eip = await getEip(namespace, 'eip');
    expect(condition(eip, 'Attached')).toMatchObject({ status: 'True', reason: 'AttachedDirectly' });
    await waitFor(async () => (await getNic(namespace, 'b-old.eth0'))?.status?.phase === 'Ready', {
      what: 'b-old.eth0 Ready',
    });
    expect((await getNic(namespace, 'a-new.eth0'))?.status).toMatchObject({
      phase: 'Pending',
      message: expect.stringContaining('b-old.eth0'),
    });
    await waitFor(async () => (await advertisementOf(eip?.status?.address))?.spec.nodeName === nodes[0], {
      what: "ARPAdvertisement on b-old's node",
    });
  });

  it('EIP-11 rule 3: NICs created in the same second -> the first by name, whichever was created first', async () => {
    const namespace = ns();
    // Same-second creation cannot be forced; try a few times from the start of a second, and say so if it never happens.
    const attempts: string[] = [];
    for (let attempt = 0; attempt < 6; attempt++) {
      const eip = `tie${attempt}`;
      await createEip(namespace, eip, NET);
      await eipIn(namespace, eip, 'Available');
      await sleep(1_000 - (Date.now() % 1_000) + 20);
      // Created first, last by name: an order of arrival or of creation would pick it.
      await createPod(namespace, `${eip}-z`, { nodeName: nodes[0], annotations: direct(eip) });
      await createPod(namespace, `${eip}-a`, { nodeName: nodes[1], annotations: direct(eip) });
      const [z, a] = await Promise.all([nicOf(namespace, `${eip}-z.eth0`), nicOf(namespace, `${eip}-a.eth0`)]);
      attempts.push(`${z.metadata.creationTimestamp} / ${a.metadata.creationTimestamp}`);
      if (createdAt(z) !== createdAt(a)) {
        await Promise.all([deletePodNow(namespace, `${eip}-z`), deletePodNow(namespace, `${eip}-a`)]);
        await deleteObject(JuneauResources.elasticIPs, namespace, eip);
        continue;
      }
      await passThroughError(namespace, eip);
      expect(await holderAfterError(namespace, eip)).toBe(`${eip}-a.eth0`);
      const address = (await getEip(namespace, eip))?.status?.address;
      await waitFor(async () => (await advertisementOf(address))?.spec.nodeName === nodes[1], {
        what: "ARPAdvertisement on the a NIC's node",
      });
      return;
    }
    throw new Error(`the two NICs were never created in the same second (creation times: ${attempts.join('; ')})`);
  }, 120_000);
});
