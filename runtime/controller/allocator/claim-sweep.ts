/**
 * ALLOC-2: releases claims whose holder is gone — a crash between "holder deleted" and "claim
 * released", a claim created for a holder that was deleted meanwhile, or the claim of an object
 * deleted while no controller ran and then recreated under the same name. Conservative on
 * purpose: only kinds this controller allocates for; only claims older than a grace period (a
 * fresh claim's holder may not have reached this cache yet); the holder is confirmed gone by a
 * live GET, not the cache; and a kind may keep a claim while something still uses its value
 * (EIP-15 for ElasticIPs, ../eip/claim-sweep.ts).
 *
 * Identity is the uid: an object recreated under the same name is another object. Its old claim
 * is released, never re-adopted — the new object chose its own address when it was created
 * (maybe another requestedIP or network), so adopting would give it two, or one it did not ask for.
 */
import { getOrUndefined } from '../../kube/rest';
import type { ResourceType } from '../../kube/resources';
import type { ClaimRecord } from './allocator-index';
import type { ControllerContext } from '../context';
import { JuneauResources } from '../../kube/resources';

/** A kind whose claims the sweep looks after. */
export interface SweptHolderKind {
  readonly type: ResourceType;
  /** The uid of the object of that name in the cache, or undefined when the cache has none. */
  uidInCache(namespace: string | undefined, name: string): string | undefined;
  /** Whether something may still use the claim's value although its holder is gone; then it waits. */
  stillUsed?(claim: ClaimRecord): boolean;
  /** Whether the caches this kind reads have synced; until then its claims are not looked at. */
  synced?(): boolean;
}

export type SweptHolderKinds = Readonly<Record<string, SweptHolderKind>>;

/** The kinds of the controller's own caches: ServiceLoadBalancer, ExternalNetwork and NATGateway. */
export function controllerHolderKinds(ctx: ControllerContext): SweptHolderKinds {
  const { caches } = ctx;
  return {
    ServiceLoadBalancer: {
      type: JuneauResources.serviceLoadBalancers,
      uidInCache: (namespace, name) => caches.serviceLoadBalancers.get(namespace, name)?.metadata.uid,
    },
    ExternalNetwork: {
      type: JuneauResources.externalNetworks,
      uidInCache: (_namespace, name) => caches.externalNetworks.get(undefined, name)?.metadata.uid,
    },
    NATGateway: {
      type: JuneauResources.natGateways,
      uidInCache: (namespace, name) => caches.natGateways.get(namespace, name)?.metadata.uid,
    },
  };
}

/** Pure: the claims whose holder the caches do not hold (by name and uid), and old enough to look at. */
export function orphanCandidates(
  claims: readonly ClaimRecord[],
  kinds: SweptHolderKinds,
  createdAt: (claimName: string) => number | undefined,
  now: number,
  graceMs: number,
): ClaimRecord[] {
  return claims.filter((c) => {
    const kind = Object.hasOwn(kinds, c.holder.kind) ? kinds[c.holder.kind] : undefined;
    if (!kind || kind.synced?.() === false) return false;
    const created = createdAt(c.claimName);
    if (created === undefined || now - created < graceMs) return false;
    const uid = kind.uidInCache(c.holder.namespace, c.holder.name);
    const gone = uid === undefined || (c.holder.uid !== undefined && uid !== c.holder.uid);
    return gone && !kind.stillUsed?.(c);
  });
}

export async function sweepOrphanClaims(
  ctx: ControllerContext,
  graceMs: number,
  now = Date.now(),
  kinds: SweptHolderKinds = controllerHolderKinds(ctx),
): Promise<string[]> {
  const createdAt = (name: string) => {
    const t = ctx.caches.allocationClaims.get(undefined, name)?.metadata.creationTimestamp;
    return t ? Date.parse(String(t)) : undefined;
  };
  const released: string[] = [];
  for (const claim of orphanCandidates(ctx.index.allClaims(), kinds, createdAt, now, graceMs)) {
    if (!(await holderIsGone(ctx, kinds[claim.holder.kind].type, claim))) continue;
    await ctx.allocator.releaseClaim(claim);
    released.push(claim.claimName);
    ctx.logger.info('released orphaned claim (ALLOC-2)', {
      claim: claim.claimName,
      holder: `${claim.holder.kind} ${claim.holder.namespace ?? ''}/${claim.holder.name}`,
      uid: claim.holder.uid,
    });
  }
  return released;
}

async function holderIsGone(ctx: ControllerContext, type: ResourceType, claim: ClaimRecord): Promise<boolean> {
  const live = await getOrUndefined(ctx.rest, type, claim.holder.namespace, claim.holder.name);
  return !live || (claim.holder.uid !== undefined && live.metadata?.uid !== claim.holder.uid);
}
