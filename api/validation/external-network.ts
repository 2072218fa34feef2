import type { LabelSelectorView } from './label-selector';
import { parseIPv4 } from './ipv4';
import { parsePoolAddresses, rangesContain, refusalOf } from './address-pool';
import { issue, ValidationIssue } from './issue';
import { checkObjectName } from './names';

/** The parts of an ExternalNetwork validation reads. */
export interface NetworkView {
  readonly name: string;
  readonly type: string;
  readonly addressPools: readonly string[];
  /** FO-1: `spec.arp`, present only on type arp. */
  readonly arp?: { readonly announceOnMove?: boolean };
  /** SEC-9: `spec.allowedNamespaces`; absent, every namespace. */
  readonly allowedNamespaces?: LabelSelectorView;
}

/** The parts of an AddressPool validation reads. */
export interface PoolView {
  readonly name: string;
  readonly advertiseMode: string;
  readonly addresses: readonly string[];
  /** ADDR-2: `spec.avoidBuggyIPs`. */
  readonly avoidBuggyIPs?: boolean;
}

/** An ExternalNetwork or AddressPool as read anywhere: a cache, an admission request, a construct. */
interface Named {
  readonly metadata?: { readonly name?: string };
}

/**
 * The NetworkView of an ExternalNetwork, named `name` (its own by default). The spec is read
 * defensively: an admission request's object is whatever was sent.
 */
export function networkView(
  n: Named & {
    readonly spec: {
      readonly type: string;
      readonly addressPools: readonly string[];
      readonly allowedNamespaces?: LabelSelectorView;
    };
  },
  name = n.metadata?.name ?? '',
): NetworkView {
  const allowedNamespaces = n.spec?.allowedNamespaces;
  return {
    name,
    type: n.spec?.type,
    addressPools: n.spec?.addressPools ?? [],
    ...(allowedNamespaces ? { allowedNamespaces } : {}),
  };
}

/** The PoolView of an AddressPool (see networkView). */
export function poolView(
  p: Named & {
    readonly spec: {
      readonly advertiseMode: string;
      readonly addresses: readonly string[];
      readonly avoidBuggyIPs?: boolean;
    };
  },
): PoolView {
  return {
    name: p.metadata?.name ?? '',
    advertiseMode: p.spec?.advertiseMode,
    addresses: p.spec?.addresses ?? [],
    avoidBuggyIPs: p.spec?.avoidBuggyIPs,
  };
}

/** EN-1 and EN-2: type is bgp or arp; addressPools is a non-empty set of valid names. */
export function checkNetworkSpec(network: NetworkView): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (network.type !== 'bgp' && network.type !== 'arp')
    issues.push(issue('spec.type', network.type, 'must be "bgp" or "arp" (EN-1)'));
  if (!network.addressPools?.length)
    issues.push(
      issue(
        'spec.addressPools',
        undefined,
        `of ExternalNetwork ${network.name} must name at least one AddressPool (EN-2)`,
      ),
    );
  const seen = new Map<string, number>();
  (network.addressPools ?? []).forEach((pool, index) => {
    issues.push(...checkObjectName(`spec.addressPools[${index}]`, pool));
    const first = seen.get(pool);
    if (first !== undefined)
      issues.push(
        issue(`spec.addressPools[${index}]`, pool, `duplicates spec.addressPools[${first}]: the list is a set (EN-2)`),
      );
    else seen.set(pool, index);
  });
  if (network.arp !== undefined && network.type !== 'arp') {
    issues.push(
      issue(
        'spec.arp',
        network.arp,
        `of ExternalNetwork ${network.name} is for type arp networks only, and this one has type ${network.type} (FO-1)`,
      ),
    );
  }
  return issues;
}

/** EN-3: every listed pool exists and has `advertiseMode == spec.type`. */
export function checkPoolModes(network: NetworkView, pools: ReadonlyMap<string, PoolView>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  network.addressPools.forEach((name, index) => {
    const pool = pools.get(name);
    if (!pool) return;
    if (pool.advertiseMode !== network.type) {
      issues.push(
        issue(
          `spec.addressPools[${index}]`,
          name,
          `is an AddressPool with advertiseMode ${pool.advertiseMode}, but ExternalNetwork ${network.name} has type ${network.type} (EN-3)`,
        ),
      );
    }
  });
  return issues;
}

/** The pools of a network that can hand out addresses: listed, existing, and of the network's mode (EIP-2, SLB-2). */
export function usablePools(network: NetworkView, pools: ReadonlyMap<string, PoolView>): PoolView[] {
  return network.addressPools
    .map((n) => pools.get(n))
    .filter((p): p is PoolView => !!p && p.advertiseMode === network.type);
}

/**
 * EIP-3 / SLB-2: a requested address must be IPv4 and lie inside one of the network's usable
 * pools. Returns the pool that holds it, or the issue naming the field and the pools searched.
 */
export function findPoolForRequestedAddress(
  field: string,
  requested: string,
  network: NetworkView,
  pools: ReadonlyMap<string, PoolView>,
): { pool: PoolView } | { issue: ValidationIssue } {
  const address = parseIPv4(requested);
  if (address === undefined) return { issue: issue(field, requested, 'is not an IPv4 address') };
  const usable = usablePools(network, pools);
  for (const pool of usable) {
    const parsed = parsePoolAddresses(pool);
    if (!rangesContain(parsed.ranges, address)) continue;
    const refused = refusalOf(parsed, address);
    return refused ? { issue: issue(field, requested, refused) } : { pool };
  }
  const searched = usable.map((p) => `${p.name} (${p.addresses.join(', ')})`).join('; ') || 'none usable';
  return {
    issue: issue(
      field,
      requested,
      `is not inside any ${network.type} AddressPool of ExternalNetwork ${network.name}: ${searched}`,
    ),
  };
}
