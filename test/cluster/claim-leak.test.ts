// ALLOC-2 for ElasticIPs on the real API server with the whole controller in-process: an
// ElasticIP deleted while no controller ran (its finalizer removed by hand) and created again
// under the same name leaves a claim whose holder uid is the old object's. The claim sweep
// releases it — by uid the new object is another ElasticIP, which chose its own address — and
// never re-adopts it; while a NetworkInterface that named the old object remains, the address
// may still be in use, so the claim waits for it (EIP-15).
import { API_VERSION, type AllocationClaim } from '../../api';
import { JuneauController } from '../../runtime/controller/controller';
import { JuneauResources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { createEip, createNetwork, createPool, deleteObject, getAs, getEip, rest } from './eip-harness';
import { useNamespace, waitFor, waitForMatch } from './fixture';
import { controllerRecorder, sweepingController } from './in-process-controller';

// 198.18.151.0/28: no other test file's pool.
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `leak-${suffix}`;
const NET = `leak-${suffix}`;
type Claim = AllocationClaim & KubeObject;
const getClaim = (address: string) => getAs<Claim>(JuneauResources.allocationClaims, undefined, `ipv4.${address}`);

const recorder = controllerRecorder(rest, 'leak');
const newController = () => sweepingController(recorder, 1_000);
let controller: JuneauController | undefined;

beforeAll(async () => {
  await createPool(POOL, ['198.18.151.0/28']);
  await createNetwork(NET, [POOL]);
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  await deleteObject(JuneauResources.externalNetworks, undefined, NET);
  await deleteObject(JuneauResources.addressPools, undefined, POOL);
});

/** Deletes the ElasticIP as if no controller ran: its finalizer is removed by hand first. */
async function deleteBehindTheControllersBack(namespace: string, name: string): Promise<void> {
  await rest.patch(JuneauResources.elasticIPs, namespace, name, 'merge', { metadata: { finalizers: null } });
  await deleteObject(JuneauResources.elasticIPs, namespace, name);
  await waitFor(async () => !(await getEip(namespace, name)), { what: `ElasticIP ${name} gone` });
}

describe('ALLOC-2: the claim of a deleted and recreated ElasticIP', () => {
  const ns = useNamespace();

  it('ALLOC-2: is released by the sweep (decided by the holder uid), not re-adopted; a NetworkInterface that named the old ElasticIP holds it until it is gone (EIP-15)', async () => {
    const namespace = ns();
    controller = newController();
    await controller.start();
    // b's claim is made first, so whenever a's is old enough for the sweep, b's is too.
    await createEip(namespace, 'b', NET, '198.18.151.6');
    const oldB = await waitForMatch(
      () => getEip(namespace, 'b'),
      (b) => b?.status?.address,
      'b allocated',
    );
    await createEip(namespace, 'a', NET, '198.18.151.5');
    const oldA = await waitForMatch(
      () => getEip(namespace, 'a'),
      (a) => a?.status?.address,
      'a allocated',
    );
    expect((await getClaim('198.18.151.5'))?.spec.holder).toMatchObject({
      kind: 'ElasticIP',
      name: 'a',
      uid: oldA.metadata?.uid,
    });
    // A NIC that holds b directly (no Pod behind it: nothing deletes it but this test).
    await rest.create(JuneauResources.networkInterfaces, {
      apiVersion: API_VERSION,
      kind: 'NetworkInterface',
      metadata: { name: 'p.eth0', namespace },
      spec: { podName: 'p', interface: 'eth0', elasticIP: 'b' },
    });

    await controller.stop();
    controller = undefined;
    await deleteBehindTheControllersBack(namespace, 'a');
    await deleteBehindTheControllersBack(namespace, 'b');
    await createEip(namespace, 'a', NET);
    await createEip(namespace, 'b', NET);
    controller = newController();
    await controller.start();

    // The new objects get addresses of their own; the old claims still name the old uids.
    const [newA, newB] = await waitFor(
      async () => {
        const [a, b] = await Promise.all([getEip(namespace, 'a'), getEip(namespace, 'b')]);
        return a?.status?.address && b?.status?.address ? [a, b] : undefined;
      },
      { what: 'the new ElasticIPs allocated' },
    );
    expect(newA.metadata?.uid).not.toBe(oldA.metadata?.uid);
    expect([newA.status?.address, newB.status?.address]).not.toContain('198.18.151.5');

    // The sweep releases a's old claim: once it has, the same pass looked at b's old claim too.
    await waitFor(async () => !(await getClaim('198.18.151.5')), { what: 'the old claim of a released' });
    expect((await getClaim('198.18.151.6'))?.spec.holder).toMatchObject({
      kind: 'ElasticIP',
      name: 'b',
      uid: oldB.metadata?.uid,
    });
    // Not re-adopted: the new a keeps its own address and holds exactly one claim.
    const claims = (await rest.list<Claim>(JuneauResources.allocationClaims)).items.filter(
      (c) => c.spec.holder.namespace === namespace && c.spec.holder.name === 'a',
    );
    expect(claims.map((c) => [c.spec.value, c.spec.holder.uid])).toEqual([[newA.status?.address, newA.metadata?.uid]]);
    expect((await getEip(namespace, 'a'))?.status?.address).toBe(newA.status?.address);

    // EIP-15: once the NIC that named the old b is gone, its claim goes too.
    await deleteObject(JuneauResources.networkInterfaces, namespace, 'p.eth0');
    await waitFor(async () => !(await getClaim('198.18.151.6')), { what: 'the old claim of b released after its NIC' });
    expect((await getEip(namespace, 'b'))?.status?.address).toBe(newB.status?.address);
  });
});
