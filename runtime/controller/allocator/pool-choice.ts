/**
 * EIP-2/3, SLB-2: the pools of an ExternalNetwork an address may come from, and the pool of a
 * requested address — the same rule for an ElasticIP and a ServiceLoadBalancer, which differ only
 * in the field that names the request and the statement a message cites. Pure.
 */
import {
  clusterOwnerOf,
  checkPoolModes,
  findPoolForRequestedAddress,
  formatIssue,
  formatSelector,
  parseIPv4,
  selectorMatches,
  usablePools,
  type ClusterRange,
  type NetworkView,
  type PoolView,
} from '../../../api/validation';

export const POOL_CHOICE_REASONS = {
  noUsableAddressPool: 'NoUsableAddressPool',
  requestedIPNotInPool: 'RequestedIPNotInPool',
  /** H5: a Node's address, a pod CIDR or an API server address. */
  requestedIPIsClusterAddress: 'RequestedIPIsClusterAddress',
  /** SEC-9: the network's spec.allowedNamespaces does not select the requester's namespace. */
  namespaceNotAllowed: 'NamespaceNotAllowed',
} as const;

/** A Namespace as the allocation rules read it: its name and labels. */
export interface NamespaceView {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * SEC-9: why `namespace` may not take addresses from `network`, or undefined when it may (no
 * spec.allowedNamespaces, or it selects the namespace's labels). Without the statement ID.
 */
export function namespaceRefusal(
  network: NetworkView,
  namespace: NamespaceView,
): { readonly reason: typeof POOL_CHOICE_REASONS.namespaceNotAllowed; readonly message: string } | undefined {
  const selector = network.allowedNamespaces;
  if (!selector || selectorMatches(selector, namespace.labels)) return undefined;
  return {
    reason: POOL_CHOICE_REASONS.namespaceNotAllowed,
    message: `ExternalNetwork ${network.name} does not allow namespace ${namespace.name}: its spec.allowedNamespaces (${formatSelector(selector)}) does not select the namespace's labels; label the namespace or use another network`,
  };
}

export type PoolChoice =
  | {
      readonly ok: true;
      /** Usable AddressPool names in the network's order. */
      readonly pools: string[];
      readonly requested?: { readonly address: string; readonly value: number; readonly pool: string };
    }
  | {
      readonly ok: false;
      readonly reason: (typeof POOL_CHOICE_REASONS)[keyof typeof POOL_CHOICE_REASONS];
      /** Without the statement ID; the caller cites its own. */
      readonly message: string;
    };

/**
 * `requested`: the address asked for (if any) and the field path that names it in messages.
 * `cluster`: the cluster's own addresses (H5), which no request may name.
 */
export function choosePools(
  network: NetworkView,
  pools: ReadonlyMap<string, PoolView>,
  requested: { readonly field: string; readonly address?: string },
  cluster: readonly ClusterRange[] = [],
): PoolChoice {
  const usable = usablePools(network, pools).map((p) => p.name);
  if (usable.length === 0) {
    const modeIssues = checkPoolModes(network, pools).map(formatIssue);
    const missing = network.addressPools.filter((n) => !pools.has(n)).map((n) => `AddressPool ${n} does not exist`);
    return {
      ok: false,
      reason: POOL_CHOICE_REASONS.noUsableAddressPool,
      message: `ExternalNetwork ${network.name} has no AddressPool with advertiseMode ${network.type}: ${[...modeIssues, ...missing].join('; ')}`,
    };
  }
  if (!requested.address) return { ok: true, pools: usable };
  const found = findPoolForRequestedAddress(requested.field, requested.address, network, pools);
  if ('issue' in found)
    return { ok: false, reason: POOL_CHOICE_REASONS.requestedIPNotInPool, message: formatIssue(found.issue) };
  const value = parseIPv4(requested.address)!;
  const own = clusterOwnerOf(cluster, value);
  if (own)
    return {
      ok: false,
      reason: POOL_CHOICE_REASONS.requestedIPIsClusterAddress,
      message: `${requested.field}: ${JSON.stringify(requested.address)} is ${own.owner}: the cluster's own addresses are never an ElasticIP or a VIP (H5)`,
    };
  return { ok: true, pools: usable, requested: { address: requested.address, value, pool: found.pool.name } };
}
