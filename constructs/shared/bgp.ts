/**
 * BGPPeer and BGPAdvertisement (BGP-1, BGP-2, BGP-9), rendered and validated once for both
 * front-ends, as constructs/shared/kinds.ts does for the other kinds: the checks are
 * api/validation's, the same the webhooks run, against what the program itself declares.
 */
import { API_VERSION, type BGPAdvertisement, type BGPPeer } from '../../api';
import {
  advertisementView,
  checkAdvertisedNetworks,
  checkAdvertisementSpec,
  checkLocalPref,
  checkObjectName,
  checkPeerAddressOutsidePools,
  checkPeerSpec,
  peerView,
  type NetworkView,
  type PoolView,
  type ValidationIssue,
} from '../../api/validation';
import { about } from './kinds';
import { renderMetadata, type ObjectMetadataInput } from './metadata';

type ObjectInput<Spec> = Readonly<Spec> & { readonly metadata?: ObjectMetadataInput };
type PeerSpec = BGPPeer['spec'];
type AdvertisementSpec = BGPAdvertisement['spec'];

/** The BGPPeer fields the cdk8s props and the Pulumi args take as written (BGP-1). */
export interface BGPPeerOptions {
  /** The neighbour's IPv4 address; outside every AddressPool (BGP-1, BGP-9). */
  readonly peerAddress: string;
  /** The neighbour's AS number, 1-4294967295 (BGP-1). */
  readonly peerASN: number;
  /** The nodes' AS number, 1-4294967295; equal to `peerASN` makes the session iBGP (BGP-1). */
  readonly myASN: number;
  /**
   * The nodes that peer with this neighbour, a label selector over Nodes (BGP-1).
   * @default every node with a Juneau agent
   */
  readonly nodeSelector?: PeerSpec['nodeSelector'];
  /**
   * Seconds without a message before the session drops: 0 or 3-65535 (BGP-1).
   * @default 90
   */
  readonly holdTime?: number;
  /**
   * Seconds between keepalives, less than `holdTime` (BGP-1).
   * @default a third of the hold time
   */
  readonly keepaliveTime?: number;
  /**
   * The TCP MD5 password, from a Secret in the install namespace (BGP-1).
   * @default no password
   */
  readonly passwordSecretRef?: PeerSpec['passwordSecretRef'];
  /**
   * eBGP only: the neighbour may be more than one hop away (BGP-1).
   * @default false
   */
  readonly ebgpMultiHop?: boolean;
  /**
   * BFD on the session (intervals in ms, detect multiplier), so a node crash is seen in well
   * under a second instead of the hold time (BGP-1, BGP-6).
   * @default no BFD
   */
  readonly bfd?: PeerSpec['bfd'];
}

/** The BGPAdvertisement attributes the cdk8s props and the Pulumi args take as written (BGP-2). */
export interface BGPAdvertisementOptions {
  /**
   * The nodes that may announce, a label selector over Nodes (BGP-2, BGP-3).
   * @default every node
   */
  readonly nodeSelector?: AdvertisementSpec['nodeSelector'];
  /**
   * Communities on the routes: `65000:100` or a well-known name such as `no-export` (BGP-2).
   * @default none
   */
  readonly communities?: string[];
  /**
   * Large communities on the routes, `65000:1:2` (BGP-2).
   * @default none
   */
  readonly largeCommunities?: string[];
  /**
   * LOCAL_PREF of the routes, for iBGP peers; refused when every peer named is eBGP (BGP-2, BGP-9).
   * @default the daemon's (100)
   */
  readonly localPref?: number;
  /**
   * The announced prefix length per address: 32 is the address itself, shorter the covering
   * prefix (BGP-2).
   * @default 32
   */
  readonly aggregationLength?: number;
}

/** Only the fields that are set, so an absent default stays absent on the cluster. */
const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

export type BGPPeerInput = ObjectInput<BGPPeer['spec']>;

export function renderBGPPeer(name: string, input: BGPPeerInput): BGPPeer {
  const { metadata, ...spec } = input;
  return {
    apiVersion: API_VERSION,
    kind: 'BGPPeer',
    metadata: renderMetadata(name, metadata, false),
    spec: defined(spec),
  };
}

/** BGP-1, BGP-9: the peer's own fields, and its address outside every pool the program declares. */
export function validateBGPPeer(peer: BGPPeer, pools: readonly PoolView[]): ValidationIssue[] {
  const view = peerView(peer);
  return about(`BGPPeer ${view.name}`, [
    ...checkObjectName('metadata.name', view.name),
    ...checkPeerSpec(view),
    ...checkPeerAddressOutsidePools(view, pools),
  ]);
}

export type BGPAdvertisementInput = ObjectInput<BGPAdvertisement['spec']>;

export function renderBGPAdvertisement(name: string, input: BGPAdvertisementInput): BGPAdvertisement {
  const { metadata, ...spec } = input;
  return {
    apiVersion: API_VERSION,
    kind: 'BGPAdvertisement',
    metadata: renderMetadata(name, metadata, false),
    spec: defined({ ...spec, externalNetworks: [...spec.externalNetworks] }),
  };
}

/**
 * BGP-2, BGP-9: the advertisement's own fields; each network the program declares is of type
 * bgp; and localPref is refused when the peers it names are all declared here and all eBGP. With
 * no peers named (every BGPPeer of the cluster) or one declared elsewhere, the webhook judges.
 */
export function validateBGPAdvertisement(
  ad: BGPAdvertisement,
  networks: ReadonlyMap<string, Pick<NetworkView, 'name' | 'type'>>,
  peers: readonly BGPPeer[],
): ValidationIssue[] {
  const view = advertisementView(ad);
  const declared = peers.map((p) => peerView(p));
  const allKnown = !!view.peers?.length && view.peers.every((n) => declared.some((p) => p.name === n));
  return about(`BGPAdvertisement ${view.name}`, [
    ...checkObjectName('metadata.name', view.name),
    ...checkAdvertisementSpec(view),
    ...checkAdvertisedNetworks(view, networks),
    ...(allKnown ? checkLocalPref(view, declared) : []),
  ]);
}
