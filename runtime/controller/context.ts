/** What every reconciler shares: the REST client, the informer caches, the allocator, events, logs. */
import type {
  AddressPool,
  AllocationClaim,
  AllocationPool,
  ARPAdvertisement,
  ExternalNetwork,
  ServiceLoadBalancer,
} from '../../api';
import type { PoolView } from '../../api/validation';
import { FieldManagers } from '../kube/apply';
import type { EventRecorder } from '../kube/events';
import { Informer } from '../kube/informer';
import { silentLogger, type Logger } from '../kube/log';
import type { RuntimeMetrics } from '../kube/metrics';
import { Resources, type ResourceType } from '../kube/resources';
import type { RestClient } from '../kube/rest';
import type { KubeObject } from '../kube/types';
import { Allocator } from './allocator/allocator';
import { AllocatorIndex } from './allocator/allocator-index';
import { feedAllocatorIndex } from './allocator/index-feed';
import { withdrawBeforeRelease } from './arp/claim-guard';
import { JuneauResources, OWNER_LABELS, restClaimStore } from './resources';
import type { EndpointSliceView, ServiceView } from './slb/views';
import type { Lease } from '../kube/leader-election';
import { INSTALL } from '../../api/constants';
import { AGENT_LEASE_SELECTOR, AgentLeaseTracker } from './nodes/agent-leases';

export type ServiceObject = ServiceView &
  KubeObject & { status?: { loadBalancer?: { ingress?: Array<{ ip?: string }> } } };
export type EndpointSliceObject = EndpointSliceView & KubeObject;
type K<T> = T & KubeObject;

export interface Caches {
  readonly services: Informer<ServiceObject>;
  readonly endpointSlices: Informer<EndpointSliceObject>;
  readonly serviceLoadBalancers: Informer<K<ServiceLoadBalancer>>;
  readonly arpAdvertisements: Informer<K<ARPAdvertisement>>;
  readonly externalNetworks: Informer<K<ExternalNetwork>>;
  readonly addressPools: Informer<K<AddressPool>>;
  readonly allocationPools: Informer<K<AllocationPool>>;
  readonly allocationClaims: Informer<K<AllocationClaim>>;
  /** FO-3: the agents' per-node Leases in the install namespace. */
  readonly agentLeases: Informer<Lease>;
}

export interface ControllerContext {
  readonly rest: RestClient;
  readonly caches: Caches;
  readonly index: AllocatorIndex;
  readonly allocator: Allocator;
  readonly recorder: EventRecorder | undefined;
  readonly logger: Logger;
  readonly fieldManager: 'juneau-controller';
  /** FO-3: nodes whose agent Lease expired (nodes/agent-leases.ts). */
  readonly agentLiveness: AgentLeaseTracker;
}

/** The shared caches, not started: whoever runs reconcilers on them starts those it reads. */
export function createCaches(rest: RestClient, logger: Logger): Caches {
  const informer = <T extends KubeObject>(type: ResourceType, labelSelector?: string) =>
    new Informer<T>(rest, { type, labelSelector, logger });
  return {
    services: informer(Resources.services),
    endpointSlices: informer(Resources.endpointSlices),
    serviceLoadBalancers: informer(JuneauResources.serviceLoadBalancers),
    // Only ours (an owner label): the duplicate detector watches every ARPAdvertisement itself.
    arpAdvertisements: informer(JuneauResources.arpAdvertisements, OWNER_LABELS.kind),
    externalNetworks: informer(JuneauResources.externalNetworks),
    addressPools: informer(JuneauResources.addressPools),
    allocationPools: informer(JuneauResources.allocationPools),
    allocationClaims: informer(JuneauResources.allocationClaims),
    agentLeases: new Informer<Lease>(rest, {
      type: Resources.leases,
      namespace: INSTALL.namespace,
      labelSelector: AGENT_LEASE_SELECTOR,
      logger,
    }),
  };
}

export interface ControllerContextOptions {
  readonly rest: RestClient;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /** Gets each AddressPool's usage as the index changes. */
  readonly metrics?: RuntimeMetrics;
  /** FO-3: added to an agent Lease's duration before its node counts as dead. @default 0 */
  readonly agentLeaseGraceMs?: number;
}

/**
 * The context as a controller process builds it: the caches, the allocation index fed from them
 * (ALLOC-1), and the allocator that withdraws a holder's ARPAdvertisement before releasing its
 * address (ARP-4). Caches are not started.
 */
export function createControllerContext(options: ControllerContextOptions): ControllerContext {
  const { rest } = options;
  const logger = options.logger ?? silentLogger;
  const caches = createCaches(rest, logger);
  const index = new AllocatorIndex();
  feedAllocatorIndex(caches, index, options.metrics);
  const allocator = new Allocator(index, restClaimStore(rest, FieldManagers.controller), withdrawBeforeRelease(rest));
  const agentLiveness = new AgentLeaseTracker(caches.agentLeases, undefined, options.agentLeaseGraceMs ?? 0);
  return {
    rest,
    caches,
    index,
    allocator,
    recorder: options.recorder,
    logger,
    fieldManager: FieldManagers.controller,
    agentLiveness,
  };
}

/** Every cache as a list, to start, stop or check them together. */
export const allCaches = (caches: Caches): Array<Informer<KubeObject>> =>
  Object.values(caches) as Array<Informer<KubeObject>>;

/** Every AddressPool as validation reads it, by name. */
export function poolViews(caches: Caches): Map<string, PoolView> {
  return new Map(
    caches.addressPools.list().map((p) => [
      p.metadata.name ?? '',
      {
        name: p.metadata.name ?? '',
        advertiseMode: p.spec.advertiseMode,
        addresses: p.spec.addresses,
        avoidBuggyIPs: p.spec.avoidBuggyIPs,
      },
    ]),
  );
}

/** Order-insensitive deep equality of JSON values, to skip writes that change nothing. */
export function sameJson(a: unknown, b: unknown): boolean {
  return stableStringify(a) === stableStringify(b);
}

function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
