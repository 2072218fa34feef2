/**
 * What the webhooks read, two ways:
 * - `informerWebhookCaches`: informers (list once, then watch), started on every replica, leader
 *   or not, because every replica serves admission. An admission reads memory, not the API server:
 *   the cost no longer grows with the number of objects per request. The price is watch lag: an
 *   object created a few milliseconds earlier may not be seen yet (ARP-4's duplicate check is a
 *   second line behind the allocator's claims, ALLOC-1, and the duplicate detector reports what
 *   slips through).
 *   Pods too (L9): the controller's own Pod informer, trimmed (H4) and indexed by the ElasticIPs
 *   the annotations name, so an ElasticIPAttachment CREATE no longer LISTs its namespace's Pods.
 * - live listers, which ask the API server at admission time: exact, one LIST per read. Used by
 *   tests and bench/admission as the baseline.
 */
import { waitForCacheSync, type Informer } from '../../kube/informer';
import { SharedInformers } from '../../kube/shared-informers';
import type { Logger } from '../../kube/log';
import { JuneauResources, Resources, type ResourceType } from '../../kube/resources';
import type { RestClient } from '../../kube/rest';
import type { KubeObject } from '../../kube/types';
import {
  addressKey,
  advertisementsByAddress,
  CACHE_INDEX,
  nodeCacheOptions,
  podCacheOptions,
  namespaceCacheOptions,
  serviceCIDRCacheOptions,
  type NamespaceObject,
  type ServiceCIDRObject,
  type NodeObject,
  type PodObject,
} from '../context';
import type { ARPAdvertisementObject, Lister, WebhookCaches } from './views';

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
    addressPools: liveLister(rest, JuneauResources.addressPools),
    externalNetworks: liveLister(rest, JuneauResources.externalNetworks),
    arpAdvertisements: liveLister(rest, JuneauResources.arpAdvertisements),
    bgpPeers: liveLister(rest, JuneauResources.bgpPeers),
    nodes: liveLister(rest, Resources.nodes),
    serviceCIDRs: liveLister(rest, Resources.serviceCIDRs),
    namespaces: liveLister(rest, Resources.namespaces),
    elasticIPAttachments: liveLister(rest, JuneauResources.elasticIPAttachments),
    networkInterfaces: liveLister(rest, JuneauResources.networkInterfaces),
    pods: liveLister(rest, Resources.pods),
  };
}

/** Informer-backed webhook caches and their lifecycle. */
export interface WebhookCacheSet {
  /** Reads answer from memory; `hasSynced()` is false until every informer has listed once. */
  readonly caches: WebhookCaches;
  start(): void;
  /** Resolves once every informer has synced; rejects after `timeoutMs` naming those that did not. */
  waitForSync(timeoutMs?: number): Promise<void>;
  hasSynced(): boolean;
  stop(): Promise<void>;
}

/** One spelling per address (kept here for the webhook's readers; defined with the index it keys). */
export { addressKey };

/**
 * One informer per kind the webhooks read cluster-wide. From `informers` when given: the
 * controller's own (main.ts), so a kind both read is cached once. No ServiceCIDR informer when
 * the API server does not serve them (`serviceCIDRsServed` false, kube/service-cidrs.ts).
 */
export function informerWebhookCaches(
  rest: RestClient,
  logger?: Logger,
  shared = new SharedInformers(rest, logger),
  serviceCIDRsServed = true,
): WebhookCacheSet {
  const informer = (type: ResourceType, indexers = {}) => shared.informer<KubeObject>({ type, logger, indexers });
  const informers = {
    addressPools: informer(JuneauResources.addressPools),
    externalNetworks: informer(JuneauResources.externalNetworks),
    // ARP-4 asks for the objects of one address: an index, not a walk over all of them.
    arpAdvertisements: informer(JuneauResources.arpAdvertisements, {
      [CACHE_INDEX.byAddress]: advertisementsByAddress,
    }),
    bgpPeers: informer(JuneauResources.bgpPeers),
    nodes: shared.informer<NodeObject>({ type: Resources.nodes, logger, ...nodeCacheOptions }),
    namespaces: shared.informer<NamespaceObject>({ type: Resources.namespaces, logger, ...namespaceCacheOptions }),
    elasticIPAttachments: informer(JuneauResources.elasticIPAttachments),
    networkInterfaces: informer(JuneauResources.networkInterfaces),
    pods: shared.informer<PodObject>({ type: Resources.pods, logger, ...podCacheOptions }),
  };
  const serviceCIDRs = serviceCIDRsServed
    ? shared.informer<ServiceCIDRObject>({ type: Resources.serviceCIDRs, logger, ...serviceCIDRCacheOptions })
    : undefined;
  const all = [...Object.values(informers), ...(serviceCIDRs ? [serviceCIDRs] : [])];
  const hasSynced = () => all.every((i) => i.hasSynced);
  // The wire objects are the kinds' own shapes; the views name the fields the rules read.
  const lister = <T>(i: Informer<KubeObject>): Lister<T> => ({
    list: (namespace?: string) => i.list(namespace) as unknown as T[],
  });
  return {
    caches: {
      addressPools: lister(informers.addressPools),
      externalNetworks: lister(informers.externalNetworks),
      arpAdvertisements: lister(informers.arpAdvertisements),
      arpAdvertisementsAt: (address) =>
        informers.arpAdvertisements.byIndex(
          CACHE_INDEX.byAddress,
          addressKey(address) ?? '',
        ) as unknown as ARPAdvertisementObject[],
      bgpPeers: lister(informers.bgpPeers),
      nodes: lister(informers.nodes as unknown as Informer<KubeObject>),
      ...(serviceCIDRs ? { serviceCIDRs: lister(serviceCIDRs as unknown as Informer<KubeObject>) } : {}),
      namespaces: lister(informers.namespaces as unknown as Informer<KubeObject>),
      elasticIPAttachments: lister(informers.elasticIPAttachments),
      networkInterfaces: lister(informers.networkInterfaces),
      pods: lister(informers.pods as unknown as Informer<KubeObject>),
      podsNamingElasticIP: (namespace, elasticIP) =>
        informers.pods.byIndex(CACHE_INDEX.byElasticIP, `${namespace}/${elasticIP}`),
      hasSynced,
    },
    start: () => all.forEach((i) => i.start()),
    waitForSync: (timeoutMs) => waitForCacheSync(all, timeoutMs),
    hasSynced,
    stop: async () => void (await Promise.all(all.map((i) => i.stop()))),
  };
}
