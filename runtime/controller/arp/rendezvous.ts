/**
 * SLB-7: which node answers ARP for a VIP. Sticky first — the current node keeps the VIP while it
 * can still serve it, because every move costs an outage until upstream neighbour caches forget
 * the old MAC (ARP-8). Only when it cannot is a node chosen again, by rendezvous
 * (highest-random-weight) hashing: every node gets the weight sha256("<vip>#<node>") and the
 * highest wins. The answer depends on nothing but the VIP and the set of candidate names, so a
 * new controller leader reaches the same answer, different VIPs spread over different nodes, and
 * when a node leaves only the VIPs it held move.
 */
import { createHash } from 'node:crypto';

export interface RendezvousInput {
  readonly vip: string;
  /** The nodes that can serve the VIP now (SLB-4 `advertisingNodes`). */
  readonly candidates: readonly string[];
  /** The node that answers now (the ARPAdvertisement's `spec.nodeName`), if any. */
  readonly current?: string;
}

/** The node to answer for the VIP, or undefined when no node can (SLB-8). */
export function rendezvousNode(input: RendezvousInput): string | undefined {
  if (input.current !== undefined && input.candidates.includes(input.current)) return input.current;
  return highestRandomWeightNode(input.vip, input.candidates);
}

/** The candidate with the highest weight for the VIP; ties (never seen with sha256) go to the smaller name. */
export function highestRandomWeightNode(vip: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = '';
  for (const node of candidates) {
    const weight = rendezvousWeight(vip, node);
    if (best === undefined || weight > bestWeight || (weight === bestWeight && node < best)) {
      best = node;
      bestWeight = weight;
    }
  }
  return best;
}

/** The weight of a node for a VIP, as a hex digest (so string order is numeric order). */
export function rendezvousWeight(vip: string, node: string): string {
  return createHash('sha256').update(`${vip}#${node}`).digest('hex');
}
