/**
 * ALLOC-2: releases claims whose holder is gone — a crash between "holder deleted" and "claim
 * released", or a claim created for a holder that was deleted meanwhile. Conservative on
 * purpose: only kinds this controller allocates for; only claims older than a grace period
 * (a fresh claim's holder may not have reached this cache yet); and the holder is confirmed
 * gone by a live GET, not the cache. ElasticIP claims are left alone here: EIP-15 decides when
 * those may go.
 */
import { isNotFound } from '../../kube/rest';
import type { ResourceType } from '../../kube/resources';
import type { ClaimRecord } from '../allocator/allocator-index';
import type { ControllerContext } from '../context';
import { JuneauResources } from '../resources';

const HOLDER_TYPES: Record<string, ResourceType> = {
  ServiceLoadBalancer: JuneauResources.serviceLoadBalancers,
  ExternalNetwork: JuneauResources.externalNetworks,
};

/** Pure: the claims whose holder the caches do not hold (by name and uid), and old enough to look at. */
export function orphanCandidates(claims: readonly ClaimRecord[], holderUidInCache: (kind: string, namespace: string | undefined, name: string) => string | undefined, createdAt: (claimName: string) => number | undefined, now: number, graceMs: number): ClaimRecord[] {
  return claims.filter((c) => {
    if (!(c.holder.kind in HOLDER_TYPES)) return false;
    const created = createdAt(c.claimName);
    if (created === undefined || now - created < graceMs) return false;
    const uid = holderUidInCache(c.holder.kind, c.holder.namespace, c.holder.name);
    return uid === undefined || (c.holder.uid !== undefined && uid !== c.holder.uid);
  });
}

export async function sweepOrphanClaims(ctx: ControllerContext, graceMs: number, now = Date.now()): Promise<string[]> {
  const { caches } = ctx;
  const inCache = (kind: string, namespace: string | undefined, name: string) => {
    const key = namespace ? `${namespace}/${name}` : name;
    const obj = kind === 'ServiceLoadBalancer' ? caches.serviceLoadBalancers.get(key) : caches.externalNetworks.get(key);
    return obj?.metadata.uid;
  };
  const createdAt = (name: string) => {
    const t = caches.allocationClaims.get(name)?.metadata.creationTimestamp;
    return t ? Date.parse(String(t)) : undefined;
  };
  const released: string[] = [];
  for (const claim of orphanCandidates(ctx.index.allClaims(), inCache, createdAt, now, graceMs)) {
    if (!(await holderIsGone(ctx, claim))) continue;
    await ctx.allocator.releaseClaim(claim);
    released.push(claim.claimName);
    ctx.logger.info('released orphaned claim (ALLOC-2)', { claim: claim.claimName, holder: `${claim.holder.kind} ${claim.holder.namespace ?? ''}/${claim.holder.name}` });
  }
  return released;
}

async function holderIsGone(ctx: ControllerContext, claim: ClaimRecord): Promise<boolean> {
  try {
    const live = await ctx.rest.get(HOLDER_TYPES[claim.holder.kind], claim.holder.namespace, claim.holder.name);
    return claim.holder.uid !== undefined && live.metadata?.uid !== claim.holder.uid;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}
