// The agents' node Leases (FO-2) for controller tests without agents: the test starts and stops
// renewing each node's Lease itself, as an agent that lives or dies would.
import { INSTALL } from '../../api';
import { AgentLease, agentLeaseName } from '../../runtime/agent/lease';
import { Resources } from '../../runtime/kube/resources';
import type { RestClient } from '../../runtime/kube/rest';
import { deleteNodes, ignoreNotFound } from './fixture';

/** An AgentLease for each node (not started), lasting `leaseDurationMs`, renewed every 300 ms. */
export function agentLeases(
  rest: RestClient,
  nodes: readonly string[],
  leaseDurationMs: number,
): Map<string, AgentLease> {
  const lease = (nodeName: string) =>
    new AgentLease({ rest, namespace: INSTALL.namespace, nodeName, leaseDurationMs, renewIntervalMs: 300 });
  return new Map(nodes.map((n) => [n, lease(n)]));
}

/** Stops renewing, then deletes the Lease objects and the Nodes, those already gone included. */
export async function removeAgentNodes(rest: RestClient, leases: ReadonlyMap<string, AgentLease>): Promise<void> {
  for (const lease of leases.values()) await lease.stop();
  for (const n of leases.keys())
    await rest.delete(Resources.leases, INSTALL.namespace, agentLeaseName(n)).catch(ignoreNotFound);
  await deleteNodes(leases.keys());
}
