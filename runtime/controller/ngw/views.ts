/**
 * What a NATGateway pass reads from the caches, reduced to what ./plan.ts and ./gateway-node.ts
 * take: the nodes with their readiness and agent Lease (FO-3), and NGW-4's pod selection.
 */
import type { NATGateway } from '../../../api';
import { compareGatewayAge, gatewayOfPod, type GatewaySelectorView } from '../../../api/validation';
import type { Stored } from '../../kube/types';
import { AGENT_LEASE } from '../../../api';
import type { ControllerContext } from '../context';
import type { GatewayNodeView } from './gateway-node';
import type { PodSelection } from './plan';

/** Every Node as a gateway candidate: Ready condition, deletion, labels, agent Lease. */
export function gatewayNodeViews(ctx: Pick<ControllerContext, 'caches' | 'agentLiveness'>): GatewayNodeView[] {
  const withLease = new Set(
    ctx.caches.agentLeases
      .list()
      .map((l) => l.metadata?.name ?? '')
      .filter((n) => n.startsWith(AGENT_LEASE.namePrefix))
      .map((n) => n.slice(AGENT_LEASE.namePrefix.length)),
  );
  const expired = ctx.agentLiveness.unavailableNodes();
  return ctx.caches.nodes.list().map((n) => {
    const name = n.metadata.name ?? '';
    const why = expired.get(name);
    const lease: GatewayNodeView['lease'] =
      why !== undefined ? { state: 'expired', why } : withLease.has(name) ? { state: 'live' } : { state: 'none' };
    return {
      name,
      labels: n.metadata.labels,
      ready: n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      deleting: !!n.metadata.deletionTimestamp,
      lease,
    };
  });
}

export const selectorViewOf = (g: Stored<NATGateway>): GatewaySelectorView => ({
  name: g.metadata.name,
  creationTimestamp: g.metadata.creationTimestamp,
  podSelector: g.spec.podSelector,
  deleting: !!g.metadata.deletionTimestamp,
});

/**
 * NGW-4: the pods of the gateway's namespace its podSelector selects (running or about to, not
 * host-network, not being deleted), split by which NATGateway of the namespace each one uses.
 */
export function podSelectionOf(ctx: Pick<ControllerContext, 'caches'>, gateway: Stored<NATGateway>): PodSelection {
  const namespace = gateway.metadata.namespace;
  const byAge = ctx.caches.natGateways.list(namespace).map(selectorViewOf).sort(compareGatewayAge);
  const self = gateway.metadata.name;
  const mine = byAge.find((g) => g.name === self) ?? selectorViewOf(gateway);
  let selected = 0;
  const contested: Array<{ pod: string; natGateway: string }> = [];
  for (const pod of ctx.caches.pods.list(namespace)) {
    const phase = pod.status?.phase;
    if (pod.metadata.deletionTimestamp || pod.spec?.hostNetwork || phase === 'Succeeded' || phase === 'Failed')
      continue;
    if (!gatewayOfPod(pod.metadata.labels, [mine])) continue;
    const user = gatewayOfPod(pod.metadata.labels, byAge);
    if (user?.name === self) selected++;
    else if (user) contested.push({ pod: pod.metadata.name ?? '', natGateway: user.name });
  }
  contested.sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
  return { selected, contested };
}
