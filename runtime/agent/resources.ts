/** The Juneau kinds the ARP loop reads (resource types in runtime/kube/resources.ts JuneauResources)
 * and their views for arp/desired.ts. */
import type { AddressPool, ARPAdvertisement, ExternalNetwork } from '../../api';
import { OWNER_LABELS } from '../../api/constants';
import { networkView as networkSpecView, poolView } from '../../api/validation';
import type { KubeObject } from '../kube/types';
import type { AdvertisementView, NetworkView } from './arp/desired';

export { poolView };

/** The kinds as the informers hold them (api/ types with the wire metadata of runtime/kube). */
export type AdvertisementObject = ARPAdvertisement & KubeObject;
export type AddressPoolObject = AddressPool & KubeObject;
export type ExternalNetworkObject = ExternalNetwork & KubeObject;

/** The field selector of this node's ARPAdvertisements (CRD selectableFields `.spec.nodeName`). */
export function nodeFieldSelector(nodeName: string): string {
  return `spec.nodeName=${nodeName}`;
}

// Objects come from the API server, whose schema has validated them; the views still tolerate a
// missing field so that one odd object cannot stop the agent.
export function advertisementView(ad: ARPAdvertisement): AdvertisementView {
  return {
    name: ad.metadata?.name ?? '',
    address: ad.spec?.address ?? '',
    nodeName: ad.spec?.nodeName ?? '',
    externalNetwork: ad.spec?.externalNetwork ?? '',
    // SEC-11: the controller's owner mark (only it writes ARPAdvertisements, ARP-11). An ElasticIP's
    // address is never moved to another node (FO-3), so it is held; anything else expires.
    expiryClass: ad.metadata?.labels?.[OWNER_LABELS.kind] === 'ElasticIP' ? 'held' : 'moveable',
  };
}

/** The network view validation reads, and FO-1's `spec.arp.announceOnMove`. */
export function networkView(network: ExternalNetwork): NetworkView {
  return { ...networkSpecView(network), announceOnMove: network.spec?.arp?.announceOnMove === true };
}
