/**
 * Gauges read from the controller's caches at each scrape, for the alerts of the install's
 * PrometheusRule (constructs/shared/install/monitoring.ts): which Services' addresses nobody
 * answers (SLB-3, SLB-8: phase Allocated or Degraded, a VIP and no node), and which nodes' agent
 * Leases expired (FO-3). Every replica keeps warm caches, so each exports them; the alerts take
 * the max over replicas.
 */
import { serviceLoadBalancerPhases } from '../../api';
import type { RuntimeMetrics } from '../kube/metrics';
import type { ControllerContext } from './context';

/** The phases in which a ServiceLoadBalancer holds a VIP that no node answers for. */
const UNANSWERED_PHASES: ReadonlySet<string> = new Set(['Allocated', 'Degraded']);

export function registerStateMetrics(
  metrics: RuntimeMetrics,
  ctx: Pick<ControllerContext, 'caches' | 'agentLiveness'>,
): void {
  metrics.registerGaugeOnScrape(
    'service_load_balancers',
    'ServiceLoadBalancers by status.phase (SLB-3), as this replica caches them.',
    ['phase'],
    (set) => {
      const counts = new Map<string, number>(serviceLoadBalancerPhases.map((p) => [p, 0]));
      for (const slb of ctx.caches.serviceLoadBalancers.list()) {
        const phase = slb.status?.phase;
        if (phase) counts.set(phase, (counts.get(phase) ?? 0) + 1);
      }
      for (const [phase, n] of counts) set({ phase }, n);
    },
  );
  metrics.registerGaugeOnScrape(
    'service_load_balancer_unanswered',
    'A ServiceLoadBalancer whose VIP no node answers (phase Allocated: never answered yet; Degraded: answered before, SLB-8): 1 while so.',
    ['namespace', 'name', 'vip', 'phase'],
    (set) => {
      for (const slb of ctx.caches.serviceLoadBalancers.list()) {
        const { phase, vip } = slb.status ?? {};
        if (phase && vip && UNANSWERED_PHASES.has(phase))
          set({ namespace: slb.metadata.namespace, name: slb.metadata.name, vip, phase }, 1);
      }
    },
  );
  metrics.registerGaugeOnScrape(
    'agent_lease_expired',
    'A node whose agent Lease expired (FO-3): its addresses move away; 1 while so.',
    ['node'],
    (set) => {
      for (const node of ctx.agentLiveness.unavailableNodes().keys()) set({ node }, 1);
    },
  );
}
