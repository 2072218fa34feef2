/**
 * NGW-3, NGW-6: which node is a NATGateway's gateway. A node can serve when it is Ready, its agent
 * renews its Lease (FO-3: an agent that never wrote one cannot build the data path either, so
 * "no Lease" counts as unable here, unlike SLB-4), it is not being deleted, and it matches
 * spec.nodeSelector. Among those, SLB-7's choice: the current node is kept while it can serve
 * (every move loses the connections through the old node, NGW-6, and waits for upstream ARP
 * caches), otherwise rendezvous on the address. Pure.
 */
import { selectorMatches, type LabelSelectorView } from '../../../api/validation';
import { rendezvousNode } from '../arp/rendezvous';

/** A Node as the choice reads it. */
export interface GatewayNodeView {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** Its Ready condition is True. */
  readonly ready: boolean;
  readonly deleting: boolean;
  /** FO-3: the agent Lease: renewed, never seen, or expired (with why). */
  readonly lease:
    { readonly state: 'live' } | { readonly state: 'none' } | { readonly state: 'expired'; readonly why: string };
}

/** Why a node cannot be the gateway, or undefined when it can. */
export function whyNodeCannotServe(
  node: GatewayNodeView,
  nodeSelector: LabelSelectorView | undefined,
): string | undefined {
  if (node.deleting) return 'it is being deleted';
  if (nodeSelector && !selectorMatches(nodeSelector, node.labels)) return 'it does not match spec.nodeSelector';
  if (!node.ready) return 'it is not Ready';
  if (node.lease.state === 'none') return 'its agent has no Lease (no agent runs there)';
  if (node.lease.state === 'expired') return node.lease.why;
  return undefined;
}

export interface GatewayChoice {
  /** The gateway node; undefined when no node can serve (Degraded). */
  readonly nodeName: string | undefined;
  readonly candidates: number;
  /** Nodes that cannot serve, with why, by name. */
  readonly leftOut: ReadonlyArray<readonly [string, string]>;
}

export function chooseGatewayNode(input: {
  readonly address: string;
  readonly nodes: readonly GatewayNodeView[];
  readonly nodeSelector?: LabelSelectorView;
  readonly current?: string;
  /** BGP-4: on a bgp network, why a node may not announce the address (no BGPAdvertisement lets it). @default every node may */
  readonly cannotAnnounce?: (node: string) => string | undefined;
}): GatewayChoice {
  const candidates: string[] = [];
  const leftOut: Array<readonly [string, string]> = [];
  for (const node of input.nodes) {
    const why = whyNodeCannotServe(node, input.nodeSelector) ?? input.cannotAnnounce?.(node.name);
    if (why === undefined) candidates.push(node.name);
    else leftOut.push([node.name, why]);
  }
  leftOut.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const nodeName = rendezvousNode({ vip: input.address, candidates, current: input.current });
  return { nodeName, candidates: candidates.length, leftOut };
}

/** How many left-out nodes a message names; the rest are counted (5,000 nodes fit no condition message). */
export const NAMED_NODES = 5;

/** `node a: why; node b: why; and 12 more`, for conditions and Events. */
export function describeLeftOut(leftOut: ReadonlyArray<readonly [string, string]>): string {
  const named = leftOut.slice(0, NAMED_NODES).map(([n, why]) => `node ${n}: ${why}`);
  const more = leftOut.length > NAMED_NODES ? `; and ${leftOut.length - NAMED_NODES} more` : '';
  return `${named.join('; ')}${more}`;
}
