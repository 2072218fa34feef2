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
