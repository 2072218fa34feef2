/**
 * SLB-4: what the EndpointSlices of a Service say about its backends, and its ports normalized
 * for the data plane. Pure.
 */
import type { EndpointSliceView, EndpointView, ServicePortView } from '../../kube/service-views';

export interface BackendSummary {
  /** Nodes with at least one Ready, Serving, non-terminating endpoint; sorted. */
  readonly advertisingNodes: string[];
  /** Ready endpoints of the whole Service (each address counted once). */
  readonly totalReady: number;
}

/**
 * EndpointSlice condition semantics (discovery.k8s.io/v1): a nil `ready` or `serving` means
 * true, a nil `terminating` means false. Under `externalTrafficPolicy: Local` every endpoint is
 * Local to its `nodeName`, so that node can serve the VIP.
 */
export function isServingEndpoint(endpoint: EndpointView): boolean {
  const c = endpoint.conditions ?? {};
  return c.ready !== false && c.serving !== false && c.terminating !== true;
}

export function summarizeBackends(slices: readonly EndpointSliceView[]): BackendSummary {
  const nodes = new Set<string>();
  const readyAddresses = new Set<string>();
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4') continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (!isServingEndpoint(endpoint)) continue;
      // A slice may be replaced by another holding the same endpoint; count it once.
      for (const address of endpoint.addresses) readyAddresses.add(address);
      if (endpoint.nodeName) nodes.add(endpoint.nodeName);
    }
  }
  return { advertisingNodes: [...nodes].sort(), totalReady: readyAddresses.size };
}

/** One entry of SLB `status.ports`. */
export interface NormalizedPort {
  readonly name?: string;
  readonly protocol: 'TCP' | 'UDP';
  readonly port: number;
  readonly targetPort: number;
}

export interface PortsResult {
  readonly ports: NormalizedPort[];
  /** Named targetPorts no EndpointSlice resolves yet (no backend declares the name). */
  readonly unresolved: string[];
}

/**
 * SLB-4 ports: a numeric targetPort is taken as is (absent means `port`); a named one is
 * resolved through the EndpointSlices, whose ports carry the Service port's name and the number
 * the EndpointSlice controller found in the backend pods. If backends disagree on the number,
 * the lowest wins, so the answer does not depend on slice order. Ports of other protocols are
 * left out (SLB-10 reports them).
 */
export function normalizePorts(
  servicePorts: readonly ServicePortView[],
  slices: readonly EndpointSliceView[],
): PortsResult {
  const ports: NormalizedPort[] = [];
  const unresolved: string[] = [];
  for (const sp of servicePorts) {
    const protocol = sp.protocol ?? 'TCP';
    if (protocol !== 'TCP' && protocol !== 'UDP') continue;
    const targetPort = resolveTargetPort(sp, protocol, slices);
    if (targetPort === undefined) {
      unresolved.push(`${sp.name || sp.port}/${protocol} -> ${String(sp.targetPort)}`);
      continue;
    }
    ports.push({ ...(sp.name ? { name: sp.name } : {}), protocol, port: sp.port, targetPort });
  }
  return { ports, unresolved };
}

function resolveTargetPort(
  sp: ServicePortView,
  protocol: string,
  slices: readonly EndpointSliceView[],
): number | undefined {
  if (sp.targetPort === undefined) return sp.port;
  if (typeof sp.targetPort === 'number') return sp.targetPort;
  if (/^[0-9]+$/.test(sp.targetPort)) return Number(sp.targetPort);
  let lowest: number | undefined;
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4') continue;
    for (const p of slice.ports ?? []) {
      if ((p.name ?? '') !== (sp.name ?? '') || (p.protocol ?? 'TCP') !== protocol || !p.port) continue;
      if (lowest === undefined || p.port < lowest) lowest = p.port;
    }
  }
  return lowest;
}
