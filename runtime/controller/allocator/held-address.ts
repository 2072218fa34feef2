/**
 * EIP-3 and NGW-2: an address holder (an ElasticIP, a NATGateway) keeps the address it holds for
 * life (its network and requestedIP are immutable), so a held claim is never re-decided (ADDR-3: a
 * network briefly missing does not release it); extra claims (two replicas racing) are released,
 * keeping the one the status names. Only a holder holding nothing asks the allocator, skipping the
 * cluster's own addresses (H5).
 */
import { clusterOwnerOf, formatIPv4, type ClusterRange } from '../../../api/validation';
import type { Allocator } from './allocator';
import type { Holder } from './allocator-index';
import type { Allocation, RequestDecision } from './address-request';

export interface HeldAddressOptions {
  /** The rule cited at the end of an allocation failure, e.g. 'EIP-3'. */
  readonly rule: string;
  /** Prefix a failure of a requested address with `spec.requestedIP: `. */
  readonly nameRequestedField?: boolean;
  /** When set, no new address is taken and this is the answer (EIP-16: a holder being deleted). */
  readonly refuseNew?: Allocation;
}

export async function ensureHeldAddress(
  allocator: Allocator,
  /** The cluster's own addresses, read only when a new address is asked for. */
  clusterRanges: () => readonly ClusterRange[],
  holder: Holder,
  statusAddress: string | undefined,
  request: RequestDecision,
  o: HeldAddressOptions,
): Promise<Allocation> {
  const held = allocator.heldClaims(holder, 'AddressPool');
  if (held.length > 0) {
    const keep = held.find((c) => formatIPv4(c.value) === statusAddress) ?? held[0];
    for (const extra of held) if (extra !== keep) await allocator.releaseClaim(extra);
    return { allocated: true, address: formatIPv4(keep.value), pool: keep.pool.name };
  }
  if (!request.ok) return { allocated: false, reason: request.reason, message: request.message };
  if (o.refuseNew) return o.refuseNew;
  const cluster = clusterRanges();
  const result = await allocator.ensureAddress(holder, {
    pools: request.pools,
    requested: request.requested && { value: request.requested.value, pool: request.requested.pool },
    skip: (value) => clusterOwnerOf(cluster, value) !== undefined, // H5
  });
  if (result.ok) return { allocated: true, address: formatIPv4(result.value), pool: result.pool.name };
  const field = o.nameRequestedField && request.requested ? 'spec.requestedIP: ' : '';
  return { allocated: false, reason: result.reason, message: `${field}${result.message} (${o.rule})` };
}
