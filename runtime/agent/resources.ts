/** The Juneau kinds the agent reads, as REST resource types, and their views for arp/desired.ts. */
import { addressPoolKind, arpAdvertisementKind, externalNetworkKind } from '../../api';
import type { AddressPool, ARPAdvertisement, ExternalNetwork } from '../../api';
import { juneauResource } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import type { AdvertisementView, NetworkView, PoolView } from './arp/desired';

const juneau = juneauResource;

export const AgentResources = {
  arpAdvertisements: juneau(arpAdvertisementKind),
  addressPools: juneau(addressPoolKind),
  externalNetworks: juneau(externalNetworkKind),
} as const;

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
  };
}

export function poolView(pool: AddressPool): PoolView {
  return {
    name: pool.metadata?.name ?? '',
    advertiseMode: pool.spec?.advertiseMode ?? '',
    addresses: pool.spec?.addresses ?? [],
  };
}

export function networkView(network: ExternalNetwork): NetworkView {
  return {
    name: network.metadata?.name ?? '',
    type: network.spec?.type ?? '',
    addressPools: network.spec?.addressPools ?? [],
    announceOnMove: network.spec?.arp?.announceOnMove === true,
  };
}
