/**
 * ElasticIP (EIP-1..18, ARP-6). Key: `<namespace>/<name>`. Level-triggered: every pass reads the
 * caches, asks ./plan what should be, and writes only the differences — the finalizer before any
 * claim, the address by claim creation (shared allocator: one address never goes to an ElasticIP
 * and a ServiceLoadBalancer at once), the status once, then the ARPAdvertisement.
 *
 * Contract: NotFound in the cache → the object is gone (claims it held without our finalizer are
 * released once no NIC references it); API errors are thrown and retried with backoff.
 */
import { FINALIZERS } from '../../../api';
import { formatIPv4 } from '../../../api/validation';
import { addFinalizer, applyStatus, hasFinalizer, removeFinalizer } from '../../kube/apply';
import { referenceTo } from '../../kube/events';
import { isNotFound } from '../../kube/rest';
import { splitKey } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import { juneauHolder, type Holder } from '../allocator/allocator-index';
import { poolViews, sameJson, type ControllerContext } from '../context';
import type { AdvertisementOwner } from '../arp/names';
import { deleteOwnedAdvertisements, ensureAdvertisement, findAdvertisement } from '../arp/owned';
import { attachmentViewsOf, EipResources, nicViewsOf, type EipCaches, type ElasticIPObject } from './caches';
import { planElasticIP, REASONS, type Allocation, type ElasticIPPlan, type Resolution } from './plan';
import { decideAddressRequest, type RequestDecision } from './request';

/** What the ElasticIP-side reconcilers share: the controller context and this feature's caches. */
export interface EipContext {
  readonly base: ControllerContext;
  readonly caches: EipCaches;
}

const EIP = EipResources.elasticIPs;

export async function reconcileElasticIP(ctx: EipContext, key: string): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  let eip = ctx.caches.elasticIPs.get(namespace, name);
  if (!eip) return releaseForgotten(ctx, namespace, name);
  const deleting = !!eip.metadata.deletionTimestamp;
  if (deleting && !hasFinalizer(eip, FINALIZERS.elasticIP)) return done();
  if (!deleting) eip = await addFinalizer(ctx.base.rest, EIP, eip, FINALIZERS.elasticIP, ctx.base.fieldManager);
  const request = requestOf(ctx, eip);
  const allocation = await ensureAllocation(ctx, eip, request, deleting);
  const owner: AdvertisementOwner = { kind: 'ElasticIP', namespace, name };
  const advertisement = findAdvertisement(ctx.base.caches.arpAdvertisements, owner);
  const plan = planElasticIP({
    namespace,
    name,
    generation: eip.metadata.generation ?? 0,
    deleting,
    previous: eip.status,
    resolution: resolutionOf(request),
    allocation,
    attachments: attachmentViewsOf(ctx.caches, namespace, name),
    nics: nicViewsOf(ctx.caches, namespace, name),
    currentAdvertisementNode: advertisement.current?.spec.nodeName,
  });
  if (plan.finalize) return finalizeElasticIP(ctx, eip, owner);
  await ensureStatus(ctx, eip, plan);
  await ensureAdvertisement(ctx.base, referenceTo(eip, EIP), owner, holderOf(eip), advertisement, plan.advertisement);
  recordEvents(ctx, eip, plan);
  return done();
}

export function holderOf(eip: { metadata: { namespace?: string; name?: string; uid?: string } }): Holder {
  return juneauHolder('ElasticIP', eip);
}

function requestOf(ctx: EipContext, eip: ElasticIPObject): RequestDecision {
  const network = ctx.base.caches.externalNetworks.get(undefined, eip.spec.externalNetwork);
  const view = network && {
    name: network.metadata.name ?? '',
    type: network.spec.type,
    addressPools: network.spec.addressPools,
  };
  return decideAddressRequest(eip.spec, view, poolViews(ctx.base.caches));
}

function resolutionOf(request: RequestDecision): Resolution {
  return request.ok ? { ok: true, network: request.network, type: request.type } : request;
}

/**
 * EIP-3: an ElasticIP keeps the address it holds for life (its network and requestedIP are
 * immutable), so a held claim is never re-decided — a pool edited away under a running Pod does
 * not move its address. Extra claims (two replicas racing) are released, keeping the one the
 * status names. Only an ElasticIP holding nothing, not being deleted (EIP-16), asks the allocator.
 */
async function ensureAllocation(
  ctx: EipContext,
  eip: ElasticIPObject,
  request: RequestDecision,
  deleting: boolean,
): Promise<Allocation> {
  const { allocator } = ctx.base;
  const holder = holderOf(eip);
  const held = allocator.heldClaims(holder, 'AddressPool');
  if (held.length > 0) {
    const keep = held.find((c) => formatIPv4(c.value) === eip.status?.address) ?? held[0];
    for (const extra of held) if (extra !== keep) await allocator.releaseClaim(extra);
    return { allocated: true, address: formatIPv4(keep.value), pool: keep.pool.name };
  }
  if (!request.ok) return { allocated: false, reason: request.reason, message: request.message };
  if (deleting)
    return {
      allocated: false,
      reason: REASONS.elasticIPDeleting,
      message: 'the ElasticIP is being deleted; no address is taken (EIP-16)',
    };
  const result = await allocator.ensureAddress(holder, {
    pools: request.pools,
    requested: request.requested && { value: request.requested.value, pool: request.requested.pool },
  });
  if (result.ok) return { allocated: true, address: formatIPv4(result.value), pool: result.pool.name };
  return { allocated: false, reason: result.reason, message: `${result.message} (EIP-3)` };
}

/** Status once per pass through the status subresource, only when it changed. */
async function ensureStatus(ctx: EipContext, eip: ElasticIPObject, plan: ElasticIPPlan): Promise<void> {
  if (!plan.status || sameJson(eip.status, plan.status)) return;
  await applyStatus(
    ctx.base.rest,
    EIP,
    { namespace: eip.metadata.namespace, name: eip.metadata.name ?? '' },
    plan.status,
    ctx.base.fieldManager,
  );
}

function recordEvents(ctx: EipContext, eip: ElasticIPObject, plan: ElasticIPPlan): void {
  const regarding = referenceTo(eip, EIP);
  for (const e of plan.events)
    ctx.base.recorder?.record({ regarding, type: e.type, reason: e.reason, action: 'Reconcile', note: e.message });
}

/** EIP-14/15, ARP-6: no direct NIC left — the ARPAdvertisement, then the claim, then the finalizer. */
async function finalizeElasticIP(
  ctx: EipContext,
  eip: ElasticIPObject,
  owner: AdvertisementOwner,
): Promise<ReconcileResult> {
  await deleteOwnedAdvertisements(ctx.base, ctx.base.caches.arpAdvertisements, owner);
  await ctx.base.allocator.releaseAll(holderOf(eip));
  try {
    await removeFinalizer(ctx.base.rest, EIP, eip, FINALIZERS.elasticIP, ctx.base.fieldManager);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return done();
}

/**
 * ALLOC-2: an ElasticIP that is gone but still holds claims (its finalizer was removed by hand,
 * or a crash between steps). EIP-15 still holds: nothing is released while a NIC names it.
 */
async function releaseForgotten(ctx: EipContext, namespace: string, name: string): Promise<ReconcileResult> {
  // A NIC's change brings the key back (register.ts maps it to its ElasticIP).
  if (nicViewsOf(ctx.caches, namespace, name).length > 0) return done();
  const holder: Holder = { kind: 'ElasticIP', namespace, name };
  await deleteOwnedAdvertisements(ctx.base, ctx.base.caches.arpAdvertisements, { kind: 'ElasticIP', namespace, name });
  const released = await ctx.base.allocator.releaseAll(holder);
  if (released > 0)
    ctx.base.logger.info('released claims of a deleted ElasticIP (ALLOC-2)', {
      elasticIP: `${namespace}/${name}`,
      claims: released,
    });
  return done();
}
