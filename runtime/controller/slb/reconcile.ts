/**
 * Service -> ServiceLoadBalancer (SLB-1..10, ARP-6). Key: `<namespace>/<name>` of the Service
 * (the ServiceLoadBalancer has the same name). Level-triggered: every pass reads the caches,
 * asks the pure rules in ../slb what should be, and writes only the differences. Status is
 * written once per pass; Events come from the plan (one per phase transition).
 */
import { API_VERSION, FINALIZERS, type ServiceLoadBalancer } from '../../../api';
import { applyObject } from '../../kube/apply';
import { referenceTo } from '../../kube/events';
import { JuneauResources, Resources } from '../../kube/resources';
import { deleteIgnoringNotFound } from '../../kube/rest';
import { SERVICE_NAME_LABEL } from '../../kube/service-views';
import { objectKey, splitKey, type Stored } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import { juneauHolder, type ClaimRecord, type Holder } from '../allocator/allocator-index';
import { POOL_CHOICE_REASONS } from '../allocator/pool-choice';
import { mayKeepAddress } from '../allocator/retain';
import {
  addressHolderWatches,
  CACHE_INDEX,
  clusterRangesOf,
  namespaceViewOf,
  poolViews,
  type ControllerContext,
  type ServiceObject,
} from '../context';
import type { AdvertisementOwner } from '../arp/names';
import { deleteOwnedAdvertisements, ensureAdvertisement, findAdvertisement } from '../arp/owned';
import { watch, type ReconcilerSpec } from '../reconciler';
import { recordPlanEvents, releaseFinalizer, sameJson, writeStatusIfChanged } from '../shell';
import { planServiceLoadBalancer, type AllocationOutcome } from './plan';
import {
  decideAllocationRequest,
  isJuneauLoadBalancer,
  serviceLoadBalancerSpec,
  unsupportedServiceReason,
} from './request';
import { clusterOwnerOf, formatIPv4, networkView, parseIPv4 } from '../../../api/validation';
import { bgpInputs, bgpWatches } from '../bgp/inputs';
import { untilWithdrawn } from '../bgp/withdrawn';

type Slb = Stored<ServiceLoadBalancer>;
const SLB = JuneauResources.serviceLoadBalancers;

export async function reconcileServiceLoadBalancer(ctx: ControllerContext, key: string): Promise<ReconcileResult> {
  const service = ctx.caches.services.getByKey(key);
  const existing = ctx.caches.serviceLoadBalancers.getByKey(key);
  if (existing?.metadata.deletionTimestamp) return finalizeServiceLoadBalancer(ctx, existing, service);
  if (!service || service.metadata.deletionTimestamp || !isJuneauLoadBalancer(service)) {
    if (existing) await deleteIgnoringNotFound(ctx.rest, SLB, existing.metadata.namespace, existing.metadata.name);
    return done();
  }
  const slb = await ensureServiceLoadBalancer(ctx, service, existing);
  const allocation = await ensureAllocation(ctx, service, slb);
  const owner = ownerOf(key);
  const advertisement = findAdvertisement(ctx.caches.arpAdvertisements, owner);
  const plan = planServiceLoadBalancer({
    service,
    slices: endpointSlicesOf(ctx, key),
    generation: slb.metadata.generation ?? 0,
    previous: slb.status,
    network: networkOf(ctx, slb),
    allocation,
    currentAdvertisement: advertisement.current?.spec,
    unavailableNodes: ctx.agentLiveness.unavailableNodes(),
    bgp: bgpInputsOf(ctx, slb),
  });
  // SLB-3: kube-proxy serves a VIP from the Service's ingress, and the nodes answer (ARP) or
  // announce (BGP) it from the ARPAdvertisement and the status. A new VIP is published in the
  // ingress before anything answers for it; an old one leaves the ingress only after it is
  // withdrawn (the same rule as the claim guard: withdraw before release).
  const ingressFirst = ingressDuring(service, plan.ingressIPs);
  if (ingressFirst) await ensureServiceIngress(ctx, service, ingressFirst);
  await ensureAdvertisement(ctx, referenceTo(slb, SLB), owner, holderOf(slb), advertisement, plan.advertisement);
  await writeStatusIfChanged(ctx, SLB, slb, plan.status);
  await ensureServiceIngress(ctx, service, plan.ingressIPs, ingressFirst);
  recordPlanEvents(ctx, slb, SLB, plan.events);
  return done();
}

/** SLB-1: the ServiceLoadBalancer exists, owned by the Service (GC), with the finalizer (ARP-6) and the spec from the annotations. */
async function ensureServiceLoadBalancer(
  ctx: ControllerContext,
  service: ServiceObject,
  existing: Slb | undefined,
): Promise<Slb> {
  const { namespace, name, uid } = service.metadata;
  const spec = serviceLoadBalancerSpec(service);
  const owner = {
    apiVersion: 'v1',
    kind: 'Service',
    name: name ?? '',
    uid: uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
  const upToDate =
    existing &&
    sameJson(existing.spec, spec) &&
    existing.metadata.finalizers?.includes(FINALIZERS.serviceLoadBalancer) &&
    existing.metadata.ownerReferences?.some((o) => o.uid === owner.uid && o.controller);
  if (upToDate) return existing;
  const desired = {
    apiVersion: API_VERSION,
    kind: 'ServiceLoadBalancer',
    metadata: { namespace, name, ownerReferences: [owner], finalizers: [FINALIZERS.serviceLoadBalancer] },
    spec,
  };
  return applyObject<Slb>(ctx.rest, SLB, desired as Slb, ctx.fieldManager);
}

function holderOf(slb: Slb): Holder {
  return juneauHolder('ServiceLoadBalancer', slb);
}

/**
 * SLB-2 / EIP-3: keep or take the VIP by claim creation. ADDR-3: a VIP is released only by a
 * change of the Service (unsupported, no network named, another network or requested address)
 * or its address leaving the network's pools; a missing network or pool keeps it, and the
 * condition says so.
 */
async function ensureAllocation(ctx: ControllerContext, service: ServiceObject, slb: Slb): Promise<AllocationOutcome> {
  const pools = poolViews(ctx.caches);
  const networkName = slb.spec.externalNetwork;
  const networks = ctx.caches.externalNetworks.list().map((n) => networkView(n));
  const view = networks.find((n) => n.name === networkName);
  const cluster = clusterRangesOf(ctx.caches);
  const decision = decideAllocationRequest(
    service,
    view,
    pools,
    cluster,
    namespaceViewOf(ctx.caches, slb.metadata.namespace),
  );
  const keep = (c: ClaimRecord) =>
    mayKeepAddress(c, { networkName: networkName ?? '', network: view, networks, pools, index: ctx.index });
  if (!decision.ok) {
    const requested = slb.spec.requestedIP === undefined ? undefined : parseIPv4(slb.spec.requestedIP);
    // H5: a requested address of the cluster's own is not kept either.
    const passing =
      networkName !== undefined &&
      !unsupportedServiceReason(service, view?.type) &&
      decision.reason !== POOL_CHOICE_REASONS.requestedIPIsClusterAddress &&
      // SEC-9: nor one of a network the namespace may not use (any longer).
      decision.reason !== POOL_CHOICE_REASONS.namespaceNotAllowed;
    const kept = passing
      ? await ctx.allocator.retainAddress(
          holderOf(slb),
          (c) => keep(c) && (slb.spec.requestedIP === undefined || c.value === requested),
        )
      : undefined;
    if (!kept) await ctx.allocator.releaseAll(holderOf(slb));
    const keeping = kept
      ? `; VIP ${formatIPv4(kept.value)} stays reserved for this ServiceLoadBalancer meanwhile (ADDR-3)`
      : '';
    return {
      allocated: false,
      phase: decision.phase,
      reason: decision.reason,
      message: `${decision.message}${keeping}`,
    };
  }
  const { requested } = decision.request;
  const result = await ctx.allocator.ensureAddress(holderOf(slb), {
    pools: decision.request.pools,
    requested: requested && { value: requested.value, pool: requested.pool },
    keep,
    skip: (value) => clusterOwnerOf(cluster, value) !== undefined, // H5
  });
  if (result.ok) return { allocated: true, vip: formatIPv4(result.value), pool: result.pool.name };
  const keeping = result.kept ? `; VIP ${formatIPv4(result.kept.value)} stays reserved until then (ADDR-3)` : '';
  return { allocated: false, phase: 'Pending', reason: result.reason, message: `${result.message}${keeping} (SLB-2)` };
}

/** The Service's EndpointSlices, by index: a full walk of the cache per pass was O(N²) over N Services. */
function endpointSlicesOf(ctx: ControllerContext, key: string) {
  return ctx.caches.endpointSlices.byIndex(CACHE_INDEX.byService, key);
}

/** BGP-3, BGP-5: what a bgp VIP's plan reads, from the caches; undefined on other networks. */
function bgpInputsOf(ctx: ControllerContext, slb: Slb) {
  return networkOf(ctx, slb)?.type === 'bgp' ? bgpInputs(ctx, ctx.agentLiveness.liveNodes()) : undefined;
}

function networkOf(ctx: ControllerContext, slb: Slb): { name: string; type: 'arp' | 'bgp' } | undefined {
  const network = slb.spec.externalNetwork
    ? ctx.caches.externalNetworks.get(undefined, slb.spec.externalNetwork)
    : undefined;
  return network && { name: network.metadata.name, type: network.spec.type };
}

function ownerOf(key: string): AdvertisementOwner {
  const { namespace = '', name } = splitKey(key);
  return { kind: 'ServiceLoadBalancer', namespace, name };
}

/**
 * The ingress to publish before the announcement changes: the current addresses plus the planned
 * new ones, or undefined when no address is new (then the ingress is written last, if at all).
 */
export function ingressDuring(service: ServiceObject, planned: string[]): string[] | undefined {
  const current = ingressOf(service);
  const added = planned.filter((ip) => !current.includes(ip));
  return added.length ? [...current, ...added] : undefined;
}

function ingressOf(service: ServiceObject): string[] {
  return (service.status?.loadBalancer?.ingress ?? []).map((i) => i.ip).filter((ip): ip is string => !!ip);
}

/**
 * The VIP in the Service's status.loadBalancer.ingress, so `kubectl get svc` shows EXTERNAL-IP and
 * kube-proxy serves it. `written` is what this pass already wrote (the cache does not hold it yet).
 */
async function ensureServiceIngress(
  ctx: ControllerContext,
  service: ServiceObject,
  ips: string[],
  written?: string[],
): Promise<void> {
  const current = written ?? ingressOf(service);
  if (sameJson(current, ips)) return;
  const ingress = ips.map((ip) => ({ ip, ipMode: 'VIP' }));
  await ctx.rest.patch(
    Resources.services,
    service.metadata.namespace,
    service.metadata.name ?? '',
    'merge',
    { status: { loadBalancer: { ingress: ingress.length ? ingress : null } } },
    { fieldManager: ctx.fieldManager, subresource: 'status' },
  );
}

/** ARP-6: a deleted ServiceLoadBalancer takes its ARPAdvertisement and claim with it, then lets go. */
async function finalizeServiceLoadBalancer(
  ctx: ControllerContext,
  slb: Slb,
  service: ServiceObject | undefined,
): Promise<ReconcileResult> {
  if (!slb.metadata.finalizers?.includes(FINALIZERS.serviceLoadBalancer)) return done();
  await deleteOwnedAdvertisements(ctx, ctx.caches.arpAdvertisements, ownerOf(objectKey(slb)));
  // Out of the ingress (kube-proxy stops serving it for this Service) before the address can go
  // to its next holder: withdraw before release, as for the announcements.
  if (service && !service.metadata.deletionTimestamp && (service.status?.loadBalancer?.ingress?.length ?? 0) > 0)
    await ensureServiceIngress(ctx, service, []);
  // BGP-5: and no node announces it (the agents withdraw a VIP whose ServiceLoadBalancer is being deleted).
  const waiting = untilWithdrawn(ctx, `ServiceLoadBalancer ${objectKey(slb)}`, slb.status?.vip);
  if (waiting) return waiting;
  await ctx.allocator.releaseAll(holderOf(slb));
  await releaseFinalizer(ctx, SLB, slb, FINALIZERS.serviceLoadBalancer);
  return done();
}

/**
 * The ServiceLoadBalancer reconciler as the controller registers it: the keys are the Services',
 * so every change that may change a ServiceLoadBalancer's plan maps to its Service's key.
 */
export function serviceLoadBalancerReconciler(ctx: ControllerContext, workers: number): ReconcilerSpec {
  const c = ctx.caches;
  const all = () => c.serviceLoadBalancers.list().map(objectKey);
  const ofNetwork = (network: string) =>
    c.serviceLoadBalancers
      .list()
      .filter((s) => s.spec.externalNetwork === network)
      .map(objectKey);
  return {
    name: 'serviceloadbalancer',
    reconcile: (key) => reconcileServiceLoadBalancer(ctx, key),
    workers,
    objects: c.services,
    // A ServiceLoadBalancer without its Service is deleted by the Service's pass.
    initialKeys: all,
    watches: [
      watch(c.serviceLoadBalancers, (s) => [objectKey(s)]),
      // FO-3: a node's agent died or came back: every ServiceLoadBalancer chooses again (rare; a
      // pass that changes nothing writes nothing).
      { signal: (listener) => ctx.agentLiveness.onLivenessChange(listener), keys: all },
      watch(c.endpointSlices, (s) => {
        const service = s.metadata?.labels?.[SERVICE_NAME_LABEL];
        return [service ? `${s.metadata?.namespace}/${service}` : undefined];
      }),
      watch(c.externalNetworks, (n) => ofNetwork(objectKey(n))),
      ...addressHolderWatches(c, 'ServiceLoadBalancer', c.serviceLoadBalancers),
      ...bgpWatches(c),
    ],
  };
}
