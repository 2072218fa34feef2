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
type LoopInformer = Pick<Informer<KubeObject>, 'start' | 'stop' | 'waitForSync' | 'hasSynced'>;

export interface InformerLoopOptions {
  /** The loop's informers (read at start and stop). */
  readonly informers: () => readonly LoopInformer[];
  readonly logger: Logger;
  /** Logged while the informers have not synced: what keeps working meanwhile. */
  readonly waiting: string;
  /** Once synced: the first pass. */
  readonly firstPass: () => void;
  readonly poll: () => void;
  /** @default 5000 */
  readonly pollIntervalMs?: number;
}

/** The informers, the synced and stopped flags, and the poll timer of one loop. */
export class InformerLoop {
  private isSynced = false;
  private isStopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: InformerLoopOptions) {}

  /** Starts the informers and, once synced, the first pass and the poll timer. Resolves early when
   * stopped before the informers synced. */
  async start(): Promise<void> {
    const o = this.options;
    const informers = o.informers();
    for (const informer of informers) informer.start();
    if (!(await waitUntilSynced(informers, () => this.isStopped, o.logger, o.waiting))) return;
    this.isSynced = true;
    o.firstPass();
    o.poll();
    this.timer = setInterval(o.poll, o.pollIntervalMs ?? 5_000);
  }

  /** Marks the loop stopped (passes and polls return at once from now on), awaits `first` (what
   * the owner stops before its informers), then stops the poll timer and the informers. */
  async stop(first?: () => Promise<void>): Promise<void> {
    this.isStopped = true;
    await first?.();
    clearInterval(this.timer);
    await Promise.all(this.options.informers().map((i) => i.stop()));
  }

  /** A pass may write: the informers synced and the loop is not stopped. */
  get running(): boolean {
    return this.isSynced && !this.isStopped;
  }

  get stopped(): boolean {
    return this.isStopped;
  }

  get informersSynced(): boolean {
    return this.options.informers().every((i) => i.hasSynced);
  }
}
