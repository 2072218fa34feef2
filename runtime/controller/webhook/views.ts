import type { LabelSelectorView } from '../../../api/validation';
import type { BGPPeerObject } from './rules/bgp';

/**
 * The shapes the webhook rules read, reduced to the fields they use. Juneau's api/ types and the
 * wire objects of runtime/kube both fit them, so informer caches can be passed as they are.
 */

export interface ObjectMetaView {
  readonly name?: string;
  readonly namespace?: string;
  readonly deletionTimestamp?: string | Date;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface ObjectView {
  readonly metadata?: ObjectMetaView;
}

export interface ExternalNetworkObject extends ObjectView {
  readonly spec: {
    readonly type: string;
    readonly addressPools: readonly string[];
    /** SEC-9: the namespaces that may use the network. */
    readonly allowedNamespaces?: LabelSelectorView;
  };
}

export interface ElasticIPObject extends ObjectView {
  readonly spec: { readonly externalNetwork: string };
}

/** SEC-9: a Namespace's name and labels (metadata). */
export type NamespaceObject = ObjectView;

export interface AddressPoolObject extends ObjectView {
  readonly spec: {
    readonly advertiseMode: string;
    readonly addresses: readonly string[];
    readonly avoidBuggyIPs?: boolean;
  };
}

export interface ARPAdvertisementObject extends ObjectView {
  readonly spec: { readonly externalNetwork: string; readonly address: string; readonly nodeName: string };
}

export interface NodeObject extends ObjectView {
  /** H5: the pod CIDRs, which an AddressPool is warned about overlapping. */
  readonly spec?: { readonly podCIDR?: string; readonly podCIDRs?: readonly string[] };
  readonly status?: { readonly addresses?: ReadonlyArray<{ readonly type: string; readonly address: string }> };
}

/** H5: a networking.k8s.io/v1 ServiceCIDR; its spec.cidrs are Service ranges. */
export interface ServiceCIDRObject extends ObjectView {
  readonly spec?: { readonly cidrs?: readonly string[] };
}

export interface ElasticIPAttachmentObject extends ObjectView {
  readonly spec: { readonly elasticIP: string; readonly networkInterface: string };
}

export interface NetworkInterfaceObject extends ObjectView {
  readonly spec: { readonly podName: string; readonly interface: string; readonly elasticIP?: string };
}

export type PodObject = ObjectView;

/**
 * A read-only view of one kind: an informer cache (`list()` of everything) fits, and so does a
 * live lister that asks the API server for one namespace (`list(namespace)`). Callers always
 * filter by namespace themselves, so a lister may return more than asked for.
 */
export interface Lister<T> {
  list(namespace?: string): readonly T[] | Promise<readonly T[]>;
}

/** What the webhooks read. main.ts passes its informers; tests may pass live listers. */
export interface WebhookCaches {
  readonly addressPools: Lister<AddressPoolObject>;
  readonly externalNetworks: Lister<ExternalNetworkObject>;
  readonly arpAdvertisements: Lister<ARPAdvertisementObject>;
  /** BGP-9: the BGPPeers (localPref on an eBGP-only advertisement); absent, none is known. */
  readonly bgpPeers?: Lister<BGPPeerObject>;
  /**
   * The ARPAdvertisements for one address, whatever its spelling (an index: ARP-4 reads only
   * these). Absent: the rule walks `arpAdvertisements.list()`, which with 10,000 objects cost
   * tens of milliseconds per request on a loaded 2-core machine (bench/scale).
   */
  readonly arpAdvertisementsAt?: (address: string) => readonly ARPAdvertisementObject[];
  readonly nodes: Lister<NodeObject>;
  /** H5: the ServiceCIDRs (their spec.cidrs are the Service ranges); absent, no Service range is known. */
  readonly serviceCIDRs?: Lister<ServiceCIDRObject>;
  /** SEC-9: the Namespaces' labels, for the networks' spec.allowedNamespaces; absent, no namespace has labels. */
  readonly namespaces?: Lister<NamespaceObject>;
  readonly elasticIPAttachments: Lister<ElasticIPAttachmentObject>;
  readonly networkInterfaces: Lister<NetworkInterfaceObject>;
  /** Read when an ElasticIPAttachment is created (EIP-5), for one namespace, unless `podsNamingElasticIP` answers. */
  readonly pods: Lister<PodObject>;
  /**
   * L9: the Pods of a namespace whose annotations name an ElasticIP (an index of the controller's
   * Pod informer). Absent: the rule reads `pods.list(namespace)`, one LIST per request for a live lister.
   */
  readonly podsNamingElasticIP?: (namespace: string, elasticIP: string) => readonly PodObject[];
  /**
   * The usernames allowed to write ServiceLoadBalancers: the controller's own (SLB-1), learned at
   * start from a SelfSubjectReview. Absent: nobody is known yet, and every write is refused.
   */
  readonly serviceLoadBalancerWriters?: () => readonly string[];
  /** The usernames allowed to create and change ARPAdvertisements: the controller's own (ARP-11); absent, every write is refused. */
  readonly arpAdvertisementWriters?: () => readonly string[];
  /**
   * Informer-backed caches: false until every cache has listed once. Until then the server answers
   * no admission (an empty cache would allow what it should refuse); absent: always ready.
   */
  readonly hasSynced?: () => boolean;
}

/** What a rule reads: the named caches, each listed once by its handler (handlers.ts). */
export type CacheSnapshot<K extends keyof WebhookCaches> = {
  readonly [P in K]: NonNullable<WebhookCaches[P]> extends Lister<infer T> ? readonly T[] : never;
};

export const nameOf = (object: ObjectView | undefined): string => object?.metadata?.name ?? '';

export const inNamespace = <T extends ObjectView>(objects: readonly T[], namespace: string | undefined): T[] =>
  objects.filter((o) => (o.metadata?.namespace ?? '') === (namespace ?? ''));
