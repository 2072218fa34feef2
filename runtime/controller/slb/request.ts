/**
 * SLB-1, SLB-2, SLB-10: which Services get a ServiceLoadBalancer, and what allocation a
 * ServiceLoadBalancer asks for — or why it cannot ask for one. Pure.
 */
import { ANNOTATIONS, LOAD_BALANCER_CLASS } from '../../../api';
import type { ClusterRange, NetworkView, PoolView } from '../../../api/validation';
import { choosePools, namespaceRefusal, POOL_CHOICE_REASONS, type NamespaceView } from '../allocator/pool-choice';
import type { ServiceView } from '../../kube/service-views';

/** SLB-1: a Service Juneau serves. */
export function isJuneauLoadBalancer(service: ServiceView): boolean {
  return service.spec?.type === 'LoadBalancer' && service.spec.loadBalancerClass === LOAD_BALANCER_CLASS;
}

/** The ServiceLoadBalancer `spec` derived from the Service's annotations (SLB-1, SLB-2). */
export function serviceLoadBalancerSpec(service: ServiceView): { externalNetwork?: string; requestedIP?: string } {
  const a = service.metadata.annotations ?? {};
  const externalNetwork = a[ANNOTATIONS.loadBalancerExternalNetwork]?.trim();
  const requestedIP = a[ANNOTATIONS.loadBalancerRequestedIP]?.trim();
  return { ...(externalNetwork ? { externalNetwork } : {}), ...(requestedIP ? { requestedIP } : {}) };
}

/** Field paths used in messages, so a person knows what to edit. */
export const SERVICE_FIELDS = {
  externalNetwork: `metadata.annotations["${ANNOTATIONS.loadBalancerExternalNetwork}"]`,
  requestedIP: `metadata.annotations["${ANNOTATIONS.loadBalancerRequestedIP}"]`,
} as const;

/** Why a ServiceLoadBalancer cannot ask for a VIP: the reason of its `Allocated` condition and Event. */
export const REASONS = {
  /** SLB-10: what Juneau does not serve. */
  externalTrafficPolicyNotLocal: 'ExternalTrafficPolicyNotLocal',
  unsupportedProtocol: 'UnsupportedProtocol',
  ipv4Required: 'IPv4Required',
  /** SLB-2: where the VIP comes from. */
  externalNetworkNotSpecified: 'ExternalNetworkNotSpecified',
  externalNetworkNotFound: 'ExternalNetworkNotFound',
  ...POOL_CHOICE_REASONS,
} as const;

/** Why there is no VIP. `phase` is the SLB-3 phase this leads to. */
export interface NoAllocation {
  readonly phase: 'Pending' | 'Error';
  /** CamelCase; also the reason of the `Allocated` condition and of the Event. */
  readonly reason: string;
  readonly message: string;
}

export interface AllocationRequest {
  readonly network: NetworkView;
  /** Usable AddressPool names, in the network's order (EIP-2, SLB-2). */
  readonly pools: readonly string[];
  /** SLB-2: the requested address and the pool that holds it. */
  readonly requested?: { readonly address: string; readonly value: number; readonly pool: string };
}

export type RequestDecision =
  { readonly ok: true; readonly request: AllocationRequest } | ({ readonly ok: false } & NoAllocation);

/**
 * SLB-10: the limits of what Juneau serves. Each problem names the Service field and value.
 * Returns the reason of the first problem and all messages, or undefined when supported.
 * `networkType`: the type of the Service's ExternalNetwork when known; `externalTrafficPolicy:
 * Cluster` is allowed on a `bgp` network only (BGP-3), where every node with a live agent announces.
 */
export function unsupportedServiceReason(service: ServiceView, networkType?: string): NoAllocation | undefined {
  const problems: Array<{ reason: string; message: string }> = [];
  const spec = service.spec ?? {};
  if ((spec.externalTrafficPolicy ?? 'Cluster') !== 'Local' && networkType !== 'bgp') {
    problems.push({
      reason: REASONS.externalTrafficPolicyNotLocal,
      message: `spec.externalTrafficPolicy is ${JSON.stringify(spec.externalTrafficPolicy ?? 'Cluster')}: Juneau answers ARP from a node with a Local backend and supports only "Local" on arp networks; "Cluster" is allowed on bgp networks (SLB-10, BGP-3)`,
    });
  }
  (spec.ports ?? []).forEach((p, i) => {
    const protocol = p.protocol ?? 'TCP';
    if (protocol !== 'TCP' && protocol !== 'UDP') {
      problems.push({
        reason: REASONS.unsupportedProtocol,
        message: `spec.ports[${i}].protocol is ${JSON.stringify(protocol)}: only TCP and UDP are supported (SLB-10)`,
      });
    }
  });
  const families = spec.ipFamilies ?? [];
  if (families.length > 0 && !families.includes('IPv4')) {
    problems.push({
      reason: REASONS.ipv4Required,
      message: `spec.ipFamilies is ${JSON.stringify(families)}: Juneau VIPs are IPv4 only; use IPv4 or dual-stack (SLB-10)`,
    });
  }
  if (problems.length === 0) return undefined;
  return {
    phase: 'Error',
    reason: problems[0].reason,
    message: `unsupported Service, no VIP: ${problems.map((p) => p.message).join('; ')}`,
  };
}

/**
 * SLB-2 and SLB-3: whether a VIP may be allocated, and from where. `network` is undefined when
 * the named ExternalNetwork does not exist; `pools` holds every AddressPool by name; `namespace`
 * is the Service's, checked against the network's spec.allowedNamespaces (SEC-9).
 */
export function decideAllocationRequest(
  service: ServiceView,
  network: NetworkView | undefined,
  pools: ReadonlyMap<string, PoolView>,
  cluster: readonly ClusterRange[] = [],
  namespace?: NamespaceView,
): RequestDecision {
  const unsupported = unsupportedServiceReason(service, network?.type);
  if (unsupported) return { ok: false, ...unsupported };
  const spec = serviceLoadBalancerSpec(service);
  if (!spec.externalNetwork) {
    return {
      ok: false,
      phase: 'Error',
      reason: REASONS.externalNetworkNotSpecified,
      message: `${SERVICE_FIELDS.externalNetwork} is not set: name the ExternalNetwork the VIP comes from (SLB-2)`,
    };
  }
  if (!network) {
    return {
      ok: false,
      phase: 'Pending',
      reason: REASONS.externalNetworkNotFound,
      message: `${SERVICE_FIELDS.externalNetwork}: ExternalNetwork ${JSON.stringify(spec.externalNetwork)} does not exist; waiting for it (SLB-2)`,
    };
  }
  const refusal = namespace && namespaceRefusal(network, namespace);
  if (refusal)
    return {
      ok: false,
      phase: 'Error',
      reason: refusal.reason,
      message: `${SERVICE_FIELDS.externalNetwork}: ${refusal.message} (SEC-9)`,
    };
  const choice = choosePools(network, pools, { field: SERVICE_FIELDS.requestedIP, address: spec.requestedIP }, cluster);
  if (!choice.ok) {
    const statement = choice.reason === REASONS.noUsableAddressPool ? 'SLB-2, EN-3' : 'SLB-2';
    return { ok: false, phase: 'Error', reason: choice.reason, message: `${choice.message} (${statement})` };
  }
  return { ok: true, request: { network, pools: choice.pools, requested: choice.requested } };
}
