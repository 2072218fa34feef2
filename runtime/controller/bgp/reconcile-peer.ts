/**
 * BGPPeer status (BGP-7). Key: the peer's name. Each pass reads the nodes' BGPNodeStates from the
 * cache, asks ./peer-status.ts what the status is, writes it once if it changed, and records the
 * Event of a changed condition.
 */
import { JuneauResources } from '../../kube/resources';
import { done, type ReconcileResult } from '../../kube/workqueue';
import type { ControllerContext } from '../context';
import { watch, type ReconcilerSpec } from '../reconciler';
import { recordPlanEvents, writeStatusIfChanged } from '../shell';
import { planPeerStatus } from './peer-status';

export async function reconcileBGPPeer(ctx: ControllerContext, name: string): Promise<ReconcileResult> {
  const peer = ctx.caches.bgpPeers.get(undefined, name);
  if (!peer || peer.metadata.deletionTimestamp) return done();
  const nodeStates = new Map(
    ctx.caches.bgpNodeStates.list().flatMap((s) => (s.status ? [[s.spec.nodeName, s.status] as const] : [])),
  );
  const plan = planPeerStatus({ name, generation: peer.metadata.generation ?? 0, previous: peer.status, nodeStates });
  if (await writeStatusIfChanged(ctx, JuneauResources.bgpPeers, peer, plan.status))
    recordPlanEvents(ctx, peer, JuneauResources.bgpPeers, plan.events);
  return done();
}

/** Node reports are batched for this long: a router flap reaches every node's report within moments. */
const REPORT_BATCH_MS = 1000;

/** The BGPPeer reconciler as the controller registers it. */
export function bgpPeerReconciler(ctx: ControllerContext): ReconcilerSpec {
  const c = ctx.caches;
  return {
    name: 'bgppeer',
    reconcile: (key) => reconcileBGPPeer(ctx, key),
    workers: 1,
    objects: c.bgpPeers,
    watches: [watch(c.bgpNodeStates, (s) => (s.status?.peers ?? []).map((p) => p.peer), REPORT_BATCH_MS)],
  };
}
