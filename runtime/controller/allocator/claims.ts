/**
 * AllocationClaim objects <-> index records, and the default `subnet-vni` AllocationPool.
 */
import {
  addressClaimName,
  API_VERSION,
  SUBNET_VNI_POOL,
  valueClaimName,
  type AllocationClaim,
  type AllocationPool,
} from '../../../api';
import { formatIPv4, parsePoolAddresses, type AddressRange } from '../../../api/validation';
import { parseClaimValue, type ClaimRecord, type Holder, type PoolRef } from './allocator-index';

/**
 * The range the controller gives `subnet-vni` when it creates it (EN-7).
 * - 4096: values 1..4095 are left free because operators commonly map VLAN n to VNI n on
 *   VTEPs and switches (EVPN VLAN-based service); a Juneau VNI must not collide with those.
 *   0 also means "not written yet" in `status.networkID`, so it can never be handed out.
 * - 16777215: the largest 24-bit VXLAN VNI (RFC 7348).
 * An operator who needs another range creates the AllocationPool before the controller starts;
 * the controller never changes an existing one (its range is immutable, ALLOC-1).
 */
export const DEFAULT_SUBNET_VNI_RANGE = { start: 4096, end: 16777215 } as const;

export const SUBNET_VNI_REF: PoolRef = { kind: 'AllocationPool', name: SUBNET_VNI_POOL };

export function defaultSubnetVniPool(): AllocationPool {
  return {
    apiVersion: API_VERSION,
    kind: 'AllocationPool',
    metadata: { name: SUBNET_VNI_POOL },
    spec: { ...DEFAULT_SUBNET_VNI_RANGE },
  };
}

/**
 * What the index takes from an AddressPool (ADDR-1, ADDR-2): the usable ranges of the allowed
 * items (no network/broadcast address of a CIDR shorter than /31) and whether .0/.255 are skipped.
 */
export function addressPoolRanges(
  name: string,
  spec: { readonly addresses: readonly string[]; readonly avoidBuggyIPs?: boolean },
): [AddressRange[], { avoidBuggyIPs: boolean }] {
  const parsed = parsePoolAddresses({ name, addresses: spec.addresses, avoidBuggyIPs: spec.avoidBuggyIPs });
  return [[...parsed.usable], { avoidBuggyIPs: parsed.avoidBuggyIPs }];
}

/** The claim name of a value: `ipv4.<address>` or `<pool>.<n>`. */
export function claimNameOf(ref: PoolRef, value: number): string {
  return ref.kind === 'AddressPool' ? addressClaimName(formatIPv4(value)) : valueClaimName(ref.name, value);
}

/** The claim's `spec.value`: the dotted address or the decimal integer. */
export function formatClaimValue(ref: PoolRef, value: number): string {
  return ref.kind === 'AddressPool' ? formatIPv4(value) : String(value);
}

/** The AllocationClaim to create to reserve `value` for `holder`. */
export function claimObject(ref: PoolRef, value: number, holder: Holder, ownerReference?: OwnerRef): AllocationClaim {
  return {
    apiVersion: API_VERSION,
    kind: 'AllocationClaim',
    metadata: {
      name: claimNameOf(ref, value),
      ...(ownerReference ? { ownerReferences: [{ ...ownerReference, blockOwnerDeletion: false }] } : {}),
    },
    spec: {
      pool: { kind: ref.kind, name: ref.name },
      value: formatClaimValue(ref, value),
      holder: stripUndefined({ ...holder }),
    },
  };
}

export interface OwnerRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** The index record of a claim object, or undefined when its value does not parse. */
export function claimRecordOf(claim: AllocationClaim): ClaimRecord | undefined {
  const name = claim.metadata?.name;
  const kind = claim.spec?.pool?.kind;
  if (!name || (kind !== 'AddressPool' && kind !== 'AllocationPool')) return undefined;
  const value = parseClaimValue(kind, claim.spec.value);
  if (value === undefined) return undefined;
  return {
    claimName: name,
    pool: { kind, name: claim.spec.pool.name },
    value,
    holder: claim.spec.holder,
    uid: claim.metadata.uid,
  };
}

/** Whether a claim is held by exactly this object (same kind/namespace/name and, when both have one, uid). */
export function heldBy(record: ClaimRecord, holder: Holder): boolean {
  const h = record.holder;
  if (h.kind !== holder.kind || (h.namespace ?? '') !== (holder.namespace ?? '') || h.name !== holder.name)
    return false;
  return !h.uid || !holder.uid || h.uid === holder.uid;
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== '')) as T;
}
