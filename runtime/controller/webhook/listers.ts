/**
 * Listers that ask the API server at admission time instead of reading an informer: exact
 * (no watch lag), one request per admission. Used for Pods (read only when an ElasticIPAttachment
 * is created, for one namespace; a cluster-wide Pod informer would cost far more) and by tests.
 */
import { addressPoolKind, arpAdvertisementKind, elasticIPAttachmentKind, externalNetworkKind, networkInterfaceKind } from '../../../api';
import { juneauResource, Resources, type ResourceType } from '../../kube/resources';
import type { RestClient } from '../../kube/rest';
import type { KubeObject } from '../../kube/types';
import type { Lister, WebhookCaches } from './views';

const juneau = juneauResource;

/** The resource types the webhooks read. */
export const WebhookResources = {
  addressPools: juneau(addressPoolKind),
  externalNetworks: juneau(externalNetworkKind),
  arpAdvertisements: juneau(arpAdvertisementKind),
  elasticIPAttachments: juneau(elasticIPAttachmentKind),
  networkInterfaces: juneau(networkInterfaceKind),
  nodes: Resources.nodes,
  pods: Resources.pods,
} as const;

/** Lists one kind from the API server on every call (one namespace when given and namespaced). */
export function liveLister<T>(rest: RestClient, type: ResourceType): Lister<T> {
  return {
    async list(namespace?: string) {
      const list = await rest.list<T & KubeObject>(type, { namespace: type.namespaced ? namespace : undefined });
      return list.items;
    },
  };
}

/** Every cache the webhooks read, as live listers. */
export function liveWebhookCaches(rest: RestClient): WebhookCaches {
  return {
    addressPools: liveLister(rest, WebhookResources.addressPools),
    externalNetworks: liveLister(rest, WebhookResources.externalNetworks),
    arpAdvertisements: liveLister(rest, WebhookResources.arpAdvertisements),
    nodes: liveLister(rest, WebhookResources.nodes),
    elasticIPAttachments: liveLister(rest, WebhookResources.elasticIPAttachments),
    networkInterfaces: liveLister(rest, WebhookResources.networkInterfaces),
    pods: liveLister(rest, WebhookResources.pods),
  };
}
