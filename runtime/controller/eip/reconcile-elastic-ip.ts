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
import { networkView } from '../../../api/validation';
import type { ElasticIP } from '../../../api';
import { addFinalizer, hasFinalizer } from '../../kube/apply';
import { referenceTo } from '../../kube/events';
import { objectKey, splitKey, type Stored } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import { juneauHolder, type Holder } from '../allocator/allocator-index';
import { claimRecordOf } from '../allocator/claims';
import {
  addressHolderWatches,
  clusterRangesOf,
  namespaceViewOf,
  elasticIPWatches,
  poolViews,
  refKey,
  type ControllerContext,
} from '../context';
import type { AdvertisementOwner } from '../arp/names';
import { untilWithdrawn } from '../bgp/withdrawn';
import { deleteOwnedAdvertisements, ensureAdvertisement, findAdvertisement } from '../arp/owned';
import type { ReconcilerSpec } from '../reconciler';
import { JuneauResources } from '../../kube/resources';
import { recordPlanEvents, releaseFinalizer, writeStatusIfChanged } from '../shell';
import { planElasticIP, REASONS, type Allocation, type Resolution } from './plan';
import { attachmentViewsOf, awaitingNetworkIDOf, nicViewsOf } from './views';
import { decideAddressRequest, type RequestDecision } from '../allocator/address-request';
import { ensureHeldAddress } from '../allocator/held-address';

type ElasticIPObject = Stored<ElasticIP>;
const EIP = JuneauResources.elasticIPs;

export async function reconcileElasticIP(ctx: ControllerContext, key: string): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  let eip = ctx.caches.elasticIPs.get(namespace, name);
  if (!eip) return releaseForgotten(ctx, namespace, name);
  const deleting = !!eip.metadata.deletionTimestamp;
  if (deleting && !hasFinalizer(eip, FINALIZERS.elasticIP)) return done();
  if (!deleting) eip = await addFinalizer(ctx.rest, EIP, eip, FINALIZERS.elasticIP, ctx.fieldManager);
  const request = requestOf(ctx, eip);
  // EIP-3: the address held is kept for life; only an ElasticIP not being deleted (EIP-16) takes one.
  const allocation = await ensureHeldAddress(
    ctx.allocator,
    () => clusterRangesOf(ctx.caches),
    holderOf(eip),
    eip.status?.address,
    request,
    {
      rule: 'EIP-3',
      refuseNew: deleting ? DELETING : undefined,
    },
  );
  const owner: AdvertisementOwner = { kind: 'ElasticIP', namespace, name };
  const advertisement = findAdvertisement(ctx.caches.arpAdvertisements, owner);
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
    awaitingNetworkID: awaitingNetworkIDOf(ctx.caches, eip),
    currentAdvertisementNode: advertisement.current?.spec.nodeName,
  });
  if (plan.finalize) return finalizeElasticIP(ctx, eip, owner);
  await writeStatusIfChanged(ctx, EIP, eip, plan.status);
  await ensureAdvertisement(ctx, referenceTo(eip, EIP), owner, holderOf(eip), advertisement, plan.advertisement);
  recordPlanEvents(ctx, eip, EIP, plan.events);
  return done();
}

export function holderOf(eip: { metadata: { namespace?: string; name?: string; uid?: string } }): Holder {
  return juneauHolder('ElasticIP', eip);
}

function requestOf(ctx: ControllerContext, eip: ElasticIPObject): RequestDecision {
  const network = ctx.caches.externalNetworks.get(undefined, eip.spec.externalNetwork);
  return decideAddressRequest(
    eip.spec,
    network && networkView(network),
    poolViews(ctx.caches),
    clusterRangesOf(ctx.caches),
    namespaceViewOf(ctx.caches, eip.metadata.namespace),
  );
}

function resolutionOf(request: RequestDecision): Resolution {
  return request.ok ? { ok: true, network: request.network, type: request.type } : request;
}

const DELETING: Allocation = {
  allocated: false,
  reason: REASONS.elasticIPDeleting,
  message: 'the ElasticIP is being deleted; no address is taken (EIP-16)',
};

/** EIP-14/15, ARP-6, BGP-5: no direct NIC left — the ARPAdvertisement, then (once no node
 * announces the address over BGP) the claim, then the finalizer. */
async function finalizeElasticIP(
  ctx: ControllerContext,
  eip: ElasticIPObject,
  owner: AdvertisementOwner,
): Promise<ReconcileResult> {
  await deleteOwnedAdvertisements(ctx, ctx.caches.arpAdvertisements, owner);
  const waiting = untilWithdrawn(ctx, `ElasticIP ${objectKey(eip)}`, eip.status?.address);
  if (waiting) return waiting;
  await ctx.allocator.releaseAll(holderOf(eip));
  await releaseFinalizer(ctx, EIP, eip, FINALIZERS.elasticIP);
  return done();
}

/**
 * ALLOC-2: an ElasticIP that is gone but still holds claims (its finalizer was removed by hand,
 * or a crash between steps). EIP-15 still holds: nothing is released while a NIC names it.
 */
async function releaseForgotten(ctx: ControllerContext, namespace: string, name: string): Promise<ReconcileResult> {
  // A NIC's change brings the key back (elasticIPReconciler maps it to its ElasticIP).
  if (nicViewsOf(ctx.caches, namespace, name).length > 0) return done();
  const holder: Holder = { kind: 'ElasticIP', namespace, name };
  await deleteOwnedAdvertisements(ctx, ctx.caches.arpAdvertisements, { kind: 'ElasticIP', namespace, name });
  const released = await ctx.allocator.releaseAll(holder);
  if (released > 0)
    ctx.logger.info('released claims of a deleted ElasticIP (ALLOC-2)', {
      elasticIP: `${namespace}/${name}`,
      claims: released,
    });
  return done();
}

/**
 * The ElasticIP reconciler as the controller registers it. Its key is read by more than the
 * ElasticIP itself: its attachments, its NICs and the Pods waiting for it (EN-8) have their own
 * reconcilers, which watch the ElasticIPs too (./reconcile-dependents.ts, ../pods/reconcile-pod.ts).
 */
export function elasticIPReconciler(ctx: ControllerContext, workers: number): ReconcilerSpec {
  const c = ctx.caches;
  return {
    name: 'elasticip',
    reconcile: (key) => reconcileElasticIP(ctx, key),
    workers,
    objects: c.elasticIPs,
    // ALLOC-2: claims of ElasticIPs that are gone get a pass too (released unless a NIC still names them).
    initialKeys: () =>
      c.allocationClaims.list().map((claim) => {
        const h = claimRecordOf(claim)?.holder;
        return h?.kind === 'ElasticIP' ? refKey(h.namespace, h.name) : undefined;
      }),
    watches: [...elasticIPWatches(c, (key) => [key]), ...addressHolderWatches(c, 'ElasticIP', c.elasticIPs)],
  };
}
