/**
 * The in-memory allocation index (ALLOC-1, EIP-3): every AddressPool and AllocationPool parsed
 * once into a ValuePool, and every AllocationClaim loaded into it. It only *proposes*: the
 * reservation is the creation of the claim object, which the API server makes unique by name.
 *
 * A proposed value is held "tentatively" so two workers of one process do not propose the same
 * value; it becomes firm when its claim arrives from the informer, and is dropped by
 * `release` (the create failed) or by `expireTentative` (a claim that was never seen).
 */
import { API_VERSION } from '../../../api';
import { parseIPv4, type AddressRange } from '../../../api/validation';
import { ValuePool } from './value-pool';

export type PoolKind = 'AddressPool' | 'AllocationPool';

export interface PoolRef {
  readonly kind: PoolKind;
  readonly name: string;
}

/** Who holds a value (AllocationClaim `spec.holder`). */
export interface Holder {
  readonly apiVersion?: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  readonly uid?: string;
}

/** The Holder that is one of Juneau's own objects (a ServiceLoadBalancer, an ElasticIP). */
export function juneauHolder(
  kind: string,
  object: { readonly metadata: { readonly namespace?: string; readonly name?: string; readonly uid?: string } },
): Holder {
  const { namespace, name, uid } = object.metadata;
  return { apiVersion: API_VERSION, kind, namespace, name: name ?? '', uid };
}

/** An AllocationClaim reduced to what the index needs. */
export interface ClaimRecord {
  /** metadata.name, derived from the value (`ipv4.<ip>`, `<pool>.<n>`). */
  readonly claimName: string;
  readonly pool: PoolRef;
  readonly value: number;
  readonly holder: Holder;
  /** metadata.uid of the claim, when known (guards deletes). */
  readonly uid?: string;
}

export interface PoolUsage {
  readonly size: number;
  readonly used: number;
}

export const poolKey = (ref: PoolRef): string => `${ref.kind}/${ref.name}`;
/** Holders are looked up by kind/namespace/name; callers compare `uid` themselves. */
export const holderKey = (h: Pick<Holder, 'kind' | 'namespace' | 'name'>): string =>
  `${h.kind}/${h.namespace ?? ''}/${h.name}`;

/** Parses a claim's `spec.value`: an IPv4 address for AddressPools, a decimal integer otherwise. */
export function parseClaimValue(kind: PoolKind, value: string): number | undefined {
  if (kind === 'AddressPool') return parseIPv4(value);
  return /^(0|[1-9][0-9]{0,9})$/.test(value) && Number(value) <= 0xffffffff ? Number(value) : undefined;
}

export class AllocatorIndex {
  private readonly pools = new Map<string, ValuePool>();
  private readonly claims = new Map<string, ClaimRecord>();
  /** pool key -> value -> claim name; the value side of `claims`. */
  private readonly claimByValue = new Map<string, Map<number, string>>();
  private readonly byHolder = new Map<string, Set<string>>();
  /** pool key -> value -> when it was proposed (ms). */
  private readonly tentative = new Map<string, Map<number, number>>();

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Adds or replaces a pool; the claims and tentative values that fall inside are re-taken.
   * `ranges` are what may be handed out (an AddressPool's `usable`, ADDR-2).
   */
  setPool(ref: PoolRef, ranges: readonly AddressRange[], options: { readonly avoidBuggyIPs?: boolean } = {}): void {
    const key = poolKey(ref);
    const pool = new ValuePool(ranges, options);
    for (const value of this.claimByValue.get(key)?.keys() ?? []) pool.take(value);
    for (const value of this.tentative.get(key)?.keys() ?? []) pool.take(value);
    this.pools.set(key, pool);
  }

  deletePool(ref: PoolRef): void {
    this.pools.delete(poolKey(ref));
  }

  hasPool(ref: PoolRef): boolean {
    return this.pools.has(poolKey(ref));
  }

  /** Loads a claim (informer add/update); replaces an earlier record of the same name. */
  upsertClaim(record: ClaimRecord): void {
    const previous = this.claims.get(record.claimName);
    if (previous) this.deleteClaim(record.claimName);
    const key = poolKey(record.pool);
    this.claims.set(record.claimName, record);
    mapOf(this.claimByValue, key).set(record.value, record.claimName);
    setOf(this.byHolder, holderKey(record.holder)).add(record.claimName);
    this.tentative.get(key)?.delete(record.value);
    this.pools.get(key)?.take(record.value);
  }

  /** Unloads a claim (informer delete); its value is free again unless proposed meanwhile. */
  deleteClaim(claimName: string): void {
    const record = this.claims.get(claimName);
    if (!record) return;
    const key = poolKey(record.pool);
    this.claims.delete(claimName);
    this.claimByValue.get(key)?.delete(record.value);
    const held = this.byHolder.get(holderKey(record.holder));
    held?.delete(claimName);
    if (held?.size === 0) this.byHolder.delete(holderKey(record.holder));
    if (!this.tentative.get(key)?.has(record.value)) this.pools.get(key)?.release(record.value);
  }

  /**
   * Proposes the lowest free value of the pool and holds it tentatively, or undefined when the
   * pool is unknown or full. The caller creates the claim, then calls `release` on failure.
   */
  propose(ref: PoolRef): number | undefined {
    const pool = this.pools.get(poolKey(ref));
    const value = pool?.lowestFree();
    if (pool === undefined || value === undefined) return undefined;
    pool.take(value);
    mapOf(this.tentative, poolKey(ref)).set(value, this.now());
    return value;
  }

  /**
   * Holds `value` tentatively: a requested value about to be claimed, or one whose claim
   * already exists (AlreadyExists) but has not reached the informer yet.
   */
  holdTentatively(ref: PoolRef, value: number): void {
    const key = poolKey(ref);
    if (this.claimByValue.get(key)?.has(value)) return;
    this.pools.get(key)?.take(value);
    mapOf(this.tentative, key).set(value, this.now());
  }

  /** Drops a tentative hold (the claim was not created); a value with a claim stays taken. */
  release(ref: PoolRef, value: number): void {
    const key = poolKey(ref);
    if (!this.tentative.get(key)?.delete(value)) return;
    if (!this.claimByValue.get(key)?.has(value)) this.pools.get(key)?.release(value);
  }

  /** Drops tentative holds older than `maxAgeMs` whose claim never arrived. Returns how many. */
  expireTentative(maxAgeMs: number): number {
    const cutoff = this.now() - maxAgeMs;
    let expired = 0;
    for (const [key, values] of this.tentative) {
      for (const [value, at] of values) {
        if (at > cutoff) continue;
        values.delete(value);
        if (!this.claimByValue.get(key)?.has(value)) this.pools.get(key)?.release(value);
        expired++;
      }
    }
    return expired;
  }

  /** The claim holding `value` of the pool, if the informer has seen one. */
  claimOf(ref: PoolRef, value: number): ClaimRecord | undefined {
    const name = this.claimByValue.get(poolKey(ref))?.get(value);
    return name === undefined ? undefined : this.claims.get(name);
  }

  getClaim(claimName: string): ClaimRecord | undefined {
    return this.claims.get(claimName);
  }

  /** Claims recorded for this holder (by kind/namespace/name; compare uid yourself). */
  claimsOf(holder: Pick<Holder, 'kind' | 'namespace' | 'name'>): ClaimRecord[] {
    return [...(this.byHolder.get(holderKey(holder)) ?? [])].map((n) => this.claims.get(n)!).filter(Boolean);
  }

  allClaims(): ClaimRecord[] {
    return [...this.claims.values()];
  }

  /** Whether `value` is inside the pool's ranges (undefined when the pool is unknown). */
  contains(ref: PoolRef, value: number): boolean | undefined {
    return this.pools.get(poolKey(ref))?.contains(value);
  }

  isTaken(ref: PoolRef, value: number): boolean {
    return this.pools.get(poolKey(ref))?.isTaken(value) ?? false;
  }

  /** AP-3: size and used of a pool, or undefined when unknown. */
  usage(ref: PoolRef): PoolUsage | undefined {
    const pool = this.pools.get(poolKey(ref));
    return pool && { size: pool.size, used: pool.used };
  }
}

function mapOf<K, V>(outer: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let inner = outer.get(key);
  if (!inner) outer.set(key, (inner = new Map()));
  return inner;
}

function setOf<T>(outer: Map<string, Set<T>>, key: string): Set<T> {
  let inner = outer.get(key);
  if (!inner) outer.set(key, (inner = new Set()));
  return inner;
}
