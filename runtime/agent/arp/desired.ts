/**
 * The agent's pure core: from what the informers hold and the ingress interface, what the pinned
 * maps must contain (ARP-10), what is refused and why (EN-12), and the guard rules; then the
 * difference between that and what the map holds. No I/O here: the writer (datapath.ts) applies
 * the plan, the loop (sync.ts) reports refusals.
 */
import { isIpv4 } from '../bpf/addr';
import { parsePoolItem, poolItemsToPrefixes, prefixContains, formatPrefix } from '../bpf/prefixes';
import type { ExpiryClass, GuardRules, Prefix } from '../bpf';
import { interfaceSubnets, type LocalInterface } from '../interface';
import type { NetworkView as NetworkSpecView, PoolView } from '../../../api/validation';

/** What the agent reads of an AddressPool: the view validation reads. */
export type { PoolView };

/** What the agent reads of an ARPAdvertisement. */
export interface AdvertisementView {
  readonly name: string;
  readonly address: string;
  readonly nodeName: string;
  readonly externalNetwork: string;
  /** SEC-11: `held` when an ElasticIP keeps it (FO-3 never moves those, so its answers outlive the
   * heartbeat), `moveable` otherwise (a ServiceLoadBalancer's VIP, or no owner mark). @default 'moveable' */
  readonly expiryClass?: ExpiryClass;
}

/** What the agent reads of an ExternalNetwork: validation's view, with FO-1's `spec.arp.announceOnMove` flat. */
export interface NetworkView extends Omit<NetworkSpecView, 'arp'> {
  /** FO-1: `spec.arp.announceOnMove`. @default false */
  readonly announceOnMove?: boolean;
}

export interface DesiredInput {
  readonly nodeName: string;
  readonly advertisements: readonly AdvertisementView[];
  readonly pools: readonly PoolView[];
  readonly networks: readonly NetworkView[];
  readonly iface: Pick<LocalInterface, 'name' | 'addresses'>;
}

export const REFUSAL_REASONS = {
  /** EN-12: the address is not in the L2 subnet of the interface the node answers on. */
  outsideSubnet: 'AddressOutsideInterfaceSubnet',
  /** spec.address is not an IPv4 address (the CRD schema should have refused it). */
  invalidAddress: 'InvalidAddress',
} as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[keyof typeof REFUSAL_REASONS];

export interface Refusal {
  readonly advertisement: string;
  readonly address: string;
  readonly reason: RefusalReason;
  readonly message: string;
}

export interface DesiredState {
  /** Addresses to answer for, sorted. */
  readonly addresses: readonly string[];
  /** Address -> the ARPAdvertisement(s) asking for it (ARP-4 makes it one). */
  readonly owners: ReadonlyMap<string, readonly string[]>;
  readonly refused: readonly Refusal[];
  readonly guard: GuardRules;
  /** Pool items that could not be turned into prefixes, named (the schema should prevent them). */
  readonly guardProblems: readonly string[];
  /** FO-1: answered addresses whose network has `spec.arp.announceOnMove`; empty by default. */
  readonly announce: ReadonlySet<string>;
  /** SEC-11: answered addresses every advertisement of which is held (expiryClassOf). */
  readonly held: ReadonlySet<string>;
}

export function desiredState(input: DesiredInput): DesiredState {
  const subnets = interfaceSubnets(input.iface);
  const owners = new Map<string, string[]>();
  const classes = new Map<string, ExpiryClass[]>();
  const refused: Refusal[] = [];
  for (const ad of input.advertisements) {
    const part = contributionOf(ad, input.nodeName, subnets, input.iface.name);
    if (part?.refusal) refused.push(part.refusal);
    else if (part) {
      owners.set(ad.address, [...(owners.get(ad.address) ?? []), ad.name]);
      classes.set(ad.address, [...(classes.get(ad.address) ?? []), part.expiryClass ?? 'moveable']);
    }
  }
  const { guard, problems } = guardRules(input);
  const announcing = announcingNetworks(input.networks);
  const announce = new Set(
    input.advertisements
      .filter((ad) => owners.get(ad.address)?.includes(ad.name) && announcing.has(ad.externalNetwork))
      .map((ad) => ad.address),
  );
  return {
    addresses: sortAddresses(owners.keys()),
    owners,
    refused,
    guard,
    guardProblems: problems,
    announce,
    held: new Set([...classes].filter(([, of]) => expiryClassOf(of) === 'held').map(([address]) => address)),
  };
}

/** SEC-11: an address is held only when every advertisement asking for it is (ARP-4 makes it one):
 * two owners of different classes leave it moveable, the class that fails towards silence. */
export function expiryClassOf(classes: Iterable<ExpiryClass>): ExpiryClass {
  let any = false;
  for (const c of classes) {
    if (c !== 'held') return 'moveable';
    any = true;
  }
  return any ? 'held' : 'moveable';
}

/** One advertisement's part of the desired state: its address to answer, or why it is refused;
 * undefined for another node's. desiredState folds these over all advertisements; the agent's
 * per-event path (answered.ts) applies one at a time. */
export type Contribution =
  | {
      readonly address: string;
      readonly network: string;
      /** @default 'moveable' */
      readonly expiryClass?: ExpiryClass;
      readonly refusal?: undefined;
    }
  | { readonly refusal: Refusal };

export function contributionOf(
  ad: AdvertisementView,
  nodeName: string,
  subnets: readonly Prefix[],
  ifname: string,
): Contribution | undefined {
  // The field selector already limits the watch to this node; an object of another node is not ours.
  if (ad.nodeName !== nodeName) return undefined;
  const refusal = refuse(ad, subnets, ifname);
  return refusal
    ? { refusal }
    : { address: ad.address, network: ad.externalNetwork, expiryClass: ad.expiryClass ?? 'moveable' };
}

/** FO-1: the arp networks whose addresses are announced when this node gains them. */
export function announcingNetworks(networks: readonly NetworkView[]): Set<string> {
  return new Set(networks.filter((n) => n.type === 'arp' && n.announceOnMove === true).map((n) => n.name));
}

function refuse(ad: AdvertisementView, subnets: readonly Prefix[], ifname: string): Refusal | undefined {
  if (!isIpv4(ad.address)) {
    return {
      advertisement: ad.name,
      address: ad.address,
      reason: REFUSAL_REASONS.invalidAddress,
      message: `spec.address '${ad.address}' is not an IPv4 address; not answered`,
    };
  }
  if (subnets.some((s) => prefixContains(s, ad.address))) return undefined;
  const where = subnets.length > 0 ? subnets.map(formatPrefix).join(', ') : 'no IPv4 subnet';
  return {
    advertisement: ad.name,
    address: ad.address,
    reason: REFUSAL_REASONS.outsideSubnet,
    message: `${ad.address} is outside the L2 subnet of ${ifname} (${where}), so ARP for it cannot reach this node; not answered (EN-12)`,
  };
}

/** The modes whose pools the guard covers: arp (OPS-1: only the owner's XDP answers) and bgp
 * (BGP-10: nobody answers ARP for a routed address, not even a kernel holding it on kube-ipvs0). */
const GUARDED_MODES: ReadonlySet<string> = new Set(['arp', 'bgp']);

/** Guard: drop the guarded pools' prefixes (pools with advertiseMode arp or bgp, and pools of arp
 * or bgp networks); allow the interface's own addresses, which the datapath cannot tell from
 * kube-ipvs0 ones. */
function guardRules(input: DesiredInput): { guard: GuardRules; problems: string[] } {
  const guardedPoolNames = new Set(
    input.networks.filter((n) => GUARDED_MODES.has(n.type)).flatMap((n) => n.addressPools),
  );
  const items: string[] = [];
  const problems: string[] = [];
  for (const pool of input.pools) {
    if (!GUARDED_MODES.has(pool.advertiseMode) && !guardedPoolNames.has(pool.name)) continue;
    for (const item of pool.addresses) {
      try {
        parsePoolItem(item);
        items.push(item);
      } catch (err) {
        problems.push(`AddressPool ${pool.name}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  const allow = [...new Set(input.iface.addresses.map((a) => a.address))].sort(compareAddresses);
  return { guard: { drop: poolItemsToPrefixes(items), allow }, problems };
}

export interface TablePlan {
  readonly add: readonly string[];
  readonly remove: readonly string[];
  /** Present and wanted: untouched, counters kept. */
  readonly keep: readonly string[];
}

/** desired vs actual: what to insert and what to delete; kept entries are never touched. */
export function planTable(desired: readonly string[], actual: Iterable<string>): TablePlan {
  const want = new Set(desired);
  const have = new Set(actual);
  return {
    add: sortAddresses([...want].filter((a) => !have.has(a))),
    remove: sortAddresses([...have].filter((a) => !want.has(a))),
    keep: sortAddresses([...want].filter((a) => have.has(a))),
  };
}

/** Numeric order of dotted quads (non-addresses last, by text). */
export function compareAddresses(a: string, b: string): number {
  return addressKey(a) - addressKey(b) || a.localeCompare(b);
}

/** The addresses in compareAddresses order, each parsed once: a sort by compareAddresses parses
 * two per comparison, which was a third of a full pass at 10,000 addresses (bench/scale). */
export function sortAddresses(addresses: Iterable<string>): string[] {
  return [...addresses]
    .map((address) => ({ address, key: addressKey(address) }))
    .sort((a, b) => a.key - b.key || a.address.localeCompare(b.address))
    .map((x) => x.address);
}

function addressKey(x: string): number {
  return isIpv4(x) ? x.split('.').reduce((n, o) => n * 256 + Number(o), 0) : Number.MAX_SAFE_INTEGER;
}
