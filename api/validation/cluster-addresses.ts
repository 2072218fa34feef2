/**
 * H2, H5: the cluster's own addresses — every Node's InternalIP and ExternalIP, its pod CIDRs,
 * the Service ranges and the API server endpoints — each named by the object it comes from. No
 * ElasticIP or VIP may be one of them (the allocator skips them, a requestedIP naming one is
 * refused, an AddressPool overlapping one gets a warning), and no Pod with one of them as its IP
 * gets a NetworkInterface. Pure: objects in, named ranges out.
 */
import { parseAddressItem } from './address-pool';
import { parseIPv4, rangeContains, rangesOverlap, type AddressRange } from './ipv4';

/** The fields of a Node read here. */
export interface NodeAddressSource {
  readonly metadata?: { readonly name?: string };
  readonly spec?: { readonly podCIDR?: string; readonly podCIDRs?: readonly string[] };
  readonly status?: { readonly addresses?: ReadonlyArray<{ readonly type?: string; readonly address?: string }> };
}

export interface ClusterAddressSources {
  readonly nodes: readonly NodeAddressSource[];
  /** `spec.cidrs` of the networking.k8s.io/v1 ServiceCIDRs, by name. @default [] */
  readonly serviceCIDRs?: ReadonlyArray<{ readonly name: string; readonly cidrs: readonly string[] }>;
  /** The endpoint addresses of the `default/kubernetes` Service (the API servers). @default [] */
  readonly apiServers?: readonly string[];
}

/** One range of the cluster's own addresses and what it is, for messages ("Node n1's InternalIP"). */
export interface ClusterRange {
  readonly range: AddressRange;
  readonly owner: string;
  /** The Node it belongs to, for a Node address or pod CIDR. */
  readonly node?: string;
  /** A Node's own address (InternalIP or ExternalIP), rather than a range of the cluster's. */
  readonly nodeAddress: boolean;
}

/** The node addresses that are the node itself (Hostname and DNS names are not addresses). */
const NODE_ADDRESS_TYPES = new Set(['InternalIP', 'ExternalIP']);

const single = (address: string): AddressRange | undefined => {
  const value = parseIPv4(address);
  return value === undefined ? undefined : { first: value, last: value };
};
const cidr = (text: string): AddressRange | undefined => {
  const parsed = parseAddressItem(text);
  return parsed.ok ? parsed.range : undefined;
};

/** Every IPv4 range of the cluster's own, named; values that do not parse (IPv6 among them) are left out. */
export function clusterRanges(sources: ClusterAddressSources): ClusterRange[] {
  const out: ClusterRange[] = [];
  const add = (range: AddressRange | undefined, owner: string, nodeAddress: boolean, node?: string) => {
    if (range) out.push({ range, owner, nodeAddress, ...(node ? { node } : {}) });
  };
  for (const n of sources.nodes) {
    const name = n.metadata?.name ?? '';
    for (const a of n.status?.addresses ?? [])
      if (a.type && NODE_ADDRESS_TYPES.has(a.type) && a.address)
        add(single(a.address), `the ${a.type} of Node ${name}`, true, name);
    const pods = n.spec?.podCIDRs?.length ? n.spec.podCIDRs : n.spec?.podCIDR ? [n.spec.podCIDR] : [];
    for (const c of pods) add(cidr(c), `pod CIDR ${c} of Node ${name}`, false, name);
  }
  for (const s of sources.serviceCIDRs ?? [])
    for (const c of s.cidrs) add(cidr(c), `Service range ${c} (ServiceCIDR ${s.name})`, false);
  for (const a of sources.apiServers ?? []) add(single(a), `an API server address (Service default/kubernetes)`, false);
  return out;
}

/** What of the cluster's own `address` is, or undefined when it is none of it. */
export function clusterOwnerOf(ranges: readonly ClusterRange[], address: number): ClusterRange | undefined {
  return ranges.find((r) => rangeContains(r.range, address));
}

/** The cluster ranges `range` overlaps. */
export function clusterOverlaps(ranges: readonly ClusterRange[], range: AddressRange): ClusterRange[] {
  return ranges.filter((r) => rangesOverlap(r.range, range));
}
