import { parseIPv4 } from '../../../api/validation';
import { SparseBitset } from '../../../runtime/controller/allocator/sparse-bitset';
import { ValuePool } from '../../../runtime/controller/allocator/value-pool';
import {
  AllocatorIndex,
  parseClaimValue,
  type ClaimRecord,
  type PoolRef,
} from '../../../runtime/controller/allocator/allocator-index';
import { Allocator } from '../../../runtime/controller/allocator/allocator';
import { MemoryClaimStore } from '../memory-claim-store';
import {
  claimNameOf,
  claimObject,
  claimRecordOf,
  DEFAULT_SUBNET_VNI_RANGE,
  SUBNET_VNI_REF,
} from '../../../runtime/controller/allocator/claims';

const ip = (s: string) => parseIPv4(s)!;
const range = (a: string, b: string) => ({ first: ip(a), last: ip(b) });

describe('SparseBitset', () => {
  it('sets, clears and counts, refusing out-of-range indexes', () => {
    const b = new SparseBitset(100);
    expect(b.set(5)).toBe(true);
    expect(b.set(5)).toBe(false);
    expect(b.set(100)).toBe(false);
    expect(b.set(-1)).toBe(false);
    expect(b.has(5)).toBe(true);
    expect(b.count).toBe(1);
    expect(b.clear(5)).toBe(true);
    expect(b.clear(5)).toBe(false);
    expect(b.count).toBe(0);
  });

  it('finds the lowest clear bit across words and chunks', () => {
    const b = new SparseBitset(200_000);
    for (let i = 0; i < 70_000; i++) b.set(i);
    expect(b.firstClear()).toBe(70_000);
    b.clear(31);
    expect(b.firstClear()).toBe(31);
    expect(b.firstClear(32)).toBe(70_000);
    b.set(31);
    b.clear(65_535); // last bit of the first chunk
    expect(b.firstClear()).toBe(65_535);
  });

  it('respects the size inside the last chunk and reports full', () => {
    const b = new SparseBitset(33);
    for (let i = 0; i < 33; i++) b.set(i);
    expect(b.firstClear()).toBeUndefined();
    expect(new SparseBitset(0).firstClear()).toBeUndefined();
  });

  it('handles bit 31 of a word (sign bit) correctly', () => {
    const b = new SparseBitset(64);
    for (let i = 0; i < 31; i++) b.set(i);
    expect(b.firstClear()).toBe(31);
  });

  it('a /0 costs nothing until used and is fast when the start is dense', () => {
    const b = new SparseBitset(2 ** 32);
    expect(b.firstClear()).toBe(0);
    for (let i = 0; i < 3 * 65_536; i++) b.set(i);
    const t = Date.now();
    for (let i = 0; i < 1000; i++) b.firstClear();
    expect(b.firstClear()).toBe(3 * 65_536);
    expect(Date.now() - t).toBeLessThan(500);
  });
});

describe('ValuePool', () => {
  it('maps values across sorted ranges and proposes the lowest free (AP-2 ranges and CIDRs)', () => {
    const pool = new ValuePool([range('10.0.1.10', '10.0.1.11'), range('10.0.0.254', '10.0.0.255')]);
    expect(pool.size).toBe(4);
    expect(pool.lowestFree()).toBe(ip('10.0.0.254'));
    pool.take(ip('10.0.0.254'));
    pool.take(ip('10.0.0.255'));
    expect(pool.lowestFree()).toBe(ip('10.0.1.10'));
    expect(pool.take(ip('10.0.1.0'))).toBe(false); // outside
    expect(pool.contains(ip('10.0.1.11'))).toBe(true);
    expect(pool.used).toBe(2);
    pool.take(ip('10.0.1.10'));
    pool.take(ip('10.0.1.11'));
    expect(pool.lowestFree()).toBeUndefined();
  });

  it('refuses overlapping ranges', () => {
    expect(() => new ValuePool([range('10.0.0.0', '10.0.0.10'), range('10.0.0.10', '10.0.0.20')])).toThrow('overlap');
  });

  it('a /8 pool does not materialize its addresses (AP-3 size)', () => {
    const pool = new ValuePool([range('10.0.0.0', '10.255.255.255')]);
    expect(pool.size).toBe(16_777_216);
    expect(pool.used).toBe(0);
    expect(pool.lowestFree()).toBe(ip('10.0.0.0'));
  });
});

const A: PoolRef = { kind: 'AddressPool', name: 'a' };
const B: PoolRef = { kind: 'AddressPool', name: 'b' };
const svc = (name: string, uid = `uid-${name}`) => ({
  apiVersion: 'juneau.loutres.me/v1alpha1',
  kind: 'ServiceLoadBalancer',
  namespace: 'ns',
  name,
  uid,
});

describe('AllocatorIndex (ALLOC-1)', () => {
  it('loads claims before or after their pool, and counts used per pool (AP-3)', () => {
    const index = new AllocatorIndex();
    index.upsertClaim({ claimName: 'ipv4.10.0.0.1', pool: A, value: ip('10.0.0.1'), holder: svc('x') });
    index.setPool(A, [range('10.0.0.0', '10.0.0.3')]);
    expect(index.usage(A)).toEqual({ size: 4, used: 1 });
    expect(index.propose(A)).toBe(ip('10.0.0.0'));
    expect(index.propose(A)).toBe(ip('10.0.0.2'));
    index.deleteClaim('ipv4.10.0.0.1');
    expect(index.usage(A)).toEqual({ size: 4, used: 2 });
    expect(index.usage(B)).toBeUndefined();
    expect(index.propose(B)).toBeUndefined();
  });

  it('a proposal stays held until released or confirmed by its claim; expiry frees unconfirmed ones', () => {
    let now = 0;
    const index = new AllocatorIndex(() => now);
    index.setPool(A, [range('10.0.0.0', '10.0.0.3')]);
    const v = index.propose(A)!;
    index.release(A, v);
    expect(index.propose(A)).toBe(v);
    index.upsertClaim({ claimName: claimNameOf(A, v), pool: A, value: v, holder: svc('x') });
    const w = index.propose(A)!;
    now = 60_000;
    expect(index.expireTentative(30_000)).toBe(1);
    expect(index.isTaken(A, v)).toBe(true); // confirmed by a claim
    expect(index.isTaken(A, w)).toBe(false);
  });

  it('keeps claims across a pool update and finds them by holder', () => {
    const index = new AllocatorIndex();
    index.setPool(A, [range('10.0.0.0', '10.0.0.3')]);
    index.upsertClaim({ claimName: 'ipv4.10.0.0.0', pool: A, value: ip('10.0.0.0'), holder: svc('x') });
    index.setPool(A, [range('10.0.0.0', '10.0.0.7')]);
    expect(index.usage(A)).toEqual({ size: 8, used: 1 });
    expect(index.claimsOf({ kind: 'ServiceLoadBalancer', namespace: 'ns', name: 'x' }).map((c) => c.claimName)).toEqual(
      ['ipv4.10.0.0.0'],
    );
    expect(index.claimOf(A, ip('10.0.0.0'))?.holder.name).toBe('x');
  });

  it('parses claim values strictly', () => {
    expect(parseClaimValue('AddressPool', '10.0.0.1')).toBe(ip('10.0.0.1'));
    expect(parseClaimValue('AddressPool', '10.0.0.01')).toBeUndefined();
    expect(parseClaimValue('AllocationPool', '4096')).toBe(4096);
    expect(parseClaimValue('AllocationPool', '04096')).toBeUndefined();
    expect(parseClaimValue('AllocationPool', '-1')).toBeUndefined();
  });

  it('round-trips claim objects with the api names (ipv4.<ip>, <pool>.<n>)', () => {
    const c = claimObject(A, ip('10.0.0.9'), svc('x'));
    expect(c.metadata.name).toBe('ipv4.10.0.0.9');
    expect(c.spec).toEqual({ pool: { kind: 'AddressPool', name: 'a' }, value: '10.0.0.9', holder: svc('x') });
    expect(claimRecordOf({ ...c, metadata: { ...c.metadata, uid: 'u1' } })).toEqual({
      claimName: 'ipv4.10.0.0.9',
      pool: A,
      value: ip('10.0.0.9'),
      holder: svc('x'),
      uid: 'u1',
    });
    expect(claimObject(SUBNET_VNI_REF, 4096, svc('x')).metadata.name).toBe('subnet-vni.4096');
  });

  it('documents the subnet-vni default range (EN-7): above the VLAN-mapped VNIs, up to 2^24-1', () => {
    expect(DEFAULT_SUBNET_VNI_RANGE).toEqual({ start: 4096, end: 16_777_215 });
  });
});

function newAllocator(store = new MemoryClaimStore()) {
  const index = new AllocatorIndex();
  index.setPool(A, [range('10.0.0.0', '10.0.0.3')]);
  index.setPool(B, [range('10.0.1.0', '10.0.1.1')]);
  index.setPool(SUBNET_VNI_REF, [{ first: 4096, last: 4100 }]);
  return { index, store, allocator: new Allocator(index, store) };
}

describe('Allocator: reservation by claim creation (EIP-3, ALLOC-1)', () => {
  it('creates the claim named after the lowest free address and keeps it on later passes', async () => {
    const { allocator, store } = newAllocator();
    const first = await allocator.ensureAddress(svc('x'), { pools: ['a'] });
    expect(first).toMatchObject({ ok: true, value: ip('10.0.0.0'), claimName: 'ipv4.10.0.0.0' });
    const again = await allocator.ensureAddress(svc('x'), { pools: ['a'] });
    expect(again).toEqual(first);
    expect(store.creates).toBe(1);
  });

  it('ALLOC-1: releasing its own extra claim never deletes or forgets a newer claim of that name (another replica took the value meanwhile)', async () => {
    // Replica A holds .1 (its own create) and .0 (a racing replica's, delivered by the informer), so
    // it keeps the lowest and releases .1. While that delete is in flight the other replica takes
    // .1 for y and the informer delivers it to A: A's index must still know y holds .1, and A's
    // delete must be guarded by its own claim's uid (a fixed two-controller run once left y's
    // claim out of one index for good and the replicas fought over the address).
    let other: ClaimRecord | undefined;
    const store = new MemoryClaimStore(async (name) => {
      if (name !== 'ipv4.10.0.0.1' || other) return;
      store.objects.delete(name);
      other = claimRecordOf({
        ...claimObject(A, ip('10.0.0.1'), svc('y')),
        metadata: { name, uid: 'uid-of-ys-claim' },
      })!;
      store.objects.set(name, { ...claimObject(A, ip('10.0.0.1'), svc('y')), metadata: { name, uid: other.uid } });
      index.deleteClaim(name);
      index.upsertClaim(other);
    });
    const { index, allocator } = newAllocator(store);
    index.holdTentatively(A, ip('10.0.0.0'));
    expect(await allocator.ensureAddress(svc('x'), { pools: ['a'] })).toMatchObject({
      ok: true,
      value: ip('10.0.0.1'),
    });
    index.upsertClaim({ ...claimRecordOf(claimObject(A, ip('10.0.0.0'), svc('x')))!, uid: 'uid-of-racing-claim' });
    expect(await allocator.ensureAddress(svc('x'), { pools: ['a'] })).toMatchObject({
      ok: true,
      value: ip('10.0.0.0'),
    });
    expect(other).toBeDefined();
    expect(index.claimsOf(svc('y'))).toEqual([other]);
    expect(store.objects.get('ipv4.10.0.0.1')?.spec.holder.name).toBe('y');
  });

  it('AlreadyExists means taken: takes the next (two replicas never double-book)', async () => {
    const shared = new MemoryClaimStore();
    const one = newAllocator(shared);
    const two = newAllocator(shared); // a second replica with its own, stale index
    const [r1, r2] = await Promise.all([
      one.allocator.ensureAddress(svc('x'), { pools: ['a'] }),
      two.allocator.ensureAddress(svc('y'), { pools: ['a'] }),
    ]);
    expect(r1.ok && r2.ok).toBe(true);
    if (r1.ok && r2.ok) expect(r1.value).not.toBe(r2.value);
    expect(shared.objects.size).toBe(2);
  });

  it('many concurrent holders in one process get distinct values, then the pools fill (NoFreeAddress)', async () => {
    const { allocator, store } = newAllocator();
    const results = await Promise.all(
      ['p', 'q', 'r', 's', 't', 'u', 'v'].map((n) => allocator.ensureAddress(svc(n), { pools: ['a', 'b'] })),
    );
    const values = results.filter((r) => r.ok).map((r) => (r.ok ? r.value : 0));
    expect(new Set(values).size).toBe(6);
    expect(store.objects.size).toBe(6);
    const failed = results.find((r) => !r.ok);
    expect(failed).toMatchObject({ ok: false, reason: 'NoFreeAddress' });
    expect(failed && !failed.ok && failed.message).toContain('a (4/4 used), b (2/2 used)');
  });

  it('a requested address is claimed exactly, or refused naming its holder (SLB-2)', async () => {
    const { allocator } = newAllocator();
    const got = await allocator.ensureAddress(svc('x'), {
      pools: ['a'],
      requested: { value: ip('10.0.0.2'), pool: 'a' },
    });
    expect(got).toMatchObject({ ok: true, value: ip('10.0.0.2') });
    const refused = await allocator.ensureAddress(svc('y'), {
      pools: ['a'],
      requested: { value: ip('10.0.0.2'), pool: 'a' },
    });
    expect(refused).toEqual({
      ok: false,
      reason: 'RequestedIPInUse',
      message: 'requested address 10.0.0.2 is held by ServiceLoadBalancer ns/x (claim ipv4.10.0.0.2)',
    });
  });

  it('a requested address held by a claim the index has not seen yet is refused too', async () => {
    const store = new MemoryClaimStore();
    store.objects.set('ipv4.10.0.0.2', claimObject(A, ip('10.0.0.2'), svc('other')));
    const { allocator } = newAllocator(store);
    const refused = await allocator.ensureAddress(svc('y'), {
      pools: ['a'],
      requested: { value: ip('10.0.0.2'), pool: 'a' },
    });
    expect(refused).toMatchObject({ ok: false, reason: 'RequestedIPInUse' });
  });

  it('changing the request moves to the new address and releases the old claim', async () => {
    const { allocator, store } = newAllocator();
    await allocator.ensureAddress(svc('x'), { pools: ['a'] });
    const moved = await allocator.ensureAddress(svc('x'), {
      pools: ['a'],
      requested: { value: ip('10.0.0.3'), pool: 'a' },
    });
    expect(moved).toMatchObject({ ok: true, value: ip('10.0.0.3') });
    expect([...store.objects.keys()]).toEqual(['ipv4.10.0.0.3']);
  });

  it('a claim with the same holder name but another uid is not adopted', async () => {
    const { allocator, index } = newAllocator();
    index.upsertClaim({ claimName: 'ipv4.10.0.0.0', pool: A, value: ip('10.0.0.0'), holder: svc('x', 'old-uid') });
    const got = await allocator.ensureAddress(svc('x', 'new-uid'), { pools: ['a'] });
    expect(got).toMatchObject({ ok: true, value: ip('10.0.0.1') });
  });

  it('releaseAll deletes every claim of the holder (ARP-6)', async () => {
    const { allocator, store, index } = newAllocator();
    await allocator.ensureAddress(svc('x'), { pools: ['a'] });
    expect(await allocator.releaseAll(svc('x'))).toBe(1);
    expect(store.objects.size).toBe(0);
    expect(index.usage(A)?.used).toBe(0);
  });

  it('a failed create frees the proposal', async () => {
    const store = new MemoryClaimStore();
    store.create = async () => {
      throw new Error('boom');
    };
    const { allocator, index } = newAllocator(store);
    await expect(allocator.ensureAddress(svc('x'), { pools: ['a'] })).rejects.toThrow('boom');
    expect(index.usage(A)?.used).toBe(0);
  });
});

describe('Allocator: subnet-vni values (EN-7)', () => {
  const en = { apiVersion: 'juneau.loutres.me/v1alpha1', kind: 'ExternalNetwork', name: 'net', uid: 'u-net' };

  it('takes the lowest free VNI once and returns the same on later passes', async () => {
    const { allocator, store } = newAllocator();
    const first = await allocator.ensureValue(en, SUBNET_VNI_REF);
    expect(first).toMatchObject({ ok: true, value: 4096, claimName: 'subnet-vni.4096' });
    expect(await allocator.ensureValue(en, SUBNET_VNI_REF)).toEqual(first);
    expect(store.creates).toBe(1);
  });

  it('a value recorded in status is claimed again exactly, never replaced', async () => {
    const { allocator, store } = newAllocator();
    const got = await allocator.ensureValue(en, SUBNET_VNI_REF, { current: 4099 });
    expect(got).toMatchObject({ ok: true, value: 4099 });
    expect([...store.objects.keys()]).toEqual(['subnet-vni.4099']);
  });

  it('reports NoFreeValue when the pool is exhausted', async () => {
    const { allocator } = newAllocator();
    for (let i = 0; i < 5; i++) await allocator.ensureValue({ ...en, name: `n${i}`, uid: `u${i}` }, SUBNET_VNI_REF);
    expect(await allocator.ensureValue(en, SUBNET_VNI_REF)).toMatchObject({ ok: false, reason: 'NoFreeValue' });
  });
});

describe("SEC-5: the allocator skips the cluster's own addresses", () => {
  it('SEC-5: skipped values are not claimed and are given back; a pool of skipped values only is NoFreeAddress', async () => {
    const { allocator, index, store } = newAllocator();
    const skip = (v: number) => v === ip('10.0.0.0') || v === ip('10.0.0.1');
    const got = await allocator.ensureAddress(svc('x'), { pools: ['a'], skip });
    expect(got).toMatchObject({ ok: true, value: ip('10.0.0.2') });
    expect(store.creates).toBe(1);
    // The skipped values are given back: without `skip`, the next holder gets the lowest one.
    expect(await allocator.ensureAddress(svc('y'), { pools: ['a'] })).toMatchObject({
      ok: true,
      value: ip('10.0.0.0'),
    });
    expect(index.usage(A)?.used).toBe(2);
    const none = await allocator.ensureAddress(svc('z'), { pools: ['b'], skip: () => true });
    expect(none).toMatchObject({ ok: false, reason: 'NoFreeAddress' });
  });
});
