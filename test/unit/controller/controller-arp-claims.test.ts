// ARP-4 / ALLOC-1 on the writer's side: the Allocator withdraws before it releases, and a release
// never makes the index forget a newer claim of the same name (runtime/controller/allocator/allocator.ts).
import type { AllocationClaim } from '../../../api';
import { parseIPv4 } from '../../../api/validation';
import { Allocator, type ClaimStore } from '../../../runtime/controller/allocator/allocator';
import { AllocatorIndex, type ClaimRecord, type PoolRef } from '../../../runtime/controller/allocator/allocator-index';
import { advertisementNameOf } from '../../../runtime/controller/arp/claim-guard';

const POOL: PoolRef = { kind: 'AddressPool', name: 'p' };
const ip = (s: string) => parseIPv4(s)!;
const slb = (name: string, uid: string) => ({ kind: 'ServiceLoadBalancer', namespace: 'ns', name, uid });

function setup(onDelete: (name: string) => void = () => undefined) {
  const index = new AllocatorIndex();
  index.setPool(POOL, [{ first: ip('198.18.120.0'), last: ip('198.18.120.7') }]);
  const log: string[] = [];
  const store: ClaimStore = {
    create: async (c: AllocationClaim) => (
      log.push(`create ${c.metadata.name}`),
      { created: true, uid: `uid-of-${c.metadata.name}` }
    ),
    delete: async (name: string) => {
      log.push(`delete ${name}`);
      onDelete(name);
    },
  };
  const allocator = new Allocator(
    index,
    store,
    async (c: ClaimRecord) => void log.push(`withdraw ${advertisementNameOf(c.holder)} ${c.claimName}`),
  );
  return { index, allocator, log };
}

describe('Allocator release order (ARP-4, ALLOC-1)', () => {
  it("ARP-4: the holder's ARPAdvertisement is withdrawn before each of its claims is deleted", async () => {
    const { index, allocator, log } = setup();
    index.upsertClaim({
      claimName: 'ipv4.198.18.120.1',
      pool: POOL,
      value: ip('198.18.120.1'),
      holder: slb('web', 'u1'),
      uid: 'c1',
    });
    index.upsertClaim({
      claimName: 'ipv4.198.18.120.2',
      pool: POOL,
      value: ip('198.18.120.2'),
      holder: slb('web', 'u1'),
      uid: 'c2',
    });
    // Requested .2: .1 is an extra claim (a racing replica's) and goes, after its advertisement.
    const result = await allocator.ensureAddress(slb('web', 'u1'), {
      pools: ['p'],
      requested: { value: ip('198.18.120.2'), pool: 'p' },
    });
    expect(result).toMatchObject({ ok: true, value: ip('198.18.120.2') });
    expect(log).toEqual(['withdraw slb-ns-web ipv4.198.18.120.1', 'delete ipv4.198.18.120.1']);
  });

  it('ALLOC-1: a release whose claim name was meanwhile taken by another holder keeps the newer claim in the index', async () => {
    const { index, allocator } = setup((name) => {
      // The informer delivers the delete and another holder's new claim before the delete call returns.
      index.deleteClaim(name);
      index.upsertClaim({
        claimName: name,
        pool: POOL,
        value: ip('198.18.120.1'),
        holder: slb('other', 'u2'),
        uid: 'c9',
      });
    });
    const mine: ClaimRecord = {
      claimName: 'ipv4.198.18.120.1',
      pool: POOL,
      value: ip('198.18.120.1'),
      holder: slb('web', 'u1'),
      uid: 'c1',
    };
    index.upsertClaim(mine);
    await allocator.releaseClaim(mine);
    expect(index.getClaim('ipv4.198.18.120.1')).toMatchObject({ uid: 'c9', holder: { name: 'other' } });
    expect(index.isTaken(POOL, ip('198.18.120.1'))).toBe(true);
    expect(allocator.heldClaims(slb('other', 'u2'))).toHaveLength(1);
  });

  it('advertisementNameOf: slb-<ns>-<name>, eip-<ns>-<name>, nothing for other holders (SLB-6, EIP-17)', () => {
    expect(advertisementNameOf(slb('web', 'u'))).toBe('slb-ns-web');
    expect(advertisementNameOf({ kind: 'ElasticIP', namespace: 'a', name: 'x' })).toBe('eip-a-x');
    expect(advertisementNameOf({ kind: 'ExternalNetwork', name: 'n' })).toBeUndefined();
  });
});
