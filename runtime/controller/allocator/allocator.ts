/**
 * Allocation by claim creation (ALLOC-1, EIP-3): propose a free value from the index, then create
 * the AllocationClaim named after it. The API server accepts one create per name, so the create
 * *is* the reservation; `exists` means someone else holds it — take the next. Everything a
 * holder keeps is found again from the claims (by holder), so a crash between "claim created"
 * and "status written" leaks nothing: the next pass adopts the claim.
 */
import type { AllocationClaim } from '../../../api';
import { formatIPv4 } from '../../../api/validation';
import type { AllocatorIndex, ClaimRecord, Holder, PoolRef } from './allocator-index';
import { claimObject, heldBy, type OwnerRef } from './claims';

/** Why an allocation failed: the reason of the holder's `Allocated` condition and of its Event. */
export const REASONS = {
  noFreeAddress: 'NoFreeAddress',
  /** SLB-2 / EIP-3: the requested address (or value) is held by another holder. */
  requestedIPInUse: 'RequestedIPInUse',
  noFreeValue: 'NoFreeValue',
} as const;

/** The writes the allocator needs; the shell implements them with the REST client. */
export interface ClaimStore {
  /**
   * Creates the claim: `created: false` when a claim of that name is already there (AlreadyExists);
   * else the new object's uid, so this holder's release is guarded by it (a later claim of the
   * same name is someone else's).
   */
  create(
    claim: AllocationClaim,
  ): Promise<{ readonly created: false } | { readonly created: true; readonly uid: string | undefined }>;
  /** Deletes the claim (NotFound is success); `uid` guards against deleting a newer claim of the same name. */
  delete(name: string, uid?: string): Promise<void>;
}

export type AllocationResult =
  | { readonly ok: true; readonly value: number; readonly pool: PoolRef; readonly claimName: string }
  | {
      readonly ok: false;
      readonly reason: (typeof REASONS)[keyof typeof REASONS];
      readonly message: string;
      /** ADDR-3: the claim the holder keeps meanwhile (its requested address is held by someone else). */
      readonly kept?: ClaimRecord;
    };

export interface AddressRequest {
  /** Usable AddressPool names, tried in order. */
  readonly pools: readonly string[];
  /** A requested address (as an integer) and the pool holding it. */
  readonly requested?: { readonly value: number; readonly pool: string };
  /**
   * ADDR-3: whether a claim the holder has is still its own to keep (its pool listed, loaded or
   * briefly missing, and still containing it). Default: in a usable pool that contains it.
   */
  readonly keep?: (claim: ClaimRecord) => boolean;
  /** H5: addresses never handed out by lowest-free-first (the cluster's own: Node addresses, pod CIDRs, ...). */
  readonly skip?: (value: number) => boolean;
}

/** Creates proposed from one pool before giving up on it in one pass (races lose one value each). */
const MAX_ATTEMPTS_PER_POOL = 32;

export class Allocator {
  /**
   * @param beforeRelease runs before each claim is deleted and may throw to keep it: the
   *   controller withdraws the holder's ARPAdvertisement of that address first (ARP-4, ../arp/claim-guard.ts).
   */
  constructor(
    private readonly index: AllocatorIndex,
    private readonly store: ClaimStore,
    private readonly beforeRelease?: (claim: ClaimRecord) => Promise<void>,
  ) {}

  /**
   * EIP-3 / SLB-2: the address this holder should have. Keeps an acceptable claim it already
   * holds (in a usable pool, equal to the requested address if any) and releases the others.
   */
  async ensureAddress(holder: Holder, request: AddressRequest): Promise<AllocationResult> {
    const held = this.heldClaims(holder, 'AddressPool');
    const keep =
      request.keep ??
      ((c: ClaimRecord) => request.pools.includes(c.pool.name) && this.index.contains(c.pool, c.value) === true);
    const acceptable = held.find((c) => keep(c) && (!request.requested || c.value === request.requested.value));
    const result = acceptable
      ? okOf(acceptable)
      : request.requested
        ? await this.claimRequested(holder, request.requested)
        : await this.claimAnyAddress(holder, request.pools, request.skip);
    // ADDR-3: a requested address held by someone else is a passing condition; the address the
    // holder has stays its own until the requested one is free (then it is released below).
    const kept = !result.ok && result.reason === REASONS.requestedIPInUse ? held.find(keep) : undefined;
    await this.releaseClaims(held.filter((c) => (result.ok ? c.claimName !== result.claimName : c !== kept)));
    return kept && !result.ok ? { ...result, kept } : result;
  }

  /**
   * ADDR-3: no address can be decided now (the network or pool is missing, ...). Keeps the
   * holder's lowest claim that `keep` accepts, releases the others, and returns the kept one.
   */
  async retainAddress(holder: Holder, keep: (claim: ClaimRecord) => boolean): Promise<ClaimRecord | undefined> {
    const held = this.heldClaims(holder, 'AddressPool');
    const kept = held.find(keep);
    await this.releaseClaims(held.filter((c) => c !== kept));
    return kept;
  }

  /** EN-7: one value of an AllocationPool for this holder, kept once taken. `current` is a value already recorded in status. */
  async ensureValue(
    holder: Holder,
    pool: PoolRef,
    options: { current?: number; owner?: OwnerRef } = {},
  ): Promise<AllocationResult> {
    const held = this.heldClaims(holder, pool.kind).filter((c) => c.pool.name === pool.name);
    if (options.current) {
      const mine = held.find((c) => c.value === options.current);
      // A second value taken by a racing replica whose status write lost is released (EN-7).
      await this.releaseClaims(held.filter((c) => c.value !== options.current));
      if (mine) return okOf(mine);
      // The status names a value whose claim is gone (deleted by hand?): claim it again, never another (EN-7).
      return this.claimExact(holder, pool, options.current, options.owner);
    }
    if (held.length > 0) return okOf(held[0]);
    return this.claimFirstFree(holder, pool, options.owner);
  }

  /** ARP-6 / ALLOC-2: releases every claim of the holder (finalizer, unsupported Service, ...). */
  async releaseAll(holder: Holder): Promise<number> {
    const held = this.heldClaims(holder);
    await this.releaseClaims(held);
    return held.length;
  }

  /** Releases one claim (ALLOC-2 sweep). */
  async releaseClaim(claim: ClaimRecord): Promise<void> {
    await this.releaseClaims([claim]);
  }

  /** The holder's claims, lowest value first, so two replicas keep the same one. */
  heldClaims(holder: Holder, kind?: PoolRef['kind']): ClaimRecord[] {
    return this.index
      .claimsOf(holder)
      .filter((c) => heldBy(c, holder) && (kind === undefined || c.pool.kind === kind))
      .sort((a, b) => a.value - b.value);
  }

  private async claimRequested(holder: Holder, requested: { value: number; pool: string }): Promise<AllocationResult> {
    const pool: PoolRef = { kind: 'AddressPool', name: requested.pool };
    const address = formatIPv4(requested.value);
    const other = this.index.claimOf(pool, requested.value);
    if (other && !heldBy(other, holder))
      return {
        ok: false,
        reason: REASONS.requestedIPInUse,
        message: `requested address ${address} is held by ${describeHolder(other.holder)} (claim ${other.claimName})`,
      };
    return this.claimExact(holder, pool, requested.value);
  }

  private async claimExact(holder: Holder, pool: PoolRef, value: number, owner?: OwnerRef): Promise<AllocationResult> {
    const shown = pool.kind === 'AddressPool' ? formatIPv4(value) : String(value);
    this.index.holdTentatively(pool, value);
    const claim = claimObject(pool, value, holder, owner);
    if (await this.create(pool, value, claim)) return { ok: true, value, pool, claimName: claim.metadata.name! };
    const other = this.index.claimOf(pool, value);
    const by = other
      ? `${describeHolder(other.holder)} (claim ${other.claimName})`
      : `another holder (claim ${claim.metadata.name} exists)`;
    return {
      ok: false,
      reason: REASONS.requestedIPInUse,
      message: `${pool.kind === 'AddressPool' ? 'requested address' : `value of ${pool.name}`} ${shown} is held by ${by}`,
    };
  }

  private async claimAnyAddress(
    holder: Holder,
    pools: readonly string[],
    skip?: (value: number) => boolean,
  ): Promise<AllocationResult> {
    for (const name of pools) {
      const result = await this.claimFirstFree(holder, { kind: 'AddressPool', name }, undefined, skip);
      if (result.ok) return result;
    }
    const usage = pools.map((n) => {
      const u = this.index.usage({ kind: 'AddressPool', name: n });
      return u ? `${n} (${u.used}/${u.size} used)` : `${n} (not loaded)`;
    });
    return {
      ok: false,
      reason: REASONS.noFreeAddress,
      message: `no free address in AddressPool(s) ${usage.join(', ')}`,
    };
  }

  private async claimFirstFree(
    holder: Holder,
    pool: PoolRef,
    owner?: OwnerRef,
    skip?: (value: number) => boolean,
  ): Promise<AllocationResult> {
    // Skipped values are held tentatively while this pass proposes the next, then given back.
    const skipped: number[] = [];
    try {
      for (let attempt = 0; attempt < MAX_ATTEMPTS_PER_POOL;) {
        const value = this.index.propose(pool);
        if (value === undefined) break;
        if (skip?.(value)) {
          skipped.push(value);
          continue;
        }
        attempt++;
        const claim = claimObject(pool, value, holder, owner);
        // On `exists` the value stays held tentatively until the other holder's claim arrives.
        if (await this.create(pool, value, claim)) return { ok: true, value, pool, claimName: claim.metadata.name! };
      }
    } finally {
      for (const value of skipped) this.index.release(pool, value);
    }
    return {
      ok: false,
      reason: pool.kind === 'AddressPool' ? REASONS.noFreeAddress : REASONS.noFreeValue,
      message: `no free value in ${pool.kind} ${pool.name}`,
    };
  }

  /** Whether the claim was created (false: AlreadyExists). */
  private async create(pool: PoolRef, value: number, claim: AllocationClaim): Promise<boolean> {
    let outcome: Awaited<ReturnType<ClaimStore['create']>>;
    try {
      outcome = await this.store.create(claim);
    } catch (err) {
      this.index.release(pool, value);
      throw err;
    }
    if (outcome.created) {
      // Known now rather than when the informer delivers it, so the next pass adopts it; with its
      // uid, so releasing it can never delete (or forget) a newer claim of the same name.
      this.index.upsertClaim({
        claimName: claim.metadata.name!,
        pool,
        value,
        holder: claim.spec.holder,
        uid: outcome.uid,
      });
    }
    return outcome.created;
  }

  private async releaseClaims(claims: readonly ClaimRecord[]): Promise<void> {
    for (const c of claims) {
      await this.beforeRelease?.(c);
      await this.store.delete(c.claimName, c.uid);
      // The informer may already have delivered a newer claim of that name (another holder took
      // the value meanwhile); forgetting it would make this index offer the value and miss that
      // holder's claim for good (two replicas then disagree on what the holder has: ALLOC-1).
      if (this.index.getClaim(c.claimName)?.uid === c.uid) this.index.deleteClaim(c.claimName);
    }
  }
}

function okOf(c: ClaimRecord): AllocationResult {
  return { ok: true, value: c.value, pool: c.pool, claimName: c.claimName };
}

export function describeHolder(h: Holder): string {
  return `${h.kind} ${h.namespace ? `${h.namespace}/` : ''}${h.name}`;
}
