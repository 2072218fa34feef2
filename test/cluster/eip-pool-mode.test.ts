// EIP-2 on the real API server: an ElasticIP takes its address only from the pools whose
// advertiseMode equals its ExternalNetwork's type. A network that lists a pool of the other mode
// (which EN-3's webhook refuses, but which exists where the webhook was bypassed or came later)
// never hands out one of that pool's addresses, and a network with no pool of its own mode puts
// its ElasticIPs in Error, saying which pool has which mode. The reconcilers run in-process.
import type { AllocationClaim } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { useNamespace, waitForMatch } from './fixture';
import {
  condition,
  createEip,
  createNetwork,
  createPool,
  deleteObject,
  eipIn,
  getClaim,
  getEip,
  rest,
  startReplica,
  type Replica,
} from './eip-harness';

const suffix = Math.random().toString(36).slice(2, 7);
const ARP_POOL = `eipm-arp-${suffix}`;
const BGP_POOL = `eipm-bgp-${suffix}`;
const BGP_ONLY_POOL = `eipm-bgp2-${suffix}`;
/** type arp, listing the bgp pool first: an allocator that ignored the mode would take from it. */
const MIXED = `eipm-mixed-${suffix}`;
/** type arp, with a bgp pool only. */
const WRONG = `eipm-wrong-${suffix}`;

let replica: Replica;

beforeAll(async () => {
  await createPool(ARP_POOL, ['198.18.93.0/29'], 'arp');
  await createPool(BGP_POOL, ['198.18.94.0/29'], 'bgp');
  await createPool(BGP_ONLY_POOL, ['198.18.94.8/29'], 'bgp');
  await createNetwork(MIXED, [BGP_POOL, ARP_POOL], { networkID: 5021 });
  await createNetwork(WRONG, [BGP_ONLY_POOL], { networkID: 5022 });
  replica = await startReplica('eip-pool-mode');
});

afterAll(async () => {
  await replica?.stop();
  for (const n of [MIXED, WRONG]) await deleteObject(JuneauResources.externalNetworks, undefined, n);
  for (const p of [ARP_POOL, BGP_POOL, BGP_ONLY_POOL]) await deleteObject(JuneauResources.addressPools, undefined, p);
});

async function claimsHeldBy(namespace: string, name: string): Promise<AllocationClaim[]> {
  const list = await rest.list<AllocationClaim & KubeObject>(JuneauResources.allocationClaims);
  return list.items.filter(
    (c) => c.spec.holder.kind === 'ElasticIP' && c.spec.holder.namespace === namespace && c.spec.holder.name === name,
  );
}

describe("EIP-2: only pools of the network's mode are used", () => {
  const ns = useNamespace();

  it('EIP-2: on an arp network that lists a bgp pool first, every address comes from the arp pool', async () => {
    const namespace = ns();
    const names = ['one', 'two', 'three'];
    for (const name of names) await createEip(namespace, name, MIXED);
    for (const name of names) {
      const eip = await eipIn(namespace, name, 'Available');
      expect(eip.status).toMatchObject({
        addressPool: ARP_POOL,
        address: expect.stringMatching(/^198\.18\.93\.[0-7]$/),
      });
      expect((await getClaim(`ipv4.${eip.status!.address}`))?.spec).toMatchObject({
        pool: { kind: 'AddressPool', name: ARP_POOL },
        holder: { kind: 'ElasticIP', namespace, name },
      });
    }
    const bgpClaims = (await rest.list<AllocationClaim & KubeObject>(JuneauResources.allocationClaims)).items.filter(
      (c) => c.spec.pool.name === BGP_POOL,
    );
    expect(bgpClaims).toEqual([]);
  });

  it('EIP-2: a requestedIP inside the bgp pool of an arp network is refused, naming the usable pools; nothing is claimed', async () => {
    const namespace = ns();
    await createEip(namespace, 'asks-bgp', MIXED, '198.18.94.3');
    const eip = await waitForMatch(
      () => getEip(namespace, 'asks-bgp'),
      (e) => condition(e, 'Allocated')?.reason === 'RequestedIPNotInPool',
      'Allocated False RequestedIPNotInPool',
    );
    expect(eip.status?.address).toBeUndefined();
    expect(condition(eip, 'Allocated')).toMatchObject({ status: 'False' });
    expect(condition(eip, 'Allocated')?.message).toContain(
      `spec.requestedIP: "198.18.94.3" is not inside any arp AddressPool of ExternalNetwork ${MIXED}: ${ARP_POOL} (198.18.93.0/29)`,
    );
    expect(await getClaim('ipv4.198.18.94.3')).toBeUndefined();
    expect(await claimsHeldBy(namespace, 'asks-bgp')).toEqual([]);
  });

  it('EIP-2: an arp network whose only pool is bgp -> Error NoUsableAddressPool naming the pool and its mode; no address, no claim', async () => {
    const namespace = ns();
    await createEip(namespace, 'stranded', WRONG);
    const eip = await eipIn(namespace, 'stranded', 'Error');
    expect(eip.status?.address).toBeUndefined();
    expect(condition(eip, 'Allocated')).toMatchObject({ status: 'False', reason: 'NoUsableAddressPool' });
    expect(condition(eip, 'Allocated')?.message).toContain(
      `ExternalNetwork ${WRONG} has no AddressPool with advertiseMode arp`,
    );
    expect(condition(eip, 'Allocated')?.message).toContain(
      `"${BGP_ONLY_POOL}" is an AddressPool with advertiseMode bgp, but ExternalNetwork ${WRONG} has type arp`,
    );
    expect(await claimsHeldBy(namespace, 'stranded')).toEqual([]);
  });
});
