/**
 * BGPPeer and BGPAdvertisement admission (BGP-9): the cross-object rules CEL cannot reach, pure
 * functions of the request and the objects the caches hold. The checks themselves are the
 * api/validation functions the constructs run at synth time.
 */
import type { BGPAdvertisement, BGPPeer } from '../../../../api';
import {
  advertisementView,
  checkAdvertisedNetworks,
  checkLocalPref,
  checkPeerAddressOutsidePools,
  networkView,
  peerView,
  poolView,
} from '../../../../api/validation';
import { allowed, checkedObject, verdictOf, type AdmissionRequest, type Verdict } from '../admission';
import { nameOf, type CacheSnapshot, type ObjectView } from '../views';

export type BGPPeerObject = ObjectView & { readonly spec: BGPPeer['spec'] };
export type BGPAdvertisementObject = ObjectView & { readonly spec: BGPAdvertisement['spec'] };

/** BGP-9: the peer address lies in no AddressPool (403: it conflicts with the pool that holds it). */
export function checkBGPPeerAdmission(
  request: AdmissionRequest<BGPPeerObject>,
  snapshot: CacheSnapshot<'addressPools'>,
): Verdict {
  const peer = checkedObject(request);
  if (!peer) return allowed();
  const view = peerView(peer, nameOf(peer) || (request.name ?? ''));
  return verdictOf(checkPeerAddressOutsidePools(view, snapshot.addressPools.map(poolView)));
}

/**
 * BGP-9: every named network that exists is of type bgp (422), and `localPref` is not set on an
 * advertisement whose peers are all eBGP (422). A network or peer not created yet is not judged.
 */
export function checkBGPAdvertisementAdmission(
  request: AdmissionRequest<BGPAdvertisementObject>,
  snapshot: CacheSnapshot<'externalNetworks' | 'bgpPeers'>,
): Verdict {
  const ad = checkedObject(request);
  if (!ad) return allowed();
  const view = advertisementView(ad, nameOf(ad) || (request.name ?? ''));
  const networks = new Map(snapshot.externalNetworks.map((n) => [nameOf(n), networkView(n)]));
  const peers = snapshot.bgpPeers.map((p) => peerView(p));
  return verdictOf([], [...checkAdvertisedNetworks(view, networks), ...checkLocalPref(view, peers)]);
}
