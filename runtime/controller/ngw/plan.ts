/**
 * NGW-1..6: from what is observed about one NATGateway (its network, its allocation, the nodes,
 * the pods it selects) to its desired status, ARPAdvertisement, Events, and whether its finalizer
 * may finish. Pure: the reconciler (./reconcile.ts) only reads caches and writes the differences.
 */
import type { NATGateway, NATGatewayPhase } from '../../../api';
import { MAX_CONTESTED_PODS } from '../../../api';
import type { LabelSelectorView } from '../../../api/validation';
import { setCondition, type Condition, type ConditionInput } from '../../kube/conditions';
import { phaseEvent, type PlannedEvent } from '../../kube/events';
import type { AdvertisementSpec } from '../arp/action';
import { advertisementName } from '../arp/names';
import { parseIPv4 } from '../../../api/validation/ipv4';
import { bgpAnnouncement, type BGPAnnouncement, type BGPInputs } from '../bgp/announcers';
import { chooseGatewayNode, describeLeftOut, type GatewayChoice, type GatewayNodeView } from './gateway-node';

export type NATGatewayStatus = NonNullable<NATGateway['status']>;
import type { Allocation, Resolution } from '../allocator/address-request';
export type { Allocation, Resolution };

export const CONDITIONS = { allocated: 'Allocated', ready: 'Ready' } as const;

/** Reasons this module writes; allocation failures bring their own (NoFreeAddress, RequestedIPInUse, ...). */
export const REASONS = {
  addressAllocated: 'AddressAllocated',
  gatewayReady: 'GatewayReady',
  noGatewayNode: 'NoGatewayNode',
  /** NGW-3, BGP-2: a bgp network that no BGPAdvertisement lists. */
  noBGPAdvertisement: 'NoBGPAdvertisement',
  /** NGW-3, BGP-4, BGP-5: the gateway node does not report the address announced over an Established session (yet). */
  notAnnounced: 'NotAnnounced',
  notAllocated: 'NotAllocated',
  natGatewayDeleting: 'NATGatewayDeleting',
  /** NGW-6: the gateway moved to another node. */
  gatewayNodeChanged: 'GatewayNodeChanged',
} as const;

export const ngwAdvertisementName = (namespace: string, name: string): string =>
  advertisementName({ kind: 'NATGateway', namespace, name });

/** NGW-4: the pods podSelector selects, split into those that use this gateway and those an older one takes. */
export interface PodSelection {
  readonly selected: number;
  /** By pod name; every one, the status keeps the first MAX_CONTESTED_PODS. */
  readonly contested: ReadonlyArray<{ readonly pod: string; readonly natGateway: string }>;
}

export interface NATGatewayObservation {
  readonly namespace: string;
  readonly name: string;
  readonly generation: number;
  readonly deleting: boolean;
  readonly previous: NATGatewayStatus | undefined;
  readonly resolution: Resolution;
  readonly allocation: Allocation;
  readonly nodes: readonly GatewayNodeView[];
  readonly nodeSelector?: LabelSelectorView;
  /** The ARPAdvertisement that exists now, if any (its node is the current gateway for stickiness). */
  readonly currentAdvertisement?: { readonly address: string; readonly nodeName: string };
  readonly pods: PodSelection;
  /** BGP-4: on a bgp network, the advertisements, peers and the nodes' reports. */
  readonly bgp?: BGPInputs;
}

export interface NATGatewayPlan {
  /** Status to write; undefined when the finalizer finishes. */
  readonly status: NATGatewayStatus | undefined;
  /** The ARPAdvertisement that should exist; undefined means none. */
  readonly advertisement: AdvertisementSpec | undefined;
  /** Deleting: withdraw the ARPAdvertisement, then release the address, then the finalizer. */
  readonly finalize: boolean;
  readonly events: readonly PlannedEvent[];
}

export function planNATGateway(o: NATGatewayObservation, now: Date = new Date()): NATGatewayPlan {
  if (o.deleting) return { status: undefined, advertisement: undefined, finalize: true, events: [] };
  const choice = o.allocation.allocated ? gatewayOf(o, o.allocation.address) : undefined;
  const bgp = bgpOf(o, choice);
  const phase = phaseOf(o, choice, bgp);
  const conditions = [allocatedCondition(o), readyCondition(o, choice, bgp)].reduce<Condition[]>(
    (list, c) => setCondition(list, c, now),
    [...((o.previous?.conditions ?? []) as Condition[])],
  );
  const status: NATGatewayStatus = {
    phase,
    ...(o.allocation.allocated ? { address: o.allocation.address, addressPool: o.allocation.pool } : {}),
    nodeName: choice?.nodeName ?? '',
    selectedPods: o.pods.selected,
    contestedPods: o.pods.contested.slice(0, MAX_CONTESTED_PODS).map((c) => ({ ...c })),
    contestedPodCount: o.pods.contested.length,
    observedGeneration: o.generation,
    conditions,
  };
  const advertisement = desiredAdvertisement(o, choice);
  return { status, advertisement, finalize: false, events: eventsOf(o, phase, conditions, choice) };
}

/** NGW-3: the sticky node is the ARPAdvertisement's (arp), else the one the status named for the same address. */
function gatewayOf(o: NATGatewayObservation, address: string): GatewayChoice {
  const ad = o.currentAdvertisement;
  const current =
    ad?.address === address
      ? ad.nodeName
      : o.previous?.address === address && o.previous.nodeName
        ? o.previous.nodeName
        : undefined;
  return chooseGatewayNode({
    address,
    nodes: o.nodes,
    nodeSelector: o.nodeSelector,
    current,
    cannotAnnounce: cannotAnnounce(o),
  });
}

/** BGP-4: on a bgp network, why a node may not announce the gateway address (no BGPAdvertisement lets it). */
function cannotAnnounce(o: NATGatewayObservation): ((node: string) => string | undefined) | undefined {
  if (!o.resolution.ok || o.resolution.type !== 'bgp' || !o.bgp) return undefined;
  const { network } = o.resolution;
  const inputs = o.bgp;
  return (node) => bgpAnnouncement(network, undefined, [node], inputs).leftOut[0]?.[1];
}

/** BGP-4: on a bgp network with a gateway node, whether it announces the address (BGPNodeState) and why not. */
function bgpOf(o: NATGatewayObservation, choice: GatewayChoice | undefined): BGPAnnouncement | undefined {
  if (!o.resolution.ok || o.resolution.type !== 'bgp' || !o.allocation.allocated || !choice?.nodeName) return undefined;
  const inputs = o.bgp ?? { advertisements: [], peers: [], nodeStates: new Map(), nodeLabels: new Map() };
  return bgpAnnouncement(o.resolution.network, parseIPv4(o.allocation.address), [choice.nodeName], inputs);
}

/** NGW-3: Error for an unresolvable network; Pending without an address, or on bgp until the gateway
 * node announces it (BGP-4, BGP-5); Degraded without a node. */
export function phaseOf(
  o: Pick<NATGatewayObservation, 'resolution' | 'allocation'>,
  choice: GatewayChoice | undefined,
  bgp?: BGPAnnouncement,
): NATGatewayPhase {
  if (!o.resolution.ok) return 'Error';
  if (!o.allocation.allocated) return 'Pending';
  if (!choice?.nodeName) return 'Degraded';
  if (o.resolution.type === 'bgp') return bgp && bgp.announcing.length > 0 ? 'Ready' : 'Pending';
  return 'Ready';
}

function allocatedCondition(o: NATGatewayObservation): ConditionInput {
  const base = { type: CONDITIONS.allocated, observedGeneration: o.generation };
  if (!o.resolution.ok) return { ...base, status: 'False', reason: o.resolution.reason, message: o.resolution.message };
  if (!o.allocation.allocated)
    return { ...base, status: 'False', reason: o.allocation.reason, message: o.allocation.message };
  return {
    ...base,
    status: 'True',
    reason: REASONS.addressAllocated,
    message: `address ${o.allocation.address} from AddressPool ${o.allocation.pool} of ExternalNetwork ${o.resolution.network} (NGW-2)`,
  };
}

function readyCondition(
  o: NATGatewayObservation,
  choice: GatewayChoice | undefined,
  bgp: BGPAnnouncement | undefined,
): ConditionInput {
  const base = { type: CONDITIONS.ready, observedGeneration: o.generation };
  const no = (reason: string, message: string): ConditionInput => ({ ...base, status: 'False', reason, message });
  if (!o.resolution.ok) return no(REASONS.notAllocated, `no address: ${o.resolution.message}`);
  if (!o.allocation.allocated) return no(REASONS.notAllocated, `no address yet: ${o.allocation.message}`);
  const address = o.allocation.address;
  if (!choice?.nodeName) {
    const why =
      choice && choice.leftOut.length > 0 ? `: ${describeLeftOut(choice.leftOut)}` : ': the cluster has no nodes';
    return no(
      REASONS.noGatewayNode,
      `no node can be the gateway for ${address}, so the selected pods' connections to the outside do not leave from it${why} (NGW-3, NGW-6)`,
    );
  }
  if (o.resolution.type === 'bgp') {
    const network = o.resolution.network;
    if (!bgp || bgp.noAdvertisement)
      return no(
        REASONS.noBGPAdvertisement,
        `no BGPAdvertisement lists ExternalNetwork ${network}: gateway node ${choice.nodeName} does not announce ${address}, so replies to the selected pods' connections cannot reach it; create a BGPAdvertisement for it (BGP-2, NGW-3)`,
      );
    if (bgp.announcing.length === 0)
      return no(
        REASONS.notAnnounced,
        `gateway node ${choice.nodeName} does not announce ${address} over BGP yet: ${describeLeftOut(bgp.leftOut)} (BGP-4, BGP-5)`,
      );
    return {
      ...base,
      status: 'True',
      reason: REASONS.gatewayReady,
      message: `node ${choice.nodeName} is the gateway for ${address} and announces it over BGP (NGW-3, BGP-4)`,
    };
  }
  return {
    ...base,
    status: 'True',
    reason: REASONS.gatewayReady,
    message: `node ${choice.nodeName} is the gateway for ${address} and answers ARP for it (NGW-3)`,
  };
}

/** NGW-3: arp networks get one ARPAdvertisement `ngw-<namespace>-<name>` on the gateway node (NAME-1). */
function desiredAdvertisement(
  o: NATGatewayObservation,
  choice: GatewayChoice | undefined,
): AdvertisementSpec | undefined {
  if (!o.resolution.ok || o.resolution.type !== 'arp' || !o.allocation.allocated || !choice?.nodeName) return undefined;
  return {
    name: ngwAdvertisementName(o.namespace, o.name),
    externalNetwork: o.resolution.network,
    address: o.allocation.address,
    nodeName: choice.nodeName,
  };
}

/** One Event per phase transition, plus one when the gateway moves to another node (NGW-3, NGW-6). */
function eventsOf(
  o: NATGatewayObservation,
  phase: NATGatewayPhase,
  conditions: readonly Condition[],
  choice: GatewayChoice | undefined,
): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  if (o.previous?.phase !== phase) {
    const explaining = phase === 'Error' || (phase === 'Pending' && !o.allocation.allocated) ? 'allocated' : 'ready';
    const cause = conditions.find((c) => c.type === CONDITIONS[explaining]);
    events.push(phaseEvent(phase, cause, phase !== 'Ready'));
  }
  const before = o.currentAdvertisement?.nodeName || o.previous?.nodeName || undefined;
  const after = choice?.nodeName;
  if (before && after && before !== after && o.allocation.allocated) {
    const why = choice.leftOut.find(([n]) => n === before)?.[1] ?? 'it can no longer serve';
    events.push({
      type: 'Normal',
      reason: REASONS.gatewayNodeChanged,
      message: `the gateway for ${o.allocation.address} moved from node ${before} (${why}) to node ${after}; connections that went through ${before} are lost, new ones leave through ${after} (NGW-6)`,
    });
  }
  return events;
}
