/**
 * BGP-5 from the releasing side: an address leaves its holder only once no node announces it. The
 * agents stop announcing an address whose owner is being deleted (runtime/agent/bgp/decide.ts,
 * runtime/agent/nat/desired.ts) and report what they announce in their BGPNodeState; a finalizer
 * releases the claim only when no node reports the address announced, so it never reaches its
 * next holder while a router still sends it here. A node whose agent Lease expired (FO-3) is not
 * waited for: its report is stale, and waiting on it would keep the address forever (its BIRD
 * keeps what it announced until its sessions drop).
 */
import { announcedRanges, rangesContain } from '../../../api/validation';
import { parseIPv4 } from '../../../api/validation/ipv4';
import { requeueAfter, type ReconcileResult } from '../../kube/workqueue';
import type { ControllerContext } from '../context';

/** How soon a finalizer waiting for a withdrawal looks again (the agents write their report at most every 2 s). */
export const WITHDRAWAL_POLL_MS = 1_000;

/** The nodes whose BGPNodeState reports `address` announced, but those whose agent Lease expired; sorted. */
export function nodesAnnouncing(ctx: Pick<ControllerContext, 'caches' | 'agentLiveness'>, address: string): string[] {
  const ip = parseIPv4(address);
  if (ip === undefined) return [];
  const expired = ctx.agentLiveness.unavailableNodes();
  return ctx.caches.bgpNodeStates
    .list()
    .filter((s) => !expired.has(s.spec.nodeName) && rangesContain(announcedRanges(s.status?.announced?.addresses), ip))
    .map((s) => s.spec.nodeName)
    .sort();
}

/**
 * In a finalizer, before the release: come back in a second (and say so) while a node announces
 * `address`; undefined once none does (or there is no address).
 */
export function untilWithdrawn(
  ctx: Pick<ControllerContext, 'caches' | 'agentLiveness' | 'logger'>,
  owner: string,
  address: string | undefined,
): ReconcileResult | undefined {
  const announcing = address ? nodesAnnouncing(ctx, address) : [];
  if (announcing.length === 0) return undefined;
  ctx.logger.info(`${owner} being deleted: its address is released once no node announces it (BGP-5)`, {
    address,
    announcing,
  });
  return requeueAfter(WITHDRAWAL_POLL_MS);
}
