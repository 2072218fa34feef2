/**
 * SLB-3..8: from what is observed (the Service, its EndpointSlices, the network type, the
 * allocation result, the current status and ARPAdvertisement) to the desired ServiceLoadBalancer
 * status, ARPAdvertisement, Service ingress and Events. Pure: the reconciler only writes.
 */
import type { ServiceLoadBalancer, ServiceLoadBalancerPhase } from '../../../api';
import { setCondition, type Condition, type ConditionInput } from '../../kube/conditions';
import { phaseEvent, type PlannedEvent } from '../../kube/events';
import { ADVERTISEMENT_REASONS, type AdvertisementSpec } from '../arp/action';
import { advertisementName } from '../arp/names';
import { normalizePorts, summarizeBackends, type BackendSummary } from './backends';
import type { NoAllocation } from './request';
import { rendezvousNode } from '../arp/rendezvous';
import type { EndpointSliceView, ServiceView } from '../../kube/service-views';
import { parseIPv4 } from '../../../api/validation';
import { bgpAnnouncement, type BGPAnnouncement, type BGPInputs } from '../bgp/announcers';

export type SlbStatus = NonNullable<ServiceLoadBalancer['status']>;

export const CONDITIONS = { allocated: 'Allocated', available: 'Available' } as const;
/** Reasons this module writes itself; allocation failures bring their own (see request.ts, allocator.ts), and
 * a taken ARPAdvertisement name (NAME-1) is ../arp/owned.ts's ADVERTISEMENT_NAME_TAKEN. */
export const REASONS = {
  addressAllocated: 'AddressAllocated',
  advertised: 'Advertised',
  noReadyBackends: 'NoReadyBackends',
  notAllocated: 'NotAllocated',
  /** FO-3: every node with ready backends has an expired agent Lease. */
  agentLeaseExpired: 'AgentLeaseExpired',
  /** BGP-2: no BGPAdvertisement lists the VIP's bgp network. */
  noBGPAdvertisement: 'NoBGPAdvertisement',
  /** BGP-3: no node that could serve the VIP is allowed by a BGPAdvertisement (and a BGPPeer). */
  notAllowedByBGPAdvertisement: 'NotAllowedByBGPAdvertisement',
  /** BGP-5: nodes should announce the VIP, but none reports it over an Established session. */
  notAnnounced: 'NotAnnounced',
} as const;

/** The allocation as the reconciler found or made it this pass. */
export type AllocationOutcome =
  | { readonly allocated: true; readonly vip: string; readonly pool: string }
  | ({ readonly allocated: false } & NoAllocation);

export interface SlbObservation {
  readonly service: ServiceView;
  readonly slices: readonly EndpointSliceView[];
  /** `metadata.generation` of the ServiceLoadBalancer. */
  readonly generation: number;
  readonly previous: SlbStatus | undefined;
  /** The network's type when it exists; `bgp` has no ARPAdvertisement (SLB-5). */
  readonly network: { readonly name: string; readonly type: 'arp' | 'bgp' } | undefined;
  readonly allocation: AllocationOutcome;
  /** The ARPAdvertisement that exists now, if any. */
  readonly currentAdvertisement: AdvertisementSpec | undefined;
  /** FO-3: nodes that cannot answer (agent Lease expired), with why. @default none */
  readonly unavailableNodes?: ReadonlyMap<string, string>;
  /**
   * BGP-3, BGP-5, bgp networks: the advertisements, peers and nodes' reports, and the nodes with a
   * live agent Lease (FO-3; the candidates under externalTrafficPolicy Cluster). @default none known
   */
  readonly bgp?: BGPInputs & { readonly liveNodes: readonly string[] };
}

export interface SlbPlan {
  readonly status: SlbStatus;
  readonly advertisement: AdvertisementSpec | undefined;
  /** Service `status.loadBalancer.ingress` IPs. */
  readonly ingressIPs: string[];
  readonly events: PlannedEvent[];
}

export function planServiceLoadBalancer(o: SlbObservation, now: Date = new Date()): SlbPlan {
  const { namespace = '', name = '' } = o.service.metadata;
  const local = liveBackends(summarizeBackends(o.slices), o.unavailableNodes);
  const bgp = o.network?.type === 'bgp' ? bgpOf(o, local) : undefined;
  // BGP-3: on a bgp network, advertisingNodes are the candidates a BGPAdvertisement allows.
  const backends = bgp ? { ...local, advertisingNodes: bgp.allowed, leftOut: [...local.leftOut] } : local;
  const { ports } = normalizePorts(o.service.spec?.ports ?? [], o.slices);
  const vip = o.allocation.allocated ? o.allocation.vip : undefined;
  const advertisement = desiredAdvertisement(
    o,
    backends.advertisingNodes,
    advertisementName({ kind: 'ServiceLoadBalancer', namespace, name }),
  );
  // BGP-5: Ready on a bgp network only once a node reports the route over an Established session.
  const phase = phaseOf(o.allocation, bgp ? bgp.announcing.length : backends.advertisingNodes.length, o.previous);
  const conditions = [
    allocatedCondition(o),
    (bgp && bgpAvailableCondition(o, bgp, local)) ??
      availableCondition(o, backends.advertisingNodes, advertisement, backends.leftOut),
  ].reduce<Condition[]>((list, c) => setCondition(list, c, now), [...((o.previous?.conditions ?? []) as Condition[])]);
  const status: SlbStatus = {
    phase,
    ...(vip ? { vip, addressPool: o.allocation.allocated ? o.allocation.pool : undefined } : {}),
    ports,
    advertisingNodes: backends.advertisingNodes,
    arpAnnouncingNode: advertisement?.nodeName ?? '',
    backendSummary: { totalReady: backends.totalReady, localReadyNodes: backends.advertisingNodes.length },
    observedGeneration: o.generation,
    conditions,
  };
  return {
    status: dropUndefined(status),
    advertisement,
    ingressIPs: vip ? [vip] : [],
    events: eventsOf(o, phase, status, advertisement),
  };
}

/** SLB-4 with FO-3: nodes whose agent cannot answer leave advertisingNodes; `leftOut` says why. */
function liveBackends(
  backends: BackendSummary,
  unavailable: ReadonlyMap<string, string> | undefined,
): BackendSummary & { leftOut: Array<[string, string]> } {
  const leftOut = backends.advertisingNodes
    .filter((n) => unavailable?.has(n))
    .map((n): [string, string] => [n, unavailable!.get(n)!]);
  return { ...backends, advertisingNodes: backends.advertisingNodes.filter((n) => !unavailable?.has(n)), leftOut };
}

const describeLeftOut = (leftOut: ReadonlyArray<[string, string]>) =>
  leftOut.map(([n, why]) => `node ${n}: ${why}`).join('; ');

/**
 * BGP-3: the candidates of a bgp VIP (SLB-4's nodes with a ready Local endpoint, or under
 * externalTrafficPolicy Cluster every node with a live agent), narrowed by the BGPAdvertisements,
 * and which of them announce it (BGP-5).
 */
function bgpOf(o: SlbObservation, local: BackendSummary): BGPAnnouncement {
  const inputs = o.bgp ?? {
    advertisements: [],
    peers: [],
    nodeStates: new Map(),
    nodeLabels: new Map(),
    liveNodes: [],
  };
  const cluster = (o.service.spec?.externalTrafficPolicy ?? 'Cluster') === 'Cluster';
  const candidates = cluster ? inputs.liveNodes.filter((n) => !o.unavailableNodes?.has(n)) : local.advertisingNodes;
  const vip = o.allocation.allocated ? parseIPv4(o.allocation.vip) : undefined;
  return bgpAnnouncement(o.network!.name, vip, candidates, inputs);
}

/**
 * BGP-2, BGP-3, BGP-5: the Available condition of a bgp VIP when BGP is why it is not announced
 * (or how it is); undefined when the candidates themselves are missing (SLB-8's reasons apply).
 */
function bgpAvailableCondition(
  o: SlbObservation,
  bgp: BGPAnnouncement,
  local: BackendSummary & { leftOut: Array<[string, string]> },
): ConditionInput | undefined {
  const base = { type: CONDITIONS.available, observedGeneration: o.generation };
  const network = o.network!.name;
  const vip = o.allocation.allocated ? `VIP ${o.allocation.vip}` : 'the VIP';
  if (bgp.noAdvertisement)
    return {
      ...base,
      status: 'False',
      reason: REASONS.noBGPAdvertisement,
      message: `no BGPAdvertisement lists ExternalNetwork ${network}: ${vip} is allocated but no node announces it; create a BGPAdvertisement for it (BGP-2)`,
    };
  const cluster = (o.service.spec?.externalTrafficPolicy ?? 'Cluster') === 'Cluster';
  const candidates = bgp.allowed.length + bgp.leftOut.filter(([n]) => !bgp.allowed.includes(n)).length;
  if (candidates === 0) {
    if (!cluster) return undefined;
    return {
      ...base,
      status: 'False',
      reason: REASONS.noReadyBackends,
      message: `no node has a live Juneau agent (agent Lease, FO-3), so no node can announce ${vip} (BGP-3)`,
    };
  }
  if (!o.allocation.allocated) return undefined;
  const left = describeLeftOut(bgp.leftOut);
  if (bgp.allowed.length === 0)
    return {
      ...base,
      status: 'False',
      reason: REASONS.notAllowedByBGPAdvertisement,
      message: `no node that can serve ${vip} may announce it: ${left} (BGP-3)`,
    };
  if (bgp.announcing.length === 0)
    return {
      ...base,
      status: 'False',
      reason: REASONS.notAnnounced,
      message: `${bgp.allowed.length} node(s) should announce ${vip} but none reports it announced over an Established session: ${left} (BGP-5)`,
    };
  const expired = local.leftOut.length > 0 ? `; left out: ${describeLeftOut(local.leftOut)}` : '';
  return {
    ...base,
    status: 'True',
    reason: REASONS.advertised,
    message: `${vip} announced over BGP by ${bgp.announcing.length} of ${bgp.allowed.length} node(s): ${bgp.announcing.join(', ')}${bgp.leftOut.length ? `; not announcing: ${left}` : ''}${expired} (BGP-3, BGP-5)`,
  };
}

/**
 * SLB-3. Allocated vs Degraded when no node can advertise: `Allocated` means no Local backend
 * could advertise *yet* (the VIP was never advertised); `Degraded` means it was (the previous
 * phase was Ready or Degraded, for the same VIP) and no node can now (SLB-8).
 */
export function phaseOf(
  allocation: AllocationOutcome,
  advertisingNodes: number,
  previous: SlbStatus | undefined,
): ServiceLoadBalancerPhase {
  if (!allocation.allocated) return allocation.phase;
  if (advertisingNodes > 0) return 'Ready';
  const wasAdvertised =
    (previous?.phase === 'Ready' || previous?.phase === 'Degraded') && previous.vip === allocation.vip;
  return wasAdvertised ? 'Degraded' : 'Allocated';
}

/** SLB-5..8: arp networks get one ARPAdvertisement on the sticky rendezvous node; bgp none. */
function desiredAdvertisement(
  o: SlbObservation,
  advertisingNodes: readonly string[],
  name: string,
): AdvertisementSpec | undefined {
  if (!o.allocation.allocated || o.network?.type !== 'arp') return undefined;
  const current =
    o.currentAdvertisement?.address === o.allocation.vip
      ? o.currentAdvertisement.nodeName
      : o.previous?.vip === o.allocation.vip
        ? o.previous.arpAnnouncingNode || undefined
        : undefined;
  const nodeName = rendezvousNode({ vip: o.allocation.vip, candidates: advertisingNodes, current });
  return nodeName === undefined
    ? undefined
    : { name, externalNetwork: o.network.name, address: o.allocation.vip, nodeName };
}

function allocatedCondition(o: SlbObservation): ConditionInput {
  const a = o.allocation;
  return a.allocated
    ? {
        type: CONDITIONS.allocated,
        status: 'True',
        reason: REASONS.addressAllocated,
        message: `VIP ${a.vip} from AddressPool ${a.pool}`,
        observedGeneration: o.generation,
      }
    : {
        type: CONDITIONS.allocated,
        status: 'False',
        reason: a.reason,
        message: a.message,
        observedGeneration: o.generation,
      };
}

function availableCondition(
  o: SlbObservation,
  nodes: readonly string[],
  ad: AdvertisementSpec | undefined,
  leftOut: ReadonlyArray<[string, string]>,
): ConditionInput {
  const base = { type: CONDITIONS.available, observedGeneration: o.generation };
  const svc = `${o.service.metadata.namespace}/${o.service.metadata.name}`;
  if (nodes.length === 0 && leftOut.length > 0) {
    return {
      ...base,
      status: 'False',
      reason: REASONS.agentLeaseExpired,
      message: `every node with a ready endpoint of Service ${svc} was left out, so nobody answers for the VIP: ${describeLeftOut(leftOut)}`,
    };
  }
  if (nodes.length === 0) {
    return {
      ...base,
      status: 'False',
      reason: REASONS.noReadyBackends,
      message: `no node has a Ready, Serving, non-terminating endpoint of Service ${svc}; nobody answers for the VIP (SLB-8)`,
    };
  }
  if (!o.allocation.allocated)
    return {
      ...base,
      status: 'Unknown',
      reason: REASONS.notAllocated,
      message: `${nodes.length} node(s) could advertise, but there is no VIP: ${o.allocation.message}`,
    };
  const how = ad ? `answered over ARP by node ${ad.nodeName}` : `advertised over BGP by ${nodes.length} node(s)`;
  const left = leftOut.length > 0 ? `; left out: ${describeLeftOut(leftOut)}` : '';
  return { ...base, status: 'True', reason: REASONS.advertised, message: `VIP ${o.allocation.vip} ${how}${left}` };
}

/** One Event per phase transition (SLB-3), plus one when the answering node moves (SLB-7). */
function eventsOf(
  o: SlbObservation,
  phase: ServiceLoadBalancerPhase,
  status: SlbStatus,
  ad: AdvertisementSpec | undefined,
): PlannedEvent[] {
  const why = (node: string) =>
    o.unavailableNodes?.has(node)
      ? `whose agent cannot answer: ${o.unavailableNodes.get(node)}`
      : 'which has no ready Local endpoint';
  const events: PlannedEvent[] = [];
  if (o.previous?.phase !== phase) {
    const cause =
      phase === 'Ready' || phase === 'Degraded'
        ? status.conditions?.find((c) => c.type === CONDITIONS.available)
        : status.conditions?.find((c) => c.type === CONDITIONS.allocated);
    events.push(phaseEvent(phase, cause, phase === 'Pending' || phase === 'Degraded' || phase === 'Error'));
  }
  const before = o.currentAdvertisement?.nodeName;
  if (ad && before && before !== ad.nodeName) {
    events.push({
      type: 'Normal',
      reason: ADVERTISEMENT_REASONS.announcingNodeChanged,
      message: `VIP ${ad.address} now answered by node ${ad.nodeName} (was ${before}, ${why(before)}) (SLB-7)`,
    });
  }
  return events;
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
