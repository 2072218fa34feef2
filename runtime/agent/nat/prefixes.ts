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
import { formatPrefix, poolItemsToPrefixes } from '../bpf/prefixes';

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
  readonly metadata?: { readonly name?: string };
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

/** The in-cluster prefixes of `input`, merged. */
export function clusterPrefixes(input: ClusterPrefixInputs): ClusterPrefixes {
  const items: string[] = [...input.extra];
  const skipped: string[] = [];
  const take = (value: string, what: string) => {
    if (isIPv6(value)) return; // the NAT is IPv4; a dual-stack cluster's IPv6 ranges are not its business
    try {
      poolItemsToPrefixes([value]);
      items.push(value);
    } catch (err) {
      skipped.push(`${what}: ${(err as Error).message}`);
    }
  };
  for (const node of input.nodes) {
    const name = `Node ${node.metadata?.name ?? ''}`;
    const pods = node.spec?.podCIDRs?.length ? node.spec.podCIDRs : node.spec?.podCIDR ? [node.spec.podCIDR] : [];
    for (const cidr of pods) take(cidr, `${name} spec.podCIDRs`);
    for (const a of node.status?.addresses ?? []) {
      if (!a.type || !NODE_ADDRESS_TYPES.has(a.type) || !a.address || isIPv6(a.address)) continue;
      if (IPV4.test(a.address)) take(`${a.address}/32`, `${name} status.addresses ${a.type}`);
      else skipped.push(`${name} status.addresses ${a.type}: '${a.address}' is not an IPv4 address`);
    }
  }
  for (const s of input.serviceCIDRs)
    for (const cidr of s.spec?.cidrs ?? []) take(cidr, `ServiceCIDR ${s.metadata?.name ?? ''} spec.cidrs`);
  for (const slice of input.apiServerSlices ?? []) {
    if (slice.addressType !== 'IPv4') continue;
    const name = `EndpointSlice default/${slice.metadata?.name ?? ''} endpoints`;
    for (const e of slice.endpoints ?? [])
      for (const address of e.addresses ?? [])
        if (IPV4.test(address)) take(`${address}/32`, name);
        else skipped.push(`${name}: '${address}' is not an IPv4 address`);
  }
  return { prefixes: poolItemsToPrefixes(items), skipped };
}

/** A set's identity for change detection and logs: `a.b.c.d/n` sorted as written. */
export const prefixesKey = (prefixes: readonly Prefix[]): string => prefixes.map(formatPrefix).join(',');
