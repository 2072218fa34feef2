// What one node's agent knows, turned into the data path's input (NgwNodeInput, desired.ts): the
// NATGateways (status.address, status.nodeName, status.phase and the podSelector), the Nodes'
// InternalIPs, and the Pods it sees — its own node's always, and on a gateway node every Pod of
// that gateway's namespace (sync.ts NgwLoop watches those namespaces only while it is their
// gateway; gatewayNamespaces says which). Pure.
//
// Which pods: NGW-4's rule, the controller's own (api/validation/nat-gateway.ts gatewayOfPod: the
// oldest non-deleting NATGateway whose podSelector matches), so the agent and the status agree; and
// H1 (SEC-1): a pod counts only while it is Running with the address (nat/desired.ts
// runningPodIPv4s, the NAT's rule). A gateway that is not Ready (no address, no node, a bgp network
// without BGP mode) steers and translates nothing: its pods leave as they would without it.
import type { NATGateway } from '../../../api';
import { compareGatewayAge, gatewayOfPod, type GatewaySelectorView } from '../../../api/validation/nat-gateway';
import type { KubeObject } from '../../kube/types';
import { nodeInternalIPs } from '../interface';
import { runningPodIPv4s, type NodeObject, type PodObject } from '../nat/desired';
import type { NgwGatewayInput, NgwNodeInput } from './desired';

export type NATGatewayObject = NATGateway & KubeObject;
/** A Pod as this loop reads it: H1's fields and its labels (podSelector). */
export type LabelledPodObject = PodObject & { readonly metadata?: { readonly labels?: Record<string, string> } };

/** The source ports (ICMP: identifiers) flows get on a gateway node (NGW-5), inclusive. Below
 * 1024 stays free: a server that checks for a privileged source port sees none. */
export const NGW_PORT_RANGE = { min: 1024, max: 65535 } as const;

export interface NgwInputs {
  readonly nodeName: string;
  readonly nodes: readonly NodeObject[];
  readonly gateways: readonly NATGatewayObject[];
  /** This node's Pods and, for the namespaces it is the gateway of, theirs (duplicates allowed). */
  readonly pods: readonly LabelledPodObject[];
  /** Pod CIDRs, Service CIDRs, node addresses (nat/prefixes.ts clusterPrefixes, formatted). */
  readonly clusterRanges: readonly string[];
  /** This node's pod addresses with an ElasticIP through 1:1 NAT (NAT-2 wins). */
  readonly elasticIPPods: readonly string[];
  /** @default NGW_PORT_RANGE */
  readonly portRange?: { readonly min: number; readonly max: number };
}

export interface NgwInputResult {
  /** undefined: this node has no InternalIP, so it can neither steer nor be a gateway. */
  readonly input: NgwNodeInput | undefined;
  /** The namespaces of the Ready NATGateways whose gateway is this node: their Pods are needed. */
  readonly gatewayNamespaces: string[];
  /** Gateways left out, with why (logged once per change). */
  readonly waiting: string[];
}

const keyOf = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

const selectorView = (g: NATGatewayObject): GatewaySelectorView => ({
  name: g.metadata?.name ?? '',
  creationTimestamp: g.metadata?.creationTimestamp,
  podSelector: g.spec?.podSelector ?? {},
  deleting: !!g.metadata?.deletionTimestamp,
});

export function ngwInputs(i: NgwInputs): NgwInputResult {
  const nodeIPs = new Map(i.nodes.map((n) => [n.metadata?.name ?? '', nodeInternalIPs(n)[0]]));
  const self = nodeIPs.get(i.nodeName);
  const waiting: string[] = [];
  // Serving: Ready, with an address and a gateway node whose InternalIP is known, not being deleted.
  const serving = new Map<string, { gateway: NATGatewayObject; input: NgwGatewayInput & { pods: PodAt[] } }>();
  for (const g of i.gateways) {
    const { address, nodeName, phase } = g.status ?? {};
    if (g.metadata?.deletionTimestamp || phase !== 'Ready' || !address || !nodeName) continue;
    const gatewayNodeAddress = nodeIPs.get(nodeName);
    if (!gatewayNodeAddress) {
      waiting.push(`NATGateway ${keyOf(g)}: its gateway node ${nodeName} has no IPv4 InternalIP`);
      continue;
    }
    serving.set(keyOf(g), {
      gateway: g,
      input: { name: keyOf(g), address, gatewayNodeAddress, portRange: i.portRange ?? NGW_PORT_RANGE, pods: [] },
    });
  }
  // NGW-4: each pod to the oldest gateway of its namespace that selects it, if that one serves.
  const byNamespace = new Map<string, GatewaySelectorView[]>();
  for (const g of i.gateways) {
    const ns = g.metadata?.namespace ?? '';
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), selectorView(g)]);
  }
  for (const list of byNamespace.values()) list.sort(compareGatewayAge);
  const seen = new Set<string>();
  for (const pod of i.pods) {
    const ns = pod.metadata?.namespace ?? '';
    if (seen.has(keyOf(pod))) continue;
    seen.add(keyOf(pod));
    const user = gatewayOfPod(pod.metadata?.labels, byNamespace.get(ns) ?? []);
    const target = user && serving.get(`${ns}/${user.name}`);
    const nodeAddress = nodeIPs.get(pod.spec?.nodeName ?? '');
    if (!target || !nodeAddress) continue;
    for (const address of runningPodIPv4s(pod)) target.input.pods.push({ address, nodeAddress });
  }
  const gatewayNamespaces = [
    ...new Set(
      [...serving.values()]
        .filter((s) => s.gateway.status?.nodeName === i.nodeName)
        .map((s) => s.gateway.metadata?.namespace ?? ''),
    ),
  ].sort();
  if (!self)
    return {
      input: undefined,
      gatewayNamespaces: [],
      waiting: [...waiting, `Node ${i.nodeName} has no IPv4 InternalIP: nothing steered or translated here`],
    };
  const byAddress = (a: PodAt, b: PodAt) => a.address.localeCompare(b.address, undefined, { numeric: true });
  return {
    input: {
      nodeAddress: self,
      gateways: [...serving.values()].map((s) => ({ ...s.input, pods: [...s.input.pods].sort(byAddress) })),
      clusterRanges: i.clusterRanges,
      elasticIPPods: i.elasticIPPods,
    },
    gatewayNamespaces,
    waiting,
  };
}

interface PodAt {
  readonly address: string;
  readonly nodeAddress: string;
}
