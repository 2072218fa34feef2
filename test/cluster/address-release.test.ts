// ADDR-3 on the real API server with the whole controller in-process: a VIP (ServiceLoadBalancer)
// or an ElasticIP address is not released on a passing condition. The EN-6 procedure (delete the
// ExternalNetwork, create it again) and an AddressPool deleted and created again leave every
// address with its holder — the very same AllocationClaim objects, never written meanwhile —
// while the status says why nothing is served.
import { ANNOTATIONS, type AllocationClaim, type ServiceLoadBalancer } from '../../api';
import { Informer } from '../../runtime/kube/informer';

import { JuneauResources, Resources, type ResourceType } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { condition, createEip, createNetwork, createPool, deleteObject, getAs, getEip, rest } from './eip-harness';
import { createLoadBalancerService, type Service, useNamespace, waitFor, waitForMatch } from './fixture';
import { useSweepingController } from './in-process-controller';

// 198.18.150.0/28: no other test file's pool.
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `addr3-${suffix}`;
const NET = `addr3-${suffix}`;
const ADDRESSES = ['198.18.150.0/28'];

type Claim = AllocationClaim & KubeObject;
const getSlb = (ns: string, name: string) => getAs<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, ns, name);
type Allocated = NonNullable<ReturnType<typeof condition>>;
/** Waits until the ServiceLoadBalancer's Allocated condition is in `state` and says its VIP `vip` stays reserved (ADDR-3). */
const waitForVipKept = (
  namespace: string,
  name: string,
  vip: string,
  state: (allocated: Allocated, slb: ServiceLoadBalancer) => boolean,
) =>
  waitForMatch(
    () => getSlb(namespace, name),
    (slb) => {
      const allocated = condition(slb, 'Allocated');
      return (
        allocated !== undefined && allocated.message.includes(`VIP ${vip} stays reserved`) && state(allocated, slb)
      );
    },
    `${name} keeping its VIP ${vip}`,
  );

const createService = (namespace: string, name: string, requestedIP?: string) =>
  createLoadBalancerService(namespace, name, { network: NET, requestedIP, ports: [{ name: 'http', port: 80 }] });

/** Every write to the named claims while it runs: any update or delete is a change (by resourceVersion). */
class ClaimChanges {
  readonly changes: string[] = [];
  private readonly informer = new Informer<Claim>(rest, { type: JuneauResources.allocationClaims });
  constructor(private readonly watched: ReadonlyMap<string, { uid: string; resourceVersion: string }>) {
    const seen = (event: 'add' | 'update' | 'delete', claim: Claim) => {
      const name = claim.metadata.name ?? '';
      const before = this.watched.get(name);
      if (!before) return;
      if (event === 'delete') this.changes.push(`${name} deleted`);
      else if (claim.metadata.uid !== before.uid || claim.metadata.resourceVersion !== before.resourceVersion)
        this.changes.push(
          `${name} ${event} (uid ${claim.metadata.uid}, resourceVersion ${claim.metadata.resourceVersion})`,
        );
    };
    this.informer.addHandlers({
      onAdd: (c) => seen('add', c),
      onUpdate: (_old, c) => seen('update', c),
      onDelete: (c) => seen('delete', c),
    });
  }
  start = async () => {
    this.informer.start();
    await this.informer.waitForSync();
  };
  stop = () => this.informer.stop();
}

/** The AddressPool claims of the holders in `namespace`, by name, with uid and resourceVersion. */
async function claimsIn(
  namespace: string,
): Promise<Map<string, { uid: string; resourceVersion: string; holder: string; value: string }>> {
  const list = await rest.list<Claim>(JuneauResources.allocationClaims);
  const mine = list.items.filter((c) => c.spec.holder.namespace === namespace && c.spec.pool.kind === 'AddressPool');
  return new Map(
    mine.map((c) => [
      c.metadata.name ?? '',
      {
        uid: c.metadata.uid ?? '',
        resourceVersion: c.metadata.resourceVersion ?? '',
        holder: `${c.spec.holder.kind}/${c.spec.holder.name}`,
        value: c.spec.value,
      },
    ]),
  );
}

// A short sweep, so a claim the sweep would wrongly take is taken within the test.
useSweepingController('addr3', 1_000, {
  before: async () => {
    await createPool(POOL, ADDRESSES);
    await createNetwork(NET, [POOL]);
  },
  after: async () => {
    await deleteObject(JuneauResources.externalNetworks, undefined, NET);
    await deleteObject(JuneauResources.addressPools, undefined, POOL);
  },
});

describe('ADDR-3: passing conditions keep VIPs and ElasticIP addresses', () => {
  const ns = useNamespace();

  /** The four holders allocateAll makes: web-any, web-req, eip-any, eip-req. */
  const readHolders = (namespace: string) =>
    Promise.all([
      getSlb(namespace, 'web-any'),
      getSlb(namespace, 'web-req'),
      getEip(namespace, 'eip-any'),
      getEip(namespace, 'eip-req'),
    ]);

  /** Two Services and two ElasticIPs (one of each with a requested address), all allocated. */
  async function allocateAll(namespace: string): Promise<Record<string, string>> {
    await createService(namespace, 'web-any');
    await createService(namespace, 'web-req', '198.18.150.9');
    await createEip(namespace, 'eip-any', NET);
    await createEip(namespace, 'eip-req', NET, '198.18.150.12');
    return waitFor(
      async () => {
        const [a, b, c, d] = await readHolders(namespace);
        const got = {
          'web-any': a?.status?.vip,
          'web-req': b?.status?.vip,
          'eip-any': c?.status?.address,
          'eip-req': d?.status?.address,
        };
        return Object.values(got).every(Boolean) ? (got as Record<string, string>) : undefined;
      },
      { what: 'two VIPs and two ElasticIP addresses' },
    );
  }

  /** Waits for every holder to show the addresses of `before` again, in status and on the Service. */
  async function waitForSameAddresses(namespace: string, before: Record<string, string>): Promise<void> {
    await waitFor(
      async () => {
        const [a, b, c, d] = await readHolders(namespace);
        const svc = await rest.get<Service>(Resources.services, namespace, 'web-any');
        const now = {
          'web-any': a?.status?.phase === 'Allocated' && a.status.vip,
          'web-req': b?.status?.phase === 'Allocated' && b.status.vip,
          'eip-any': c?.status?.phase === 'Available' && c.status.address,
          'eip-req': d?.status?.phase === 'Available' && d.status.address,
        };
        return (
          JSON.stringify(now) === JSON.stringify(before) &&
          svc.status?.loadBalancer?.ingress?.[0]?.ip === before['web-any']
        );
      },
      { what: `the same addresses again: ${JSON.stringify(before)}` },
    );
  }

  /** Runs `step` while every write to `claims` is recorded; then none was written, and all are still there. */
  async function expectClaimsUntouched(
    namespace: string,
    claims: Awaited<ReturnType<typeof claimsIn>>,
    step: () => Promise<void>,
  ): Promise<void> {
    const changes = new ClaimChanges(claims);
    await changes.start();
    try {
      await step();
    } finally {
      await changes.stop();
    }
    expect(changes.changes).toEqual([]);
    expect(await claimsIn(namespace)).toEqual(claims);
  }
  /** Deletes the cluster-scoped object and waits until it is gone (finalizers done). */
  async function deleteAndWait(type: ResourceType, name: string): Promise<void> {
    await deleteObject(type, undefined, name);
    await waitFor(async () => !(await getAs(type, undefined, name)), { what: `${type.kind} ${name} gone` });
  }

  it('ADDR-3, EN-6: deleting and recreating the ExternalNetwork gives every VIP and ElasticIP its address back; the claims are never written meanwhile', async () => {
    const namespace = ns();
    const before = await allocateAll(namespace);
    const claims = await claimsIn(namespace);
    expect([...claims.values()].map((c) => c.value).sort()).toEqual(Object.values(before).sort());
    await expectClaimsUntouched(namespace, claims, async () => {
      // EN-6: to change the pools of a network, the user deletes and recreates it.
      await deleteAndWait(JuneauResources.externalNetworks, NET);
      // Meanwhile the status says why nothing is served, and that the address stays reserved.
      await waitForVipKept(
        namespace,
        'web-any',
        before['web-any'],
        (allocated, slb) => slb.status?.phase === 'Pending' && allocated.reason === 'ExternalNetworkNotFound',
      );
      await waitFor(
        async () => {
          const eip = await getEip(namespace, 'eip-any');
          return (
            eip?.status?.phase === 'Error' &&
            condition(eip, 'Allocated')?.reason === 'ExternalNetworkNotFound' &&
            eip.status.address === before['eip-any']
          );
        },
        { what: 'eip-any in Error, keeping its address' },
      );
      await createNetwork(NET, [POOL]);
      await waitForSameAddresses(namespace, before);
    });
  });

  it('ADDR-3: an AddressPool deleted and created again keeps every VIP and ElasticIP address; the claims are never written meanwhile', async () => {
    const namespace = ns();
    const before = await allocateAll(namespace);
    const claims = await claimsIn(namespace);
    await expectClaimsUntouched(namespace, claims, async () => {
      await deleteAndWait(JuneauResources.addressPools, POOL);
      await waitForVipKept(namespace, 'web-req', before['web-req'], (allocated) => allocated.status === 'False');
      await createPool(POOL, ADDRESSES);
      await waitForSameAddresses(namespace, before);
    });
  });

  it('ADDR-3: a requested address held by someone else keeps the current VIP until it is free, then the VIP moves and the old claim is released', async () => {
    const namespace = ns();
    await createEip(namespace, 'holder', NET, '198.18.150.5');
    await waitFor(async () => (await getEip(namespace, 'holder'))?.status?.address === '198.18.150.5', {
      what: 'holder has .5',
    });
    await createService(namespace, 'web', '198.18.150.6');
    await waitFor(async () => (await getSlb(namespace, 'web'))?.status?.vip === '198.18.150.6', { what: 'web has .6' });
    const old = (await getAs<Claim>(JuneauResources.allocationClaims, undefined, 'ipv4.198.18.150.6'))!;
    await rest.patch(Resources.services, namespace, 'web', 'merge', {
      metadata: { annotations: { [ANNOTATIONS.loadBalancerRequestedIP]: '198.18.150.5' } },
    });
    await waitForVipKept(namespace, 'web', '198.18.150.6', (allocated) => allocated.reason === 'RequestedIPInUse');
    const kept = await getAs<Claim>(JuneauResources.allocationClaims, undefined, 'ipv4.198.18.150.6');
    expect(kept?.metadata.uid).toBe(old.metadata.uid);
    expect(kept?.spec.holder).toMatchObject({ kind: 'ServiceLoadBalancer', name: 'web' });
    await deleteObject(JuneauResources.elasticIPs, namespace, 'holder');
    await waitFor(async () => (await getSlb(namespace, 'web'))?.status?.vip === '198.18.150.5', {
      what: 'web moves to .5',
    });
    await waitFor(async () => !(await getAs(JuneauResources.allocationClaims, undefined, 'ipv4.198.18.150.6')), {
      what: 'the claim of .6 released',
    });
  });

  it('ADDR-2: a requested network or broadcast address is a clear condition naming it, and no claim is made', async () => {
    const namespace = ns();
    await createEip(namespace, 'net-addr', NET, '198.18.150.0');
    await createService(namespace, 'bcast', '198.18.150.15');
    const eip = await waitForMatch(
      () => getEip(namespace, 'net-addr'),
      (e) => condition(e, 'Allocated')?.reason === 'RequestedIPNotInPool',
      'net-addr refused',
    );
    expect(eip.status?.phase).toBe('Error');
    expect(condition(eip, 'Allocated')?.message).toBe(
      `spec.requestedIP: "198.18.150.0" is the network address of 198.18.150.0/28 in AddressPool ${POOL}, which is never handed out (ADDR-2) (EIP-3)`,
    );
    const slb = await waitForMatch(
      () => getSlb(namespace, 'bcast'),
      (s) => condition(s, 'Allocated')?.reason === 'RequestedIPNotInPool',
      'bcast refused',
    );
    expect(condition(slb, 'Allocated')?.message).toContain(
      `"198.18.150.15" is the broadcast address of 198.18.150.0/28 in AddressPool ${POOL}, which is never handed out (ADDR-2)`,
    );
    expect(await getAs(JuneauResources.allocationClaims, undefined, 'ipv4.198.18.150.0')).toBeUndefined();
    expect(await getAs(JuneauResources.allocationClaims, undefined, 'ipv4.198.18.150.15')).toBeUndefined();
  });
});
