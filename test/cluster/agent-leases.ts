// The agents' node Leases (FO-2) for controller tests without agents: the test starts and stops
// renewing each node's Lease itself, as an agent that lives or dies would.
import { INSTALL } from '../../api';
import { AgentLease, agentLeaseName } from '../../runtime/agent/liveness/lease';
import { Resources } from '../../runtime/kube/resources';
import type { RestClient } from '../../runtime/kube/rest';
import { createArpNetwork, deleteArpNetwork, deleteNodes, ensureNode, ignoreNotFound } from './fixture';

export interface LeasedNodesOptions {
  /** How many Nodes. */
  readonly count: number;
  /** The agent Leases' duration (renewed every 300 ms). */
  readonly leaseMs: number;
  /** Node i's InternalIP is 192.0.2.(firstHost + i): each file its own range. */
  readonly firstHost: number;
  /** The AddressPool's one range (CIDR): each file its own. */
  readonly cidr: string;
}

/**
 * What a failover test without agents works on: Nodes `<prefix>-<suffix>-n<i>` (i from 1), each
 * with an agent Lease the test renews itself, and an arp AddressPool and ExternalNetwork both named
 * `<prefix>-<suffix>`. The random suffix keeps files that share the API server apart.
 */
export class LeasedNodes {
  readonly suffix = Math.random().toString(36).slice(2, 7);
  readonly pool: string;
  readonly network: string;
  readonly nodes: readonly string[];
  /** Each node's Lease renewer: stop() one and its node dies as far as the controller can tell. */
  readonly leases: Map<string, AgentLease>;

  constructor(
    private readonly rest: RestClient,
    prefix: string,
    private readonly o: LeasedNodesOptions,
  ) {
    this.pool = this.network = `${prefix}-${this.suffix}`;
    this.nodes = Array.from({ length: o.count }, (_, i) => `${prefix}-${this.suffix}-n${i + 1}`);
    this.leases = new Map(this.nodes.map((n) => [n, this.lease(n)]));
  }

  /** Creates the Nodes, starts renewing every Lease, creates the pool and the network. */
  async setUp(): Promise<void> {
    await Promise.all(this.nodes.map((n, i) => ensureNode(n, { internalIP: `192.0.2.${this.o.firstHost + i}` })));
    for (const lease of this.leases.values()) lease.start();
    await createArpNetwork(this.rest, { pool: this.pool, network: this.network, addresses: [this.o.cidr] });
  }

  /** Renews `node`'s Lease again, as its agent coming back would (a stopped AgentLease stays stopped). */
  revive(node: string): void {
    const lease = this.lease(node);
    this.leases.set(node, lease);
    lease.start();
  }

  /** Stops renewing, then deletes the Leases, the Nodes and the network, those already gone included. */
  async tearDown(): Promise<void> {
    for (const lease of this.leases.values()) await lease.stop();
    for (const n of this.nodes)
      await this.rest.delete(Resources.leases, INSTALL.namespace, agentLeaseName(n)).catch(ignoreNotFound);
    await deleteNodes(this.nodes);
    await deleteArpNetwork(this.rest, this);
  }

  private lease(nodeName: string): AgentLease {
    return new AgentLease({
      rest: this.rest,
      namespace: INSTALL.namespace,
      nodeName,
      leaseDurationMs: this.o.leaseMs,
      renewIntervalMs: 300,
    });
  }
}
