/**
 * BGP-3, BGP-5: for one VIP of a `bgp` network, which of the candidate nodes (SLB-4's, or every
 * live node under externalTrafficPolicy Cluster) a BGPAdvertisement lets announce it, and which
 * of those report it announced over an Established session to a peer that advertisement allows
 * (their BGPNodeState, written by their agent). Pure.
 */
import type { BGPNodeState } from '../../../api';
import {
  announcedRanges,
  announcingPeers,
  advertisementsOf,
  rangesContain,
  type AdvertisementView,
  type NodeLabels,
  type PeerView,
} from '../../../api/validation';

/** What the decision reads, from the controller's caches. */
export interface BGPInputs {
  readonly advertisements: readonly AdvertisementView[];
  readonly peers: readonly PeerView[];
  /** BGPNodeState status by node name. */
  readonly nodeStates: ReadonlyMap<string, NonNullable<BGPNodeState['status']>>;
  /** Node labels by name (a node missing here has none). */
  readonly nodeLabels: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
}

export interface BGPAnnouncement {
  /** No BGPAdvertisement lists the network: nothing may announce it (BGP-2). */
  readonly noAdvertisement: boolean;
  /** Candidates a BGPAdvertisement lets announce the VIP to at least one peer that peers with them; sorted. */
  readonly allowed: string[];
  /** Of `allowed`, the nodes that report the VIP announced over an Established, allowed session; sorted. */
  readonly announcing: string[];
  /** Candidates not allowed, and allowed nodes not announcing, each with why. */
  readonly leftOut: Array<[string, string]>;
}

/** The allowed session states and the announced VIP, as one node reports them; undefined when it carries the route. */
function whyNotAnnouncing(
  node: string,
  vip: number,
  peers: readonly PeerView[],
  status: NonNullable<BGPNodeState['status']> | undefined,
): string | undefined {
  if (!status) return `its agent has written no BGPNodeState ${node} yet`;
  const names = peers.map((p) => p.name);
  const up = (status.peers ?? []).filter((s) => names.includes(s.peer) && s.state === 'Established');
  if (up.length === 0) {
    const states = names.map((n) => {
      const s = (status.peers ?? []).find((x) => x.peer === n);
      return s ? `${n} ${s.state}${s.lastError ? ` (${s.lastError})` : ''}` : `${n} not reported`;
    });
    return `no Established session to an allowed BGPPeer: ${states.join(', ')}`;
  }
  if (!rangesContain(announcedRanges(status.announced?.addresses), vip))
    return `its BGPNodeState does not report the VIP announced (sessions Established: ${up.map((s) => s.peer).join(', ')})`;
  return undefined;
}

export function bgpAnnouncement(
  network: string,
  vip: number | undefined,
  candidates: readonly string[],
  inputs: BGPInputs,
): BGPAnnouncement {
  const listing = advertisementsOf(network, inputs.advertisements);
  if (listing.length === 0) return { noAdvertisement: true, allowed: [], announcing: [], leftOut: [] };
  const allowed: string[] = [];
  const announcing: string[] = [];
  const leftOut: Array<[string, string]> = [];
  for (const name of [...candidates].sort()) {
    const node: NodeLabels = { name, labels: inputs.nodeLabels.get(name) };
    const peers = announcingPeers(network, node, listing, inputs.peers);
    if (peers.length === 0) {
      leftOut.push([
        name,
        `no BGPAdvertisement of ExternalNetwork ${network} (${listing.map((a) => a.name).join(', ')}) lets it announce to a BGPPeer that peers with it`,
      ]);
      continue;
    }
    allowed.push(name);
    if (vip === undefined) continue;
    const why = whyNotAnnouncing(name, vip, peers, inputs.nodeStates.get(name));
    if (why) leftOut.push([name, why]);
    else announcing.push(name);
  }
  return { noAdvertisement: false, allowed, announcing, leftOut };
}
