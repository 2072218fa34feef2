/**
 * NATGateway (NGW-1..6, NAME-1). Key: `<namespace>/<name>`. Level-triggered: every pass reads the
 * caches, asks ./plan what should be, and writes only the differences — the finalizer before any
 * claim, the address by claim creation (the shared allocator: one address never goes to a
 * NATGateway and an ElasticIP, a VIP or another NATGateway at once, NGW-2), the ARPAdvertisement
 * through the claim guard, then the status once.
 *
 * Contract: NotFound in the cache → the object is gone (its claims and ARPAdvertisement, if a crash
 * left any, are withdrawn and released); API errors are thrown and retried with backoff.
 */
import { FINALIZERS, type NATGateway } from '../../../api';
import { networkView } from '../../../api/validation';
import { addFinalizer, hasFinalizer } from '../../kube/apply';
import { referenceTo } from '../../kube/events';
import { JuneauResources } from '../../kube/resources';
import { objectKey, splitKey, type Stored } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import { juneauHolder, type Holder } from '../allocator/allocator-index';
import { claimRecordOf } from '../allocator/claims';
import type { AdvertisementOwner } from '../arp/names';
import { BGP_BATCH_MS, bgpInputs } from '../bgp/inputs';
import { untilWithdrawn } from '../bgp/withdrawn';
import { deleteOwnedAdvertisements, ensureAdvertisement, findAdvertisement } from '../arp/owned';
import {
  addressHolderWatches,
  clusterRangesOf,
  namespaceViewOf,
  poolViews,
  refKey,
  type ControllerContext,
} from '../context';
import { decideAddressRequest, type RequestDecision } from '../allocator/address-request';
import { ensureHeldAddress } from '../allocator/held-address';
import { watch, type ReconcilerSpec } from '../reconciler';
import { recordPlanEvents, releaseFinalizer, writeStatusIfChanged } from '../shell';
import { planNATGateway, type Allocation, type NATGatewayStatus } from './plan';
import { gatewayNodeViews, podSelectionOf } from './views';

type NATGatewayObject = Stored<NATGateway>;
const NGW = JuneauResources.natGateways;

/**
 * The status each NATGateway was last given by this process, by key with the object's uid. The
 * controller is its only writer, so this is never older than the cache, and it is newer while
 * the cache has not seen the write yet: a pass woken by the ARPAdvertisement it just wrote would
 * otherwise see the phase before the last one and record that transition's Event twice.
 */
export class WrittenStatuses {
  private readonly byKey = new Map<string, { readonly uid: string | undefined; readonly status: NATGatewayStatus }>();

  previous(key: string, ngw: NATGatewayObject): NATGatewayStatus | undefined {
    const mine = this.byKey.get(key);
    return mine && mine.uid === ngw.metadata.uid ? mine.status : ngw.status;
  }

  remember(key: string, ngw: NATGatewayObject, status: NATGatewayStatus | undefined): void {
    if (status) this.byKey.set(key, { uid: ngw.metadata.uid, status });
  }

  forget(key: string): void {
    this.byKey.delete(key);
  }
}

export async function reconcileNATGateway(
  ctx: ControllerContext,
  key: string,
  written = new WrittenStatuses(),
): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  let ngw = ctx.caches.natGateways.get(namespace, name);
  const owner: AdvertisementOwner = { kind: 'NATGateway', namespace, name };
  if (!ngw) {
    written.forget(key);
    return releaseForgotten(ctx, owner);
  }
  const deleting = !!ngw.metadata.deletionTimestamp;
  if (deleting && !hasFinalizer(ngw, FINALIZERS.natGateway)) return done();
  if (!deleting) ngw = await addFinalizer(ctx.rest, NGW, ngw, FINALIZERS.natGateway, ctx.fieldManager);
  const request = requestOf(ctx, ngw);
  const allocation = deleting
    ? notAllocated
    : await ensureHeldAddress(
        ctx.allocator,
        () => clusterRangesOf(ctx.caches),
        holderOf(ngw),
        ngw.status?.address,
        request,
        {
          rule: 'NGW-2',
          nameRequestedField: true,
        },
      );
  const advertisement = findAdvertisement(ctx.caches.arpAdvertisements, owner);
  const plan = planNATGateway({
    namespace,
    name,
    generation: ngw.metadata.generation ?? 0,
    deleting,
    previous: written.previous(key, ngw),
    resolution: request.ok ? { ok: true, network: request.network, type: request.type } : request,
    allocation,
    nodes: gatewayNodeViews(ctx),
    nodeSelector: ngw.spec.nodeSelector,
    currentAdvertisement: advertisement.current?.spec,
    pods: podSelectionOf(ctx, ngw),
    bgp: request.ok && request.type === 'bgp' ? bgpInputs(ctx, []) : undefined,
  });
  if (plan.finalize) {
    written.forget(key);
    return finalizeNATGateway(ctx, ngw, owner);
  }
  await ensureAdvertisement(ctx, referenceTo(ngw, NGW), owner, holderOf(ngw), advertisement, plan.advertisement);
  await writeStatusIfChanged(ctx, NGW, ngw, plan.status);
  written.remember(key, ngw, plan.status);
  recordPlanEvents(ctx, ngw, NGW, plan.events);
  return done();
}

const notAllocated: Allocation = { allocated: false, reason: 'NATGatewayDeleting', message: 'being deleted' };

export const holderOf = (ngw: NATGatewayObject): Holder => juneauHolder('NATGateway', ngw);

function requestOf(ctx: ControllerContext, ngw: NATGatewayObject): RequestDecision {
  const network = ctx.caches.externalNetworks.get(undefined, ngw.spec.externalNetwork);
  return decideAddressRequest(
    ngw.spec,
    network && networkView(network),
    poolViews(ctx.caches),
    clusterRangesOf(ctx.caches),
    namespaceViewOf(ctx.caches, ngw.metadata.namespace),
    'NATGateway',
  );
}

/** Withdraw before release (arp/claim-guard.ts, BGP-5): the ARPAdvertisement, then (once no node
 * announces the address over BGP) the claim, then the finalizer. */
async function finalizeNATGateway(
  ctx: ControllerContext,
  ngw: NATGatewayObject,
  owner: AdvertisementOwner,
): Promise<ReconcileResult> {
  await deleteOwnedAdvertisements(ctx, ctx.caches.arpAdvertisements, owner);
  const waiting = untilWithdrawn(ctx, `NATGateway ${objectKey(ngw)}`, ngw.status?.address);
  if (waiting) return waiting;
  await ctx.allocator.releaseAll(holderOf(ngw));
  await releaseFinalizer(ctx, NGW, ngw, FINALIZERS.natGateway);
  return done();
}

/** ALLOC-2: a NATGateway that is gone but still holds claims (finalizer removed by hand, a crash between steps). */
async function releaseForgotten(ctx: ControllerContext, owner: AdvertisementOwner): Promise<ReconcileResult> {
  await deleteOwnedAdvertisements(ctx, ctx.caches.arpAdvertisements, owner);
  const released = await ctx.allocator.releaseAll({ kind: 'NATGateway', namespace: owner.namespace, name: owner.name });
  if (released > 0)
    ctx.logger.info('released claims of a deleted NATGateway (ALLOC-2)', {
      natGateway: `${owner.namespace}/${owner.name}`,
      claims: released,
    });
  return done();
}

/** Pod and Node changes come in bursts (a rollout, a node's status): one pass per gateway per burst. */
const BURST_MS = 500;

/**
 * The NATGateway reconciler as the controller registers it. A gateway's pass reads the other
 * gateways of its namespace (NGW-4), its namespace's pods, every node and every agent Lease (NGW-3).
 */
export function natGatewayReconciler(ctx: ControllerContext, workers: number): ReconcilerSpec {
  const c = ctx.caches;
  const all = () => c.natGateways.list().map(objectKey);
  const inNamespace = (namespace: string | undefined) => c.natGateways.list(namespace).map(objectKey);
  // A Lease first seen (an agent starting) makes its node a candidate; renewals change nothing
  // here (expiry and revival come from agentLiveness), so only a new or deleted Lease is a change.
  const leasesSeen = new Set<string>();
  const written = new WrittenStatuses();
  return {
    name: 'natgateway',
    reconcile: (key) => reconcileNATGateway(ctx, key, written),
    workers,
    objects: c.natGateways,
    initialKeys: () =>
      c.allocationClaims.list().map((claim) => {
        const h = claimRecordOf(claim)?.holder;
        return h?.kind === 'NATGateway' ? refKey(h.namespace, h.name) : undefined;
      }),
    watches: [
      // NGW-4: a gateway's age and podSelector decide which pods its neighbours keep.
      watch(c.natGateways, (g) => inNamespace(g.metadata.namespace)),
      watch(c.pods, (p) => inNamespace(p.metadata.namespace), BURST_MS),
      watch(c.nodes, all, BURST_MS),
      watch(c.agentLeases, (lease, deleted) => {
        const name = lease.metadata?.name ?? '';
        if (deleted) return leasesSeen.delete(name) ? all() : [];
        if (leasesSeen.has(name)) return [];
        leasesSeen.add(name);
        return all();
      }),
      // FO-3, NGW-6: a node's agent died or came back.
      { signal: (listener) => ctx.agentLiveness.onLivenessChange(listener), keys: all },
      watch(c.externalNetworks, (n) =>
        c.natGateways
          .list()
          .filter((g) => g.spec.externalNetwork === objectKey(n))
          .map(objectKey),
      ),
      ...addressHolderWatches(c, 'NATGateway', c.natGateways),
      // BGP-4: what lets a node announce, and whether it does (NATGateways are few: all of them).
      watch(c.bgpAdvertisements, all),
      watch(c.bgpPeers, all),
      watch(c.bgpNodeStates, all, BGP_BATCH_MS),
    ],
  };
}
