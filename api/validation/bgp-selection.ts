/**
 * BGP-1..3: which nodes peer with which BGPPeer, and which nodes a BGPAdvertisement lets announce
 * which network to which peer. Pure, from label selectors over Nodes; the controller reads it for
 * BGPPeer status and SLB phase Ready, and an agent for what its own node does.
 */
import { selectorMatches, type LabelSelectorView } from './label-selector';
import { advertisedPeers, type AdvertisementView, type PeerView } from './bgp';
import { parseAddressItem } from './address-pool';
import { formatRange, parseIPv4, type AddressRange } from './ipv4';

/** A node as the selectors see it: its name and labels. */
export interface NodeLabels {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/** An absent selector selects every node. */
const selects = (selector: LabelSelectorView | undefined, node: NodeLabels): boolean =>
  selector === undefined || selectorMatches(selector, node.labels);

/** BGP-1: the node peers with `peer` (its nodeSelector; absent: every node with an agent). */
export const peersWith = (peer: Pick<PeerView, 'nodeSelector'>, node: NodeLabels): boolean =>
  selects(peer.nodeSelector, node);

/** BGP-2: the advertisements that list `network`. */
export const advertisementsOf = <A extends Pick<AdvertisementView, 'externalNetworks'>>(
  network: string,
  ads: readonly A[],
): A[] => ads.filter((a) => a.externalNetworks.includes(network));

/**
 * BGP-2, BGP-3: the peers to which `node` may announce an address of `network`: some
 * advertisement lists the network and selects the node, the peer is one of that advertisement's
 * peers, and the peer selects the node. Sorted by name.
 */
export function announcingPeers<P extends PeerView>(
  network: string,
  node: NodeLabels,
  ads: readonly AdvertisementView[],
  peers: readonly P[],
): P[] {
  const out = new Map<string, P>();
  for (const ad of advertisementsOf(network, ads)) {
    if (!selects(ad.nodeSelector, node)) continue;
    for (const p of advertisedPeers(ad, peers)) if (peersWith(p, node)) out.set(p.name, p);
  }
  return [...out.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * BGP-7: `BGPNodeState.status.announced.addresses` from the announced addresses: sorted, adjacent
 * ones merged into `a-b` ranges, a lone one as itself, so addresses allocated next to each other
 * cost one item (what an agent writes).
 */
export function announcedItems(addresses: Iterable<number>): string[] {
  const sorted = [...new Set(addresses)].sort((a, b) => a - b);
  const items: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    items.push(formatRange({ first: sorted[i], last: sorted[j] }));
    i = j + 1;
  }
  return items;
}

/** The ranges of `status.announced.addresses` (an address, a range or a CIDR per item); bad items are skipped. */
export function announcedRanges(items: readonly string[] | undefined): AddressRange[] {
  return (items ?? []).flatMap((item) => {
    const single = parseIPv4(item);
    if (single !== undefined) return [{ first: single, last: single }];
    const parsed = parseAddressItem(item);
    return parsed.ok ? [parsed.range] : [];
  });
}
