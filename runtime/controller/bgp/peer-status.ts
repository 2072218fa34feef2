/**
 * BGP-7: a BGPPeer's status, aggregated from the nodes' BGPNodeStates: how many nodes report a
 * session to it, how many of those are Established, and a condition naming the nodes that are not
 * (so `kubectl get bgppeer` answers "is the router up everywhere?" without a per-node list in the
 * object every agent watches; docs/bgp-peer.md has the sizes). Pure.
 */
import type { BGPNodeState, BGPPeer } from '../../../api';
import { setCondition, type Condition, type ConditionInput } from '../../kube/conditions';
import type { PlannedEvent } from '../../kube/events';

export type PeerStatus = NonNullable<BGPPeer['status']>;
type NodeStatus = NonNullable<BGPNodeState['status']>;

export const PEER_CONDITIONS = { established: 'SessionsEstablished' } as const;
export const PEER_REASONS = {
  /** Every node that peers with it reports the session Established. */
  allEstablished: 'AllEstablished',
  /** Some node reports the session in another state. */
  sessionsDown: 'SessionsDown',
  /** No node reports a session to it (none selected, or no agent has reported yet). */
  noSessions: 'NoSessions',
} as const;

/** At most this many nodes are named in the condition message; the rest are counted. */
const NAMED_NODES = 10;

export interface PeerObservation {
  readonly name: string;
  readonly generation: number;
  readonly previous: PeerStatus | undefined;
  /** Every node's report, by node name. */
  readonly nodeStates: ReadonlyMap<string, NodeStatus>;
}

export interface PeerPlan {
  readonly status: PeerStatus;
  /** One Event when the condition's reason changes (BGP-7). */
  readonly events: PlannedEvent[];
}

export function planPeerStatus(o: PeerObservation, now: Date = new Date()): PeerPlan {
  const sessions = [...o.nodeStates]
    .flatMap(([node, s]) => (s.peers ?? []).filter((p) => p.peer === o.name).map((p) => ({ node, ...p })))
    .sort((a, b) => a.node.localeCompare(b.node));
  const down = sessions.filter((s) => s.state !== 'Established');
  const established = sessions.length - down.length;
  const condition = conditionOf(o, sessions.length, down);
  const conditions = setCondition((o.previous?.conditions ?? []) as Condition[], condition, now);
  const before = o.previous?.conditions?.find((c) => c.type === PEER_CONDITIONS.established);
  const events: PlannedEvent[] =
    before?.reason === condition.reason
      ? []
      : [
          {
            type: condition.status === 'True' ? 'Normal' : 'Warning',
            reason: condition.reason,
            message: condition.message,
          },
        ];
  return {
    status: { nodes: sessions.length, established, observedGeneration: o.generation, conditions },
    events,
  };
}

function conditionOf(
  o: PeerObservation,
  nodes: number,
  down: ReadonlyArray<{ node: string; state: string; lastError?: string }>,
): ConditionInput {
  const base = { type: PEER_CONDITIONS.established, observedGeneration: o.generation };
  if (nodes === 0)
    return {
      ...base,
      status: 'False',
      reason: PEER_REASONS.noSessions,
      message: `no node reports a session to BGPPeer ${o.name}: its nodeSelector selects no node with a Juneau agent, or no agent has reported yet (BGPNodeState) (BGP-7)`,
    };
  if (down.length === 0)
    return {
      ...base,
      status: 'True',
      reason: PEER_REASONS.allEstablished,
      message: `${nodes} of ${nodes} node(s) Established (BGP-7)`,
    };
  const named = down
    .slice(0, NAMED_NODES)
    .map((d) => `${d.node} ${d.state}${d.lastError ? ` (${d.lastError})` : ''}`)
    .join(', ');
  const more = down.length > NAMED_NODES ? ` and ${down.length - NAMED_NODES} more` : '';
  return {
    ...base,
    status: 'False',
    reason: PEER_REASONS.sessionsDown,
    message: `${nodes - down.length} of ${nodes} node(s) Established; not Established: ${named}${more} (BGP-7)`,
  };
}
