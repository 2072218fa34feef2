/** What every reconciler shares: the REST client, the informer caches, the allocator, events, logs. */
import type { AddressPool, AllocationClaim, AllocationPool, ARPAdvertisement, ExternalNetwork, ServiceLoadBalancer } from '../../api';
import type { PoolView } from '../../api/validation';
import type { EventRecorder } from '../kube/events';
import type { Logger } from '../kube/log';
import type { RestClient } from '../kube/rest';
import type { KubeObject } from '../kube/types';
import type { Allocator } from './allocator/allocator';
import type { AllocatorIndex } from './allocator/allocator-index';
import type { Informer } from './informer';
import type { EndpointSliceView, ServiceView } from './slb/views';

export type ServiceObject = ServiceView & KubeObject & { status?: { loadBalancer?: { ingress?: Array<{ ip?: string }> } } };
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
}

export interface ControllerContext {
  readonly rest: RestClient;
  readonly caches: Caches;
  readonly index: AllocatorIndex;
  readonly allocator: Allocator;
  readonly recorder: EventRecorder | undefined;
  readonly logger: Logger;
  readonly fieldManager: 'juneau-controller';
}

/** Every AddressPool as validation reads it, by name. */
export function poolViews(caches: Caches): Map<string, PoolView> {
  return new Map(caches.addressPools.list().map((p) => [p.metadata.name ?? '', { name: p.metadata.name ?? '', advertiseMode: p.spec.advertiseMode, addresses: p.spec.addresses, avoidBuggyIPs: p.spec.avoidBuggyIPs }]));
}

/** Order-insensitive deep equality of JSON values, to skip writes that change nothing. */
export function sameJson(a: unknown, b: unknown): boolean {
  return stableStringify(a) === stableStringify(b);
}

function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([x], [y]) => (x < y ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
