// EIP-3, ALLOC-1/2 at scale: 500 ElasticIPs created concurrently while two controller replicas
// run the ElasticIP reconcilers at once (no leader election: the worst case). Claim creation is
// the reservation, so no address is ever held twice; when the replicas race for one ElasticIP,
// the extra claim is released. Deleting them all leaves no claim.
import { JuneauResources } from '../../runtime/kube/resources';
import type { AllocationClaim, ElasticIP } from '../../api';
import type { KubeObject } from '../../runtime/kube/types';
import { useNamespace, waitFor } from './fixture';
import { createEip, createNetwork, createPool, deleteObject, rest, startReplica, type Replica } from './eip-harness';

const COUNT = 500;
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `eips-${suffix}`;
const NET = `eips-net-${suffix}`;
const replicas: Replica[] = [];

jest.setTimeout(300_000);

beforeAll(async () => {
  await createPool(POOL, ['198.18.96.0/23']);
  await createNetwork(NET, [POOL], { networkID: 5004 });
  replicas.push(await startReplica('r1'), await startReplica('r2'));
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await deleteObject(JuneauResources.externalNetworks, undefined, NET);
  await deleteObject(JuneauResources.addressPools, undefined, POOL);
});

async function inChunks<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

const claimsOf = async (namespace: string) =>
  (await rest.list<AllocationClaim & KubeObject>(JuneauResources.allocationClaims)).items.filter(
    (c) => c.spec.holder.kind === 'ElasticIP' && c.spec.holder.namespace === namespace,
  );

describe('EIP-3 / ALLOC-1: 500 ElasticIPs, two replicas', () => {
  const ns = useNamespace();

  it('EIP-3: 500 distinct addresses, one claim per ElasticIP, no duplicate; ALLOC-2: deleting them all leaves zero claims', async () => {
    const namespace = ns();
    const names = Array.from({ length: COUNT }, (_, i) => `eip-${i}`);
    const started = Date.now();
    await inChunks(names, 50, (name) => createEip(namespace, name, NET));

    const settled = await waitFor(
      async () => {
        const eips = (await rest.list<ElasticIP & KubeObject>(JuneauResources.elasticIPs, { namespace })).items;
        const withAddress = eips.filter((e) => e.status?.phase === 'Available' && e.status.address);
        if (withAddress.length < COUNT) return undefined;
        const claims = await claimsOf(namespace);
        // Converged: every ElasticIP holds exactly the one claim its status names.
        const byHolder = new Map<string, string[]>();
        for (const c of claims)
          byHolder.set(c.spec.holder.name, [...(byHolder.get(c.spec.holder.name) ?? []), c.spec.value]);
        const agree = withAddress.every((e) => {
          const held = byHolder.get(e.metadata.name ?? '') ?? [];
          return held.length === 1 && held[0] === e.status?.address;
        });
        return agree && claims.length === COUNT ? { eips: withAddress, claims } : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 2_000, what: `${COUNT} ElasticIPs Available with one claim each` },
    );
    const addresses = new Set(settled.eips.map((e) => e.status!.address));
    expect(addresses.size).toBe(COUNT);
    expect(new Set(settled.claims.map((c) => c.metadata.name)).size).toBe(COUNT);
    console.log(
      `EIP-3: ${COUNT} ElasticIPs allocated by two replicas in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    await inChunks(names, 50, (name) => deleteObject(JuneauResources.elasticIPs, namespace, name));
    await waitFor(
      async () =>
        (await claimsOf(namespace)).length === 0 &&
        (await rest.list(JuneauResources.elasticIPs, { namespace })).items.length === 0,
      {
        timeoutMs: 240_000,
        intervalMs: 2_000,
        what: 'no ElasticIP and no claim left',
      },
    );
  });
});
