/**
 * `kubectl juneau bgp --node NAME` (BGP-7): the node's BGP sessions (per BGPPeer: state, uptime,
 * prefixes sent, last error) and the addresses it announces, from the BGPNodeState its agent
 * writes (runtime/agent/bgp/node-state-writer.ts).
 */
import type { BGPNodeState } from '../../api';
import { JuneauResources } from '../kube/resources';
import { getOrUndefined, type RestClient } from '../kube/rest';
import type { Stored } from '../kube/types';
import { formatAgo, table } from './format';

export type NodeBgpReport = { readonly node: string; readonly state: Stored<BGPNodeState> | undefined };

export async function readNodeBgp(rest: RestClient, node: string): Promise<NodeBgpReport> {
  return {
    node,
    state: await getOrUndefined<Stored<BGPNodeState>>(rest, JuneauResources.bgpNodeStates, undefined, node),
  };
}

/** The sessions table and the announced addresses; `now` for the uptimes. */
export function renderNodeBgp(report: NodeBgpReport, now: Date): string {
  const status = report.state?.status;
  if (!report.state)
    return `node ${report.node}: no BGPNodeState (its agent runs without BGP, or has not reported yet)\n`;
  const since = (t: string | undefined) =>
    t ? formatAgo(Math.max(0, Math.round((now.getTime() - new Date(t).getTime()) / 1000))) : '-';
  const rows = (status?.peers ?? []).map((p) => [
    p.peer,
    p.state,
    p.state === 'Established' ? since(p.establishedSince) : '-',
    String(p.prefixesSent ?? 0),
    p.lastError ?? '',
  ]);
  const sessions = rows.length
    ? table(['PEER', 'STATE', 'UPTIME', 'PREFIXES SENT', 'LAST ERROR'], rows)
    : 'no BGPPeer selects this node\n';
  const announced = status?.announced;
  const addresses = announced?.addresses ?? [];
  return [
    `node ${report.node} (reported ${since(status?.updatedAt)} ago)`,
    '',
    sessions.trimEnd(),
    '',
    `announced: ${announced?.count ?? 0} address(es)${addresses.length ? `: ${addresses.join(', ')}` : ''}`,
    '',
  ].join('\n');
}
