/**
 * EIP-1..3 (and NGW-2: a NATGateway asks the same way): which pools an ElasticIP's address may
 * come from, and the requested address, or why there is none (an ElasticIP whose network and pools are not resolved is in Error, EIP-9; so is one
 * requesting one of the cluster's own addresses, H5, and one whose namespace the network does not
 * allow, SEC-9). Pure.
 */
import type { ClusterRange, NetworkView, PoolView } from '../../../api/validation';
import { choosePools, namespaceRefusal, POOL_CHOICE_REASONS, type NamespaceView } from './pool-choice';

/** Why an ElasticIP cannot ask for an address: the reason of its `Allocated` condition (phase Error, EIP-9). */
export const REASONS = {
  externalNetworkNotFound: 'ExternalNetworkNotFound',
  ...POOL_CHOICE_REASONS,
} as const;

export interface AddressRequest {
  readonly network: string;
  readonly type: 'arp' | 'bgp';
  /** Usable AddressPool names in the network's order (EIP-2). */
  readonly pools: readonly string[];
  readonly requested?: { readonly address: string; readonly value: number; readonly pool: string };
}

export type RequestDecision =
  ({ readonly ok: true } & AddressRequest) | { readonly ok: false; readonly reason: string; readonly message: string };

export function decideAddressRequest(
  spec: { readonly externalNetwork: string; readonly requestedIP?: string },
  network: NetworkView | undefined,
  pools: ReadonlyMap<string, PoolView>,
  cluster: readonly ClusterRange[] = [],
  namespace?: NamespaceView,
  /** Who asks, for the message: NATGateways are allocated the same way (NGW-2). */
  holderKind: 'ElasticIP' | 'NATGateway' = 'ElasticIP',
): RequestDecision {
  if (!network) {
    return {
      ok: false,
      reason: REASONS.externalNetworkNotFound,
      message: `spec.externalNetwork: ExternalNetwork ${JSON.stringify(spec.externalNetwork)} does not exist; create it (the field is immutable: or recreate the ${holderKind} naming another) (${holderKind === 'ElasticIP' ? 'EIP-1' : 'NGW-1'})`,
    };
  }
  const refusal = namespace && namespaceRefusal(network, namespace);
  if (refusal)
    return { ok: false, reason: refusal.reason, message: `spec.externalNetwork: ${refusal.message} (SEC-9)` };
  const type = network.type === 'bgp' ? 'bgp' : 'arp';
  const choice = choosePools(network, pools, { field: 'spec.requestedIP', address: spec.requestedIP }, cluster);
  if (!choice.ok) {
    const statement = choice.reason === REASONS.noUsableAddressPool ? 'EIP-2' : 'EIP-3';
    return { ok: false, reason: choice.reason, message: `${choice.message} (${statement})` };
  }
  return { ok: true, network: network.name, type, pools: choice.pools, requested: choice.requested };
}

/** The network as resolved from `spec.externalNetwork` (EIP-1, NGW-1), or why it cannot be. */
export type Resolution =
  | { readonly ok: true; readonly network: string; readonly type: 'arp' | 'bgp' }
  | { readonly ok: false; readonly reason: string; readonly message: string };

/** The address this pass found or took (EIP-3, NGW-2), or why there is none. */
export type Allocation =
  | { readonly allocated: true; readonly address: string; readonly pool: string }
  | { readonly allocated: false; readonly reason: string; readonly message: string };
