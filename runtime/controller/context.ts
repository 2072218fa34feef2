/** What every reconciler shares: the REST client, the informer caches, the allocator, events, logs. */
import type {
  AddressPool,
  AllocationClaim,
  AllocationPool,
  ARPAdvertisement,
  BGPAdvertisement,
  BGPNodeState,
  BGPPeer,
  ElasticIP,
  ElasticIPAttachment,
  ExternalNetwork,
  NATGateway,
  NetworkInterface,
  ServiceLoadBalancer,
} from '../../api';
import {
  clusterRanges,
  parseIPv4,
  poolView,
  type ClusterRange,
  type NodeAddressSource,
  type PoolView,
} from '../../api/validation';
import { FieldManagers } from '../kube/apply';
import type { EventRecorder } from '../kube/events';
import type { Informer, InformerOptions } from '../kube/informer';
import { SharedInformers } from '../kube/shared-informers';
import { indexBy, type IndexFunc } from '../kube/store';
import { silentLogger, type Logger } from '../kube/log';
import type { RuntimeMetrics } from '../kube/metrics';
import { JuneauResources, Resources, type ResourceType } from '../kube/resources';
import type { RestClient } from '../kube/rest';
import { objectKey, type KubeObject, type ObjectMeta, type Stored } from '../kube/types';
import { Allocator } from './allocator/allocator';
import { AllocatorIndex } from './allocator/allocator-index';
import { feedAllocatorIndex } from './allocator/index-feed';
import { claimRecordOf } from './allocator/claims';
import { withdrawBeforeRelease } from './arp/claim-guard';
import { ownerKeysOf } from './arp/names';
import type { WriteContext } from './arp/owned';
import { restClaimStore } from './resources';
import type { NamespaceView } from './allocator/pool-choice';
import { SERVICE_NAME_LABEL, type EndpointSliceView, type ServiceView } from '../kube/service-views';
import { podElasticIPs, podView, type PodObject } from './pods/views';
import { watch, type Watch } from './reconciler';
import type { Lease } from '../kube/leader-election';
import { INSTALL } from '../../api/constants';
import { AGENT_LEASE_SELECTOR, AgentLeaseTracker } from './nodes/agent-leases';

export type ServiceObject = ServiceView &
  KubeObject & { status?: { loadBalancer?: { ingress?: Array<{ ip?: string }> } } };
export type EndpointSliceObject = EndpointSliceView & KubeObject;
/** A Node as the cache keeps it (nodeView): its name, labels, pod CIDRs, addresses and Ready condition. */
export type NodeObject = NodeAddressSource &
  KubeObject & {
    metadata: ObjectMeta;
    status?: { conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }> };
  };
export type { PodObject };
/** A ServiceCIDR as the cache keeps it (serviceCIDRView): its name and spec.cidrs. */
export type ServiceCIDRObject = KubeObject & { metadata: ObjectMeta; spec?: { cidrs?: string[] } };
/** A Namespace as the cache keeps it (namespaceCacheView): its name and labels. */
export type NamespaceObject = KubeObject & { metadata: ObjectMeta };
type K<T> = Stored<T>;

export interface Caches {
  readonly services: Informer<ServiceObject>;
  readonly endpointSlices: Informer<EndpointSliceObject>;
  readonly serviceLoadBalancers: Informer<K<ServiceLoadBalancer>>;
  readonly arpAdvertisements: Informer<K<ARPAdvertisement>>;
  readonly externalNetworks: Informer<K<ExternalNetwork>>;
  readonly addressPools: Informer<K<AddressPool>>;
  readonly allocationPools: Informer<K<AllocationPool>>;
  readonly allocationClaims: Informer<K<AllocationClaim>>;
  readonly elasticIPs: Informer<K<ElasticIP>>;
  readonly elasticIPAttachments: Informer<K<ElasticIPAttachment>>;
  readonly networkInterfaces: Informer<K<NetworkInterface>>;
  readonly pods: Informer<PodObject>;
  /** H2, H5: the Nodes, for the cluster's own addresses (clusterRangesOf); the ARP-5 webhook reads them too. */
  readonly nodes: Informer<NodeObject>;
  /**
   * H5: the ServiceCIDRs, for the Service ranges among the cluster's own addresses (clusterRangesOf).
   * Absent when the API server does not serve them (before Kubernetes 1.33): no Service range is known.
   */
  readonly serviceCIDRs?: Informer<ServiceCIDRObject>;
  /** SEC-9: the Namespaces' names and labels, for the networks' spec.allowedNamespaces (namespaceViewOf). */
  readonly namespaces: Informer<NamespaceObject>;
  /** FO-3: the agents' per-node Leases in the install namespace. */
  readonly agentLeases: Informer<Lease>;
  /** BGP-1..3, BGP-7: the peers, the advertisements and the agents' per-node reports (bgp/). */
  readonly bgpPeers: Informer<K<BGPPeer>>;
  readonly bgpAdvertisements: Informer<K<BGPAdvertisement>>;
  readonly bgpNodeStates: Informer<K<BGPNodeState>>;
  /** NGW-1..4: the NATGateways. */
  readonly natGateways: Informer<K<NATGateway>>;
}

export interface ControllerContext {
  readonly rest: RestClient;
  readonly caches: Caches;
  readonly index: AllocatorIndex;
  readonly allocator: Allocator;
  readonly recorder: EventRecorder | undefined;
  readonly logger: Logger;
  readonly fieldManager: 'juneau-controller';
  /** FO-3: nodes whose agent Lease expired (nodes/agent-leases.ts). */
  readonly agentLiveness: AgentLeaseTracker;
  /** Where every cache of this controller comes from, one informer per kind (the webhooks' too). */
  readonly informers: SharedInformers;
  /** ARP-2/4/5 before each ARPAdvertisement create (arp/owned.ts WriteContext); absent: not checked here. */
  readonly admitAdvertisement?: ControllerContextOptions['admitAdvertisement'];
}

/** Index names of the shared caches. */
export const CACHE_INDEX = {
  /** EndpointSlices by `<namespace>/<kubernetes.io/service-name>`: a pass reads its Service's slices, not all of them. */
  byService: 'service',
  /** ARPAdvertisements by spec.address as addressKey spells it (ARP-4: the duplicate detector and the webhook). */
  byAddress: 'address',
  /** ElasticIPAttachments, NetworkInterfaces and Pods (by their annotations, EN-8) by the ElasticIP they name. */
  byElasticIP: 'elasticIP',
  /** ElasticIPAttachments by their NetworkInterface. */
  byNetworkInterface: 'networkInterface',
  /** NetworkInterfaces by their Pod. */
  byPod: 'pod',
} as const;

/** `<namespace>/<name>` of a referenced object, when the reference names one. */
export const refKey = (namespace: string | undefined, name: string | undefined): string | undefined =>
  namespace && name ? `${namespace}/${name}` : undefined;

/** One spelling per address (the schema requires dotted-quad IPv4; anything else is kept as written). */
export const addressKey = (address: string | undefined): string | undefined => {
  const n = address === undefined ? undefined : parseIPv4(address);
  return n !== undefined ? String(n) : address;
};

/** CACHE_INDEX.byAddress; one function, so the readers of the shared informer ask for the same index. */
export const advertisementsByAddress: IndexFunc<KubeObject> = indexBy((a) =>
  addressKey((a as K<ARPAdvertisement>).spec?.address),
);

/**
 * The Pod cache's options, for whoever asks the shared informers first (this file or
 * ./webhook/listers.ts): only the fields the rules read (H4, pods/views.ts podView), indexed by
 * the ElasticIPs the annotations name (EN-8; the attachment webhook's EIP-5 check, L9).
 */
export const podCacheOptions: Partial<InformerOptions<PodObject>> = {
  transform: podView,
  indexers: { [CACHE_INDEX.byElasticIP]: podElasticIPs },
};

/**
 * A Node as the cache keeps it: what clusterRanges and the ARP-5 webhook read, its labels (the
 * BGPPeer and BGPAdvertisement node selectors, BGP-1..3; a NATGateway's nodeSelector, NGW-3) and the
 * Ready condition a NATGateway's gateway choice reads; not its images, other conditions or capacity.
 */
function nodeView(n: NodeObject): NodeObject {
  const { name, uid, resourceVersion, creationTimestamp, deletionTimestamp, labels } = n.metadata;
  const meta = { name, uid, resourceVersion, creationTimestamp, deletionTimestamp, labels };
  const { podCIDR, podCIDRs } = n.spec ?? {};
  const addresses = n.status?.addresses;
  const ready = n.status?.conditions?.filter((c) => c.type === 'Ready').map(({ type, status }) => ({ type, status }));
  return {
    apiVersion: n.apiVersion,
    kind: n.kind,
    metadata: Object.fromEntries(Object.entries(meta).filter(([, v]) => v !== undefined)) as ObjectMeta,
    spec: { ...(podCIDR ? { podCIDR } : {}), ...(podCIDRs ? { podCIDRs } : {}) },
    status: { ...(addresses ? { addresses } : {}), ...(ready?.length ? { conditions: ready } : {}) },
  };
}

/** The Node cache's options, for whoever asks the shared informers first (this file or ./webhook/listers.ts). */
export const nodeCacheOptions: Partial<InformerOptions<NodeObject>> = { transform: nodeView };

/** A ServiceCIDR as the cache keeps it: its name, uid, resourceVersion and spec.cidrs. */
function serviceCIDRView(c: ServiceCIDRObject): ServiceCIDRObject {
  const { name, uid, resourceVersion } = c.metadata;
  const meta = { name, uid, resourceVersion };
  return {
    apiVersion: c.apiVersion,
    kind: c.kind,
    metadata: Object.fromEntries(Object.entries(meta).filter(([, v]) => v !== undefined)) as ObjectMeta,
    spec: { cidrs: c.spec?.cidrs ?? [] },
  };
}

/** The ServiceCIDR cache's options, for whoever asks the shared informers first (this file or ./webhook/listers.ts). */
export const serviceCIDRCacheOptions: Partial<InformerOptions<ServiceCIDRObject>> = { transform: serviceCIDRView };

/** ServiceCIDRs as clusterRanges reads them. */
export const serviceCIDRSources = (items: readonly ServiceCIDRObject[]) =>
  items.map((c) => ({ name: c.metadata.name ?? '', cidrs: c.spec?.cidrs ?? [] }));

/** A Namespace as the cache keeps it: its name, uid, resourceVersion and labels, not its annotations or status. */
function namespaceCacheView(n: NamespaceObject): NamespaceObject {
  const { name, uid, resourceVersion, labels } = n.metadata;
  const meta = { name, uid, resourceVersion, labels };
  return {
    apiVersion: n.apiVersion,
    kind: n.kind,
    metadata: Object.fromEntries(Object.entries(meta).filter(([, v]) => v !== undefined)) as ObjectMeta,
  };
}

/** The Namespace cache's options, for whoever asks the shared informers first (this file or ./webhook/listers.ts). */
export const namespaceCacheOptions: Partial<InformerOptions<NamespaceObject>> = { transform: namespaceCacheView };

/**
 * SEC-9: the namespace `name` as the allocation rules read it. One not (yet) in the cache has no
 * labels: a selector that needs one does not select it.
 */
export function namespaceViewOf(caches: Pick<Caches, 'namespaces'>, name: string | undefined): NamespaceView {
  return { name: name ?? '', labels: caches.namespaces.get(undefined, name ?? '')?.metadata.labels };
}

/**
 * H2, H5: the cluster's own addresses as the caches show them now: the Nodes' addresses and pod
 * CIDRs, the Service ranges (the networking.k8s.io/v1 ServiceCIDRs' spec.cidrs; none when the API
 * server does not serve them, before Kubernetes 1.33) and the API servers (the
 * `default/kubernetes` EndpointSlices).
 */
export function clusterRangesOf(caches: Pick<Caches, 'nodes' | 'endpointSlices' | 'serviceCIDRs'>): ClusterRange[] {
  const apiServers = caches.endpointSlices
    .byIndex(CACHE_INDEX.byService, 'default/kubernetes')
    .filter((s) => s.addressType === 'IPv4')
    .flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses ?? []));
  const serviceCIDRs = serviceCIDRSources(caches.serviceCIDRs?.list() ?? []);
  return clusterRanges({ nodes: caches.nodes.list(), serviceCIDRs, apiServers });
}

/**
 * The shared caches, not started: whoever runs reconcilers on them starts those it reads. From
 * `informers` when given (one informer per kind for the whole process, ./webhook/listers.ts too).
 */
export function createCaches(
  rest: RestClient,
  logger: Logger,
  informers = new SharedInformers(rest, logger),
  serviceCIDRsServed = true,
): Caches {
  const informer = <T extends KubeObject>(type: ResourceType, more: Partial<InformerOptions<T>> = {}) =>
    informers.informer<T>({ type, logger, ...more });
  return {
    services: informer<ServiceObject>(Resources.services, { transform: serviceView }),
    endpointSlices: informer<EndpointSliceObject>(Resources.endpointSlices, {
      transform: endpointSliceView,
      indexers: {
        [CACHE_INDEX.byService]: indexBy((s) => {
          const service = s.metadata?.labels?.[SERVICE_NAME_LABEL];
          return service ? `${s.metadata?.namespace}/${service}` : undefined;
        }),
      },
    }),
    serviceLoadBalancers: informer(JuneauResources.serviceLoadBalancers),
    // Every ARPAdvertisement, not only ours: the duplicate detector reads this cache too (ARP-4),
    // and the reconcilers verify an object's owner marks before they count it as theirs (NAME-1).
    arpAdvertisements: informer<K<ARPAdvertisement>>(JuneauResources.arpAdvertisements, {
      indexers: { [CACHE_INDEX.byAddress]: advertisementsByAddress },
    }),
    externalNetworks: informer(JuneauResources.externalNetworks),
    addressPools: informer(JuneauResources.addressPools),
    allocationPools: informer(JuneauResources.allocationPools),
    allocationClaims: informer(JuneauResources.allocationClaims),
    // The indexes map a change back to the objects it affects: work proportional to the change.
    elasticIPs: informer(JuneauResources.elasticIPs),
    elasticIPAttachments: informer<K<ElasticIPAttachment>>(JuneauResources.elasticIPAttachments, {
      indexers: {
        [CACHE_INDEX.byElasticIP]: indexBy((a) => refKey(a.metadata.namespace, a.spec.elasticIP)),
        [CACHE_INDEX.byNetworkInterface]: indexBy((a) => refKey(a.metadata.namespace, a.spec.networkInterface)),
      },
    }),
    networkInterfaces: informer<K<NetworkInterface>>(JuneauResources.networkInterfaces, {
      indexers: {
        [CACHE_INDEX.byElasticIP]: indexBy((n) => refKey(n.metadata.namespace, n.spec.elasticIP)),
        [CACHE_INDEX.byPod]: indexBy((n) => refKey(n.metadata.namespace, n.spec.podName)),
      },
    }),
    pods: informer<PodObject>(Resources.pods, podCacheOptions),
    nodes: informer<NodeObject>(Resources.nodes, nodeCacheOptions),
    ...(serviceCIDRsServed
      ? { serviceCIDRs: informer<ServiceCIDRObject>(Resources.serviceCIDRs, serviceCIDRCacheOptions) }
      : {}),
    namespaces: informer<NamespaceObject>(Resources.namespaces, namespaceCacheOptions),
    agentLeases: informer<Lease>(Resources.leases, {
      namespace: INSTALL.namespace,
      labelSelector: AGENT_LEASE_SELECTOR,
    }),
    bgpPeers: informer(JuneauResources.bgpPeers),
    bgpAdvertisements: informer(JuneauResources.bgpAdvertisements),
    bgpNodeStates: informer(JuneauResources.bgpNodeStates),
    natGateways: informer(JuneauResources.natGateways),
  };
}

/**
 * A Service as the cache keeps it: its metadata and status, and of its spec what the rules read
 * (ServiceView) — not its selector, cluster IPs, node ports or session affinity.
 */
function serviceView(s: ServiceObject): ServiceObject {
  const spec = s.spec;
  if (!spec) return s;
  const { type, loadBalancerClass, ports, externalTrafficPolicy, ipFamilies } = spec;
  return { ...s, spec: { type, loadBalancerClass, ports, externalTrafficPolicy, ipFamilies } };
}

/** An EndpointSlice as the cache keeps it: each endpoint's addresses, conditions and node (EndpointSliceView). */
function endpointSliceView(s: EndpointSliceObject): EndpointSliceObject {
  const endpoints = s.endpoints?.map(({ addresses, conditions, nodeName }) => ({ addresses, conditions, nodeName }));
  return { ...s, endpoints };
}

export interface ControllerContextOptions {
  readonly rest: RestClient;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  /** Gets each AddressPool's usage as the index changes. */
  readonly metrics?: RuntimeMetrics;
  /** FO-3: added to an agent Lease's duration before its node counts as dead. @default 0 */
  readonly agentLeaseGraceMs?: number;
  /** The process's informers, shared with the webhooks' caches. @default a new set over `rest` */
  readonly informers?: SharedInformers;
  /** The webhook's ARP-2/4/5 checks, run before the controller's own creates skip the webhook (M1). */
  readonly admitAdvertisement?: WriteContext['admitAdvertisement'];
  /** H5: whether the API server serves ServiceCIDRs (kube/service-cidrs.ts); false leaves their cache out. @default true */
  readonly serviceCIDRsServed?: boolean;
}

/**
 * The context as a controller process builds it: the caches, the allocation index fed from them
 * (ALLOC-1), and the allocator that withdraws a holder's ARPAdvertisement before releasing its
 * address (ARP-4). Caches are not started.
 */
export function createControllerContext(options: ControllerContextOptions): ControllerContext {
  const { rest } = options;
  const logger = options.logger ?? silentLogger;
  const informers = options.informers ?? new SharedInformers(rest, logger);
  const caches = createCaches(rest, logger, informers, options.serviceCIDRsServed ?? true);
  const index = new AllocatorIndex();
  feedAllocatorIndex(caches, index, options.metrics);
  const allocator = new Allocator(index, restClaimStore(rest, FieldManagers.controller), withdrawBeforeRelease(rest));
  const agentLiveness = new AgentLeaseTracker(caches.agentLeases, undefined, options.agentLeaseGraceMs ?? 0);
  return {
    rest,
    caches,
    index,
    allocator,
    recorder: options.recorder,
    logger,
    fieldManager: FieldManagers.controller,
    agentLiveness,
    informers,
    admitAdvertisement: options.admitAdvertisement,
  };
}

/** Every cache as a list, to start, stop or check them together. */
export const allCaches = (caches: Caches): Array<Informer<KubeObject>> =>
  (Object.values(caches) as Array<Informer<KubeObject> | undefined>).filter((c) => c !== undefined);

/** Every AddressPool as validation reads it, by name. */
export function poolViews(caches: Caches): Map<string, PoolView> {
  return new Map(caches.addressPools.list().map((p) => [objectKey(p), poolView(p)]));
}

/**
 * The changes that affect an ElasticIP `<namespace>/<name>` and so every reconciler reading it: a
 * change of the ElasticIP, of an attachment or NIC naming it, of a Pod owning such a NIC or the NIC
 * of such an attachment (a terminating Pod's NICs count as being deleted, EIP-11 rule 2; a stopped
 * Pod's serve nothing, H1) and of its network. `readersOf`
 * maps the ElasticIP's key to the keys of one reconciler (itself, its NICs, Pods waiting for it).
 */
export function elasticIPWatches(c: Caches, readersOf: (elasticIP: string) => Iterable<string | undefined>): Watch[] {
  const of = (key: string | undefined) => (key ? [...readersOf(key)] : []);
  const ofNetwork = (network: string) =>
    c.elasticIPs
      .list()
      .filter((e) => e.spec.externalNetwork === network)
      .flatMap((e) => of(objectKey(e)));
  return [
    watch(c.elasticIPs, (e) => of(objectKey(e))),
    // M7: the attachments of the same NIC too; the oldest of them is the one that may use it.
    watch(c.elasticIPAttachments, (a) =>
      c.elasticIPAttachments
        .byIndex(CACHE_INDEX.byNetworkInterface, refKey(a.metadata.namespace, a.spec.networkInterface) ?? '')
        .concat(a)
        .flatMap((x) => of(refKey(x.metadata.namespace, x.spec.elasticIP))),
    ),
    watch(c.networkInterfaces, (n) => of(refKey(n.metadata.namespace, n.spec.elasticIP))),
    // H1: a Pod's phase decides whether its NICs may use an ElasticIP, directly or through NAT.
    watch(c.pods, (p) =>
      c.networkInterfaces
        .byIndex(CACHE_INDEX.byPod, objectKey(p))
        .flatMap((n) => [
          ...of(refKey(n.metadata.namespace, n.spec.elasticIP)),
          ...c.elasticIPAttachments
            .byIndex(CACHE_INDEX.byNetworkInterface, objectKey(n))
            .flatMap((a) => of(refKey(a.metadata.namespace, a.spec.elasticIP))),
        ]),
    ),
    watch(c.externalNetworks, (n) => ofNetwork(objectKey(n))),
  ];
}

/** An object that takes an address from a network's pools: a ServiceLoadBalancer or an ElasticIP. */
type AddressHolder = Stored<{ spec: { externalNetwork?: string }; status?: { phase?: string } }>;

/**
 * The changes that affect every holder of an address of `kind` (its objects in `holders`): a
 * change of an AddressPool its network names, of its claim (and on a released address every
 * Pending one: that address may be what it waits for, NoFreeAddress or RequestedIPInUse), and of
 * its ARPAdvertisement (or, NAME-1, the one standing on its name, which it may be waiting for),
 * of a Node or ServiceCIDR (H5: the cluster's own addresses are never handed out), and of a Namespace (SEC-9:
 * its labels decide which networks its holders may use).
 */
export function addressHolderWatches(
  c: Caches,
  kind: 'ServiceLoadBalancer' | 'ElasticIP' | 'NATGateway',
  holders: { list(): readonly AddressHolder[] },
): Watch[] {
  const onNetwork = (network: string) =>
    holders
      .list()
      .filter((h) => h.spec.externalNetwork === network)
      .map(objectKey);
  const undecided = () =>
    holders
      .list()
      .filter((o) => o.status?.phase === 'Pending' || o.status?.phase === 'Error')
      .map(objectKey);
  return [
    watch(c.addressPools, (p) =>
      c.externalNetworks
        .list()
        .filter((n) => n.spec.addressPools.includes(objectKey(p)))
        .flatMap((n) => onNetwork(objectKey(n))),
    ),
    watch(c.allocationClaims, (claim, deleted) => {
      const record = claimRecordOf(claim);
      const h = record?.holder;
      const keys = [h?.kind === kind ? refKey(h.namespace, h.name) : undefined];
      if (deleted && record?.pool.kind === 'AddressPool')
        keys.push(
          ...holders
            .list()
            .filter((o) => o.status?.phase === 'Pending')
            .map(objectKey),
        );
      return keys;
    }),
    watch(c.arpAdvertisements, (ad) => ownerKeysOf(ad, kind)),
    // H5: a Node's addresses or pod CIDRs, and the ServiceCIDRs, decide which addresses may be
    // handed out; only holders still without an address (or refused one) are affected.
    ...[c.nodes, c.serviceCIDRs].flatMap((informer) =>
      informer ? [watch<KubeObject>(informer as unknown as Informer<KubeObject>, undecided)] : [],
    ),
    // SEC-9: a namespace's labels decide which networks its holders may use.
    watch(c.namespaces, (ns) =>
      holders
        .list()
        .filter((o) => o.metadata.namespace === ns.metadata.name)
        .map(objectKey),
    ),
  ];
}
