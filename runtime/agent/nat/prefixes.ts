/**
 * NAT-2: the destinations an ElasticIP pod's traffic keeps its own address to, learned from the
 * cluster so that a stock install needs no list of CIDRs: every Node's `spec.podCIDRs` and its
 * InternalIP/ExternalIP addresses, the `networking.k8s.io/v1` ServiceCIDRs' `spec.cidrs`
 * (Kubernetes 1.33+), the endpoints of the `default/kubernetes` Service (the API servers, which are
 * not Nodes on a managed or external control plane: `kubernetes.default` is DNATed to them), plus what `--nat-cluster-cidrs` adds (a pod range a CNI does not record on
 * the Nodes, the Service range of an older cluster). Pure: objects in, the fewest LPM prefixes
 * covering their union out (runtime/agent/bpf/prefixes.ts), IPv4 only (the NAT is IPv4).
 */
import type { Prefix } from '../bpf/layout';
import { formatPrefix, poolItemsToPrefixes, prefixContains } from '../bpf/prefixes';

/** The fields of a Node this reads. */
export interface NodePrefixSource {
  readonly metadata?: { readonly name?: string };
  readonly spec?: { readonly podCIDR?: string; readonly podCIDRs?: readonly string[] };
  readonly status?: { readonly addresses?: ReadonlyArray<{ readonly type?: string; readonly address?: string }> };
}

/** The fields of a ServiceCIDR (networking.k8s.io/v1) this reads. */
export interface ServiceCIDRSource {
  readonly metadata?: { readonly name?: string };
  readonly spec?: { readonly cidrs?: readonly string[] };
}

/** The fields of an EndpointSlice (discovery.k8s.io/v1) this reads. */
export interface EndpointSliceSource {
  readonly metadata?: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly addressType?: string;
  readonly endpoints?: ReadonlyArray<{ readonly addresses?: readonly string[] }>;
}

export interface ClusterPrefixInputs {
  readonly nodes: readonly NodePrefixSource[];
  readonly serviceCIDRs: readonly ServiceCIDRSource[];
  /** The `default/kubernetes` Service's EndpointSlices: the API server addresses. @default [] */
  readonly apiServerSlices?: readonly EndpointSliceSource[];
  /** `--nat-cluster-cidrs`, already validated (parseClusterCidrs). */
  readonly extra: readonly string[];
}

export interface ClusterPrefixes {
  readonly prefixes: Prefix[];
  /** Values left out, each naming its object (logged; one odd object must not stop the rest). */
  readonly skipped: string[];
}

/** The node addresses that are the node itself (Hostname and DNS names are not addresses). */
const NODE_ADDRESS_TYPES = new Set(['InternalIP', 'ExternalIP']);
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const isIPv6 = (value: string) => value.includes(':');

/** `--nat-cluster-cidrs`: comma-separated CIDRs or single addresses (taken as /32). */
export function parseClusterCidrs(value: string | undefined): string[] {
  const items = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((c) => (c.includes('/') ? c : `${c}/32`));
  for (const item of items) {
    try {
      poolItemsToPrefixes([item]);
    } catch (err) {
      throw new Error(`--nat-cluster-cidrs: ${(err as Error).message}`);
    }
  }
  return items;
}

/**
 * L5: the one EndpointSlice kube-apiserver writes for the `kubernetes` Service. Its reconciler names
 * it `kubernetes` and labels it `kubernetes.io/service-name=kubernetes` only (read from a real
 * kube-apiserver 1.34 with kube-controller-manager, advertising a routable address; one that
 * advertises 127.0.0.1, as test/cluster's does, writes no slice at all): a slice of another name,
 * or one with an `endpointslice.kubernetes.io/managed-by` label (a controller's), is not the API
 * server's, and whoever can write EndpointSlices in `default` must not choose what keeps its address.
 */
export const API_SERVER_SLICE_NAME = 'kubernetes';
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';

/** Why `slice` is not the API server's own (L5), or undefined when it is. */
export function notApiServerSlice(slice: EndpointSliceSource): string | undefined {
  const name = slice.metadata?.name ?? '';
  if (name !== API_SERVER_SLICE_NAME)
    return `EndpointSlice default/${name}: not the API server's slice (named ${API_SERVER_SLICE_NAME}); ignored`;
  const managedBy = slice.metadata?.labels?.[MANAGED_BY_LABEL];
  if (managedBy !== undefined)
    return `EndpointSlice default/${name}: labelled ${MANAGED_BY_LABEL}=${managedBy}, which kube-apiserver does not set; ignored`;
  return undefined;
}

/** Where an in-cluster item comes from: H2 and H5 refuse bindings on some of them. */
type Origin = 'podRange' | 'nodeAddress' | 'serviceRange' | 'apiServer' | 'extra';

interface LearnedItem {
  readonly item: string;
  readonly origin: Origin;
  /** The object and field it comes from, for a refusal's reason. */
  readonly what: string;
}

/** Every in-cluster item of `input` with its origin, and what was left out. */
function learnedItems(input: ClusterPrefixInputs): { items: LearnedItem[]; skipped: string[] } {
  const items: LearnedItem[] = input.extra.map((item) => ({ item, origin: 'extra', what: '--nat-cluster-cidrs' }));
  const skipped: string[] = [];
  const take = (item: string, origin: Origin, what: string) => {
    if (isIPv6(item)) return; // the NAT is IPv4; a dual-stack cluster's IPv6 ranges are not its business
    try {
      poolItemsToPrefixes([item]);
      items.push({ item, origin, what });
    } catch (err) {
      skipped.push(`${what}: ${(err as Error).message}`);
    }
  };
  for (const node of input.nodes) {
    const name = `Node ${node.metadata?.name ?? ''}`;
    const pods = node.spec?.podCIDRs?.length ? node.spec.podCIDRs : node.spec?.podCIDR ? [node.spec.podCIDR] : [];
    for (const cidr of pods) take(cidr, 'podRange', `${name} spec.podCIDRs`);
    for (const a of node.status?.addresses ?? []) {
      if (!a.type || !NODE_ADDRESS_TYPES.has(a.type) || !a.address || isIPv6(a.address)) continue;
      if (IPV4.test(a.address)) take(`${a.address}/32`, 'nodeAddress', `${name} status.addresses ${a.type}`);
      else skipped.push(`${name} status.addresses ${a.type}: '${a.address}' is not an IPv4 address`);
    }
  }
  for (const s of input.serviceCIDRs)
    for (const cidr of s.spec?.cidrs ?? [])
      take(cidr, 'serviceRange', `ServiceCIDR ${s.metadata?.name ?? ''} spec.cidrs`);
  for (const slice of input.apiServerSlices ?? []) {
    const foreign = notApiServerSlice(slice);
    if (foreign) {
      skipped.push(foreign);
      continue;
    }
    if (slice.addressType !== 'IPv4') continue;
    const name = `EndpointSlice default/${slice.metadata?.name ?? ''} endpoints`;
    for (const e of slice.endpoints ?? [])
      for (const address of e.addresses ?? [])
        if (IPV4.test(address)) take(`${address}/32`, 'apiServer', name);
        else skipped.push(`${name}: '${address}' is not an IPv4 address`);
  }
  return { items, skipped };
}

/** The in-cluster prefixes of `input`, merged. */
export function clusterPrefixes(input: ClusterPrefixInputs): ClusterPrefixes {
  const { items, skipped } = learnedItems(input);
  return { prefixes: poolItemsToPrefixes(items.map((i) => i.item)), skipped };
}

/**
 * H2, H5: addresses no binding may take, with why: a Node's own address (InternalIP or
 * ExternalIP), an API server's, or (for a pod's side, `serviceRanges`) one in the Service range.
 * A NetworkInterface naming one would hand the node, the API server or a Service to an ElasticIP;
 * an ElasticIP that is one would take the node's (or API server's) traffic to a pod.
 */
export interface ReservedAddresses {
  /** Why `address` is not a pod's address, or undefined. */
  notPodAddress(address: string): string | undefined;
  /** Why `address` is not an ElasticIP this node may bind, or undefined. */
  notElasticIP(address: string): string | undefined;
}

/** The ReservedAddresses of `input` (its `extra` is not consulted: a pod range may be in it). */
export function reservedAddresses(input: Omit<ClusterPrefixInputs, 'extra'>): ReservedAddresses {
  const { items } = learnedItems({ ...input, extra: [] });
  const prefixed = items.map((i) => ({ ...i, prefix: poolItemsToPrefixes([i.item])[0] }));
  const find = (address: string, origins: readonly Origin[]) => {
    if (!IPV4.test(address)) return undefined;
    const hit = prefixed.find((i) => origins.includes(i.origin) && prefixContains(i.prefix, address));
    return (
      hit && `${address} is ${hit.origin === 'serviceRange' ? 'in the Service range' : 'the address'} of ${hit.what}`
    );
  };
  return {
    notPodAddress: (address) => find(address, ['nodeAddress', 'serviceRange', 'apiServer']),
    notElasticIP: (address) => find(address, ['nodeAddress', 'apiServer']),
  };
}

/** A set's identity for change detection and logs: `a.b.c.d/n` sorted as written. */
export const prefixesKey = (prefixes: readonly Prefix[]): string => prefixes.map(formatPrefix).join(',');
