/**
 * ALLOC-1: the allocation index is rebuilt from the caches at start and then follows them —
 * AddressPools and AllocationPools give the ranges, AllocationClaims the values taken. One
 * function, so every process that allocates (the controller, a test replica) sees the same index.
 */
import type { AddressPool, AllocationClaim, AllocationPool } from '../../../api';
import type { Informer } from '../../kube/informer';
import type { RuntimeMetrics } from '../../kube/metrics';
import type { Stored } from '../../kube/types';
import type { AllocatorIndex } from './allocator-index';
import { addressPoolRanges, claimRecordOf } from './claims';

type K<T> = Stored<T>;

export interface IndexSources {
  readonly addressPools: Informer<K<AddressPool>>;
  readonly allocationPools: Informer<K<AllocationPool>>;
  readonly allocationClaims: Informer<K<AllocationClaim>>;
}

/** Feeds `index` from the caches' handlers; `metrics` gets each AddressPool's usage as it changes. */
export function feedAllocatorIndex(
  caches: IndexSources,
  index: AllocatorIndex,
  metrics?: Pick<RuntimeMetrics, 'setPoolUsage'>,
): void {
  const reportUsage = (pool: string) => {
    const usage = index.usage({ kind: 'AddressPool', name: pool });
    if (usage) metrics?.setPoolUsage(pool, usage.used, usage.size);
  };
  const addressPool = (pool: K<AddressPool>, deleted: boolean) => {
    const ref = { kind: 'AddressPool' as const, name: pool.metadata.name };
    if (deleted) index.deletePool(ref);
    else index.setPool(ref, ...addressPoolRanges(ref.name, pool.spec));
    reportUsage(ref.name);
  };
  const allocationPool = (pool: K<AllocationPool>, deleted: boolean) => {
    const ref = { kind: 'AllocationPool' as const, name: pool.metadata.name };
    if (deleted) index.deletePool(ref);
    else index.setPool(ref, pool.spec.start <= pool.spec.end ? [{ first: pool.spec.start, last: pool.spec.end }] : []);
  };
  /** An update replaces the old claim's record: its holder or value may have changed. */
  const claim = (object: K<AllocationClaim>, deleted: boolean, old?: K<AllocationClaim>) => {
    if (old) index.deleteClaim(old.metadata.name);
    const record = claimRecordOf(object);
    if (deleted) index.deleteClaim(object.metadata.name);
    else if (record) index.upsertClaim(record);
    if (record?.pool.kind === 'AddressPool') reportUsage(record.pool.name);
  };
  caches.addressPools.addHandlers({
    onAdd: (p) => addressPool(p, false),
    onUpdate: (_old, p) => addressPool(p, false),
    onDelete: (p) => addressPool(p, true),
  });
  caches.allocationPools.addHandlers({
    onAdd: (p) => allocationPool(p, false),
    onUpdate: (_old, p) => allocationPool(p, false),
    onDelete: (p) => allocationPool(p, true),
  });
  caches.allocationClaims.addHandlers({
    onAdd: (c) => claim(c, false),
    onUpdate: (old, c) => claim(c, false, old),
    onDelete: (c) => claim(c, true),
  });
}
