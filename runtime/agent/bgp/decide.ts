/**
 * What one node's BIRD announces, and to whom (BGP-1..BGP-3, BGP-5), from what the agent's
 * informers hold. Pure: the loop (sync.ts) renders the result (bird-config.ts) and applies it.
 *
 * - Peers: every BGPPeer whose nodeSelector selects the node (BGP-1), with its password read from
 *   its Secret by the loop (a peer whose Secret cannot be read is left out, and said so: a session
 *   without its password would only be refused by the router).
 * - Prefixes: the VIP of every ServiceLoadBalancer on a `bgp` ExternalNetwork whose
 *   `status.advertisingNodes` lists the node (the controller put there the candidates a
 *   BGPAdvertisement allows, BGP-3), to the peers those advertisements allow from this node, with
 *   their communities, large communities, local preference and aggregation length (BGP-2). A VIP
 *   leaves the list as soon as the node leaves advertisingNodes: the next apply withdraws it (BGP-5).
 * - BGP-4: the address of every ElasticIP on a `bgp` network that this node serves (its NAT or
 *   direct binding is in this node's NAT maps, as the NAT process reports them), to the same
 *   peers and with the same attributes; it leaves the list with the binding.
 */
import { BFD_DEFAULTS } from '../../../api/kinds/bgp-peer';
import {
  advertisementsOf,
  announcingPeers,
  peersWith,
  type AdvertisementView,
  type NodeLabels,
  type PeerView,
} from '../../../api/validation';
import { formatIPv4, parseIPv4 } from '../../../api/validation/ipv4';
import { DEFAULT_AGGREGATION_LENGTH } from '../../../api/kinds/bgp-advertisement';
import type { ServedAddress } from '../nat/desired';
import type { BirdConfigInput, BirdPeer, BirdPrefix } from './bird-config';

/** What the decision reads of a ServiceLoadBalancer. */
export interface SlbView {
  /** `namespace/name`, for messages. */
  readonly key: string;
  readonly externalNetwork: string;
  readonly vip?: string;
  readonly advertisingNodes: readonly string[];
  /** Being deleted: withdrawn now, before the controller releases the VIP (BGP-5). */
  readonly deleting?: boolean;
}

/** A peer with its password resolved by the loop: a string, absent, or why it could not be read. */
export type PeerWithSecret = PeerView & { readonly password?: string | { readonly error: string } };

export interface BgpDecisionInput {
  readonly node: NodeLabels;
  /** The node's address, BIRD's router id (the ingress interface's first address). */
  readonly routerId?: string;
  readonly peers: readonly PeerWithSecret[];
  readonly advertisements: readonly AdvertisementView[];
  /** Names of the ExternalNetworks of type bgp. */
  readonly bgpNetworks: ReadonlySet<string>;
  readonly serviceLoadBalancers: readonly SlbView[];
  /** BGP-4: the ElasticIPs this node's NAT maps serve and the NATGateways it is the gateway of. @default none */
  readonly served?: readonly ServedAddress[];
}

/** One address the node announces, and the peers it goes to. */
export interface DecidedAddress {
  readonly address: string;
  readonly prefix: string;
  readonly peers: readonly string[];
  /** What asked for it (`ServiceLoadBalancer ns/name`, `ElasticIP ns/name`). */
  readonly owner: string;
}

export interface BgpDecision {
  readonly config: BirdConfigInput;
  /** Sorted by address. */
  readonly addresses: readonly DecidedAddress[];
  /** What was left out and why, one line each (logged once per change). */
  readonly problems: readonly string[];
}

export function decideBgp(input: BgpDecisionInput): BgpDecision {
  const problems: string[] = [];
  const peers: BirdPeer[] = [];
  const peerNames = new Set<string>();
  for (const p of [...input.peers].sort((a, b) => cmp(a.name, b.name))) {
    if (!peersWith(p, input.node)) continue;
    if (typeof p.password === 'object') {
      problems.push(`BGPPeer ${p.name}: not peered: ${p.password.error}`);
      continue;
    }
    peers.push(birdPeer(p));
    peerNames.add(p.name);
  }
  const usable = input.peers.filter((p) => peerNames.has(p.name));
  const addresses: DecidedAddress[] = [];
  const prefixes: BirdPrefix[] = [];
  const wanted: Wanted[] = [
    ...[...input.serviceLoadBalancers]
      .filter((slb) => slb.vip && !slb.deleting && slb.advertisingNodes.includes(input.node.name))
      .sort((a, b) => cmp(a.key, b.key))
      .map((slb) => ({
        owner: `ServiceLoadBalancer ${slb.key}`,
        field: 'status.vip',
        network: slb.externalNetwork,
        address: slb.vip!,
      })),
    ...(input.served ?? []).map((e) => ({
      owner: e.owner,
      field: 'status.address',
      network: e.externalNetwork,
      address: e.address,
    })),
  ];
  // Per network, the advertisements that let this node announce, each with its peers: the same for
  // every address of the network (10,000 VIPs of one network: one computation, not 10,000).
  const allowing = new Map<string, Array<{ ad: AdvertisementView; to: string[] }>>();
  const allowingOf = (network: string) => {
    let found = allowing.get(network);
    if (!found) {
      found = advertisementsOf(network, input.advertisements)
        .map((ad) => ({ ad, to: announcingPeers(network, input.node, [ad], usable).map((p) => p.name) }))
        .filter(({ to }) => to.length > 0)
        .sort((a, b) => cmp(a.ad.name, b.ad.name));
      allowing.set(network, found);
    }
    return found;
  };
  for (const w of wanted) {
    if (!input.bgpNetworks.has(w.network)) continue;
    const vip = parseIPv4(w.address);
    if (vip === undefined) {
      problems.push(`${w.owner}: ${w.field} '${w.address}' is not an IPv4 address`);
      continue;
    }
    for (const { ad, to } of allowingOf(w.network)) {
      const length = ad.aggregationLength ?? DEFAULT_AGGREGATION_LENGTH;
      const prefix = `${formatIPv4(length === 0 ? 0 : (vip & (0xffffffff << (32 - length))) >>> 0)}/${length}`;
      prefixes.push({
        prefix,
        communities: ad.communities,
        largeCommunities: ad.largeCommunities,
        localPref: ad.localPref,
        peers: to,
      });
      addresses.push({ address: w.address, prefix, peers: to, owner: w.owner });
    }
  }
  return {
    config: { routerId: input.routerId, peers, prefixes },
    addresses: mergeAddresses(addresses),
    problems,
  };
}

/** An address some object asks this node to announce. */
interface Wanted {
  readonly owner: string;
  /** Where the address is written, for a problem's message. */
  readonly field: string;
  readonly network: string;
  readonly address: string;
}

/** One entry per address: the peers of every advertisement that announces it. */
function mergeAddresses(addresses: readonly DecidedAddress[]): DecidedAddress[] {
  const byAddress = new Map<string, DecidedAddress>();
  for (const a of addresses) {
    const before = byAddress.get(a.address);
    byAddress.set(a.address, before ? { ...before, peers: [...new Set([...before.peers, ...a.peers])].sort() } : a);
  }
  return [...byAddress.values()]
    .map((a) => ({ a, n: parseIPv4(a.address) ?? 0 }))
    .sort((x, y) => x.n - y.n)
    .map(({ a }) => a);
}

function birdPeer(p: PeerWithSecret): BirdPeer {
  return {
    name: p.name,
    address: p.peerAddress,
    peerASN: p.peerASN,
    myASN: p.myASN,
    holdTime: p.holdTime,
    keepaliveTime: p.keepaliveTime,
    ...(typeof p.password === 'string' ? { password: p.password } : {}),
    ebgpMultiHop: p.ebgpMultiHop,
    ...(p.bfd
      ? {
          bfd: {
            minRxMs: p.bfd.receiveInterval ?? BFD_DEFAULTS.receiveInterval,
            minTxMs: p.bfd.transmitInterval ?? BFD_DEFAULTS.transmitInterval,
            multiplier: p.bfd.detectMultiplier ?? BFD_DEFAULTS.detectMultiplier,
          },
        }
      : {}),
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
