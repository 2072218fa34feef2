/**
 * The start and stop both of the agent's loops share (NodeAgent for ARP, NatSync for the NAT):
 * informers started, waited for however long it takes (the pinned maps keep answering and
 * translating meanwhile: an agent that restarts with an empty cache must not empty them, ARP-10,
 * NAT-4), then the first pass, then a poll every interval.
 */
import { waitUntilSynced, type Informer } from '../kube/informer';
import type { Logger } from '../kube/log';
import type { KubeObject } from '../kube/types';

/** What the loop uses of an informer (any object type). */
type LoopInformer = Pick<Informer<KubeObject>, 'start' | 'stop' | 'waitForSync'>;

export interface InformerLoopOptions {
  readonly informers: readonly LoopInformer[];
  readonly stopped: () => boolean;
  readonly logger: Logger;
  /** Logged while the informers have not synced: what keeps working meanwhile. */
  readonly waiting: string;
  /** Once synced: the first pass. */
  readonly synced: () => void;
  readonly poll: () => void;
  /** @default 5000 */
  readonly pollIntervalMs?: number;
}

/** Starts the informers and, once synced, the first pass and the poll timer (undefined: stopped
 * before the informers synced). */
export async function startInformerLoop(o: InformerLoopOptions): Promise<NodeJS.Timeout | undefined> {
  for (const informer of o.informers) informer.start();
  if (!(await waitUntilSynced(o.informers, o.stopped, o.logger, o.waiting))) return undefined;
  o.synced();
  o.poll();
  return setInterval(o.poll, o.pollIntervalMs ?? 5_000);
}

/** Stops the poll timer and the informers (the caller has set its stopped flag first, which its
 * poll checks). */
export async function stopInformerLoop(
  informers: readonly LoopInformer[],
  timer: NodeJS.Timeout | undefined,
): Promise<void> {
  clearInterval(timer);
  await Promise.all(informers.map((i) => i.stop()));
}
