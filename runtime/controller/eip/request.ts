/**
 * EIP-1..3: which pools an ElasticIP's address may come from, and the requested address, or why
 * there is none (an ElasticIP whose network and pools are not resolved is in Error, EIP-9). Pure.
 */
import {
  checkPoolModes,
  findPoolForRequestedAddress,
  formatIssue,
  parseIPv4,
  usablePools,
  type NetworkView,
  type PoolView,
} from '../../../api/validation';

/** Why an ElasticIP cannot ask for an address: the reason of its `Allocated` condition (phase Error, EIP-9). */
export const REASONS = {
  externalNetworkNotFound: 'ExternalNetworkNotFound',
  noUsableAddressPool: 'NoUsableAddressPool',
  requestedIPNotInPool: 'RequestedIPNotInPool',
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
): RequestDecision {
  if (!network) {
    return {
      ok: false,
      reason: REASONS.externalNetworkNotFound,
      message: `spec.externalNetwork: ExternalNetwork ${JSON.stringify(spec.externalNetwork)} does not exist; create it (the field is immutable: or recreate the ElasticIP naming another) (EIP-1)`,
    };
  }
  const type = network.type === 'bgp' ? 'bgp' : 'arp';
  const usable = usablePools(network, pools).map((p) => p.name);
  if (usable.length === 0) {
    const modeIssues = checkPoolModes(network, pools).map(formatIssue);
    const missing = network.addressPools.filter((n) => !pools.has(n)).map((n) => `AddressPool ${n} does not exist`);
    return {
      ok: false,
      reason: REASONS.noUsableAddressPool,
      message: `ExternalNetwork ${network.name} has no AddressPool with advertiseMode ${network.type}: ${[...modeIssues, ...missing].join('; ')} (EIP-2)`,
    };
  }
  if (!spec.requestedIP) return { ok: true, network: network.name, type, pools: usable };
  const found = findPoolForRequestedAddress('spec.requestedIP', spec.requestedIP, network, pools);
  if ('issue' in found)
    return { ok: false, reason: REASONS.requestedIPNotInPool, message: `${formatIssue(found.issue)} (EIP-3)` };
  const value = parseIPv4(spec.requestedIP)!;
  return {
    ok: true,
    network: network.name,
    type,
    pools: usable,
    requested: { address: spec.requestedIP, value, pool: found.pool.name },
  };
}
