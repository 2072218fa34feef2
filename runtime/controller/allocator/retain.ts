/**
 * ADDR-3: when an address a holder already has stays its own. Only a change the user made
 * releases it — the owner deleted, its network or requested address changed, or the address
 * gone from every pool of its network. A condition that passes by itself keeps it: the
 * ExternalNetwork or AddressPool briefly missing (deleted and recreated, EN-6), or a pool the
 * allocation index has not loaded yet. Otherwise a controller restart or an EN-6 recreation
 * would hand every VIP a new address. Pure.
 */
import type { NetworkView, PoolView } from '../../../api/validation';
import type { AllocatorIndex, ClaimRecord } from './allocator-index';

export interface RetainContext {
  /** The network the holder names (`spec.externalNetwork`). */
  readonly networkName: string;
  /** That network, or undefined while it does not exist. */
  readonly network: NetworkView | undefined;
  /** Every ExternalNetwork the caches hold (to see whether the pool now belongs to another one). */
  readonly networks: readonly NetworkView[];
  /** Every AddressPool the caches hold, by name. */
  readonly pools: ReadonlyMap<string, PoolView>;
  readonly index: Pick<AllocatorIndex, 'hasPool' | 'contains'>;
}

/** Whether `claim` (an AddressPool claim of the holder) is kept. */
export function mayKeepAddress(claim: ClaimRecord, o: RetainContext): boolean {
  if (!o.network) {
    // Missing network: kept unless its pool is listed by another network now (EN-4: a pool
    // belongs to one network), which means the holder's network changed away from it.
    return !o.networks.some((n) => n.name !== o.networkName && n.addressPools.includes(claim.pool.name));
  }
  if (!o.network.addressPools.includes(claim.pool.name)) return false;
  const pool = o.pools.get(claim.pool.name);
  if (!pool || !o.index.hasPool(claim.pool)) return true;
  if (pool.advertiseMode !== o.network.type) return false;
  return o.index.contains(claim.pool, claim.value) === true;
}
