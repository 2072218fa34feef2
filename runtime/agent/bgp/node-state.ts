/**
 * BGP-7: the node's BGPNodeState status from what BIRD reports (`bgpSessions`) and what the agent
 * decided (decide.ts). Pure. An address counts as announced once one of the peers it goes to has
 * an Established session (the controller's phase Ready reads exactly that, BGP-5). Times that did
 * not change keep their previous value, so an unchanged report is byte-identical and not written.
 */
import type { BGPNodeState } from '../../../api';
import { BGP_SESSION_STATES, type BGPSessionState } from '../../../api/kinds/bgp-peer';
import { MAX_ANNOUNCED_ITEMS, MAX_PEERS_PER_NODE } from '../../../api/kinds/bgp-node-state';
import { LIMITS } from '../../../api/constants';
import { announcedItems } from '../../../api/validation';
import { parseIPv4 } from '../../../api/validation/ipv4';
import type { BgpSessionState } from './birdc';
import type { DecidedAddress } from './decide';

export type NodeStateStatus = NonNullable<BGPNodeState['status']>;
type PeerStatus = NonNullable<NodeStateStatus['peers']>[number];

/** BIRD's FSM words mapped to the schema's (BIRD says `Down` or nothing for a protocol that is off). */
function sessionState(state: string): BGPSessionState {
  return (BGP_SESSION_STATES as readonly string[]).includes(state) ? (state as BGPSessionState) : 'Idle';
}

/**
 * The status without `updatedAt` (the writer adds it when it writes): one entry per peer the node
 * is configured for (`peers`, the BGPPeer names), in name order.
 */
export function nodeStateStatus(
  peers: readonly string[],
  sessions: readonly BgpSessionState[],
  addresses: readonly DecidedAddress[],
  previous: NodeStateStatus | undefined,
  now: Date,
  /** Why a peer's session is not up, beyond what BIRD says (tcp-md5.ts), by peer. */
  explanations: ReadonlyMap<string, string> = new Map(),
): Omit<NodeStateStatus, 'updatedAt'> {
  const byPeer = new Map(sessions.map((s) => [s.peer, s]));
  const before = new Map((previous?.peers ?? []).map((p) => [p.peer, p]));
  const established = new Set<string>();
  const out: PeerStatus[] = [];
  for (const peer of [...new Set(peers)].sort().slice(0, MAX_PEERS_PER_NODE)) {
    const s = byPeer.get(peer);
    const state = sessionState(s?.state ?? 'Idle');
    const old = before.get(peer);
    if (state === 'Established') established.add(peer);
    const why = state === 'Established' ? undefined : explanations.get(peer);
    const lastError = [s?.lastError, why]
      .filter((e) => e)
      .join('; ')
      .slice(0, LIMITS.reasonLength);
    out.push({
      peer,
      state,
      ...(state === 'Established'
        ? {
            establishedSince: (
              s?.since ?? (old?.establishedSince ? new Date(old.establishedSince) : now)
            ).toISOString(),
          }
        : {}),
      prefixesSent: state === 'Established' ? (s?.prefixesExported ?? 0) : 0,
      ...(lastError ? { lastError } : {}),
      lastTransitionTime:
        old && old.state === state && old.lastTransitionTime ? old.lastTransitionTime : now.toISOString(),
    });
  }
  const announced = addresses
    .filter((a) => a.peers.some((p) => established.has(p)))
    .flatMap((a) => {
      const n = parseIPv4(a.address);
      return n === undefined ? [] : [n];
    });
  return {
    peers: out,
    announced: { count: new Set(announced).size, addresses: announcedItems(announced).slice(0, MAX_ANNOUNCED_ITEMS) },
  };
}
