/**
 * The start and stop both of the agent's loops share (ArpSync for ARP, NatSync for the NAT):
 * informers started, waited for however long it takes (the pinned maps keep answering and
 * translating meanwhile: an agent that restarts with an empty cache must not empty them, ARP-10,
 * NAT-4), then the first pass, then a poll every interval. Between them, the passes: changes
 * coalesced into one (schedule), and how the last one's write went (the poll retries a failure).
 */
import { waitUntilSynced, type Informer } from '../kube/informer';
import type { Logger } from '../kube/log';
import type { KubeObject } from '../kube/types';

/** What the loop uses of an informer (any object type). */
type LoopInformer = Pick<Informer<KubeObject>, 'start' | 'stop' | 'waitForSync' | 'hasSynced'>;

/** What a loop drives (ArpSync, NatSync). */
export interface LoopOwner {
  /** The loop's informers (read at start and stop). */
  informers(): readonly LoopInformer[];
  /** A full pass; once synced, the first one. */
  reconcile(): void;
  poll(): void;
}

export interface InformerLoopOptions {
  readonly logger: Logger;
  /** Logged while the informers have not synced: what keeps working meanwhile. */
  readonly waiting: string;
  /** @default 5000 */
  readonly pollIntervalMs?: number;
}

/** The informers, the synced and stopped flags, the poll timer and the pass flags of one loop. */
export class InformerLoop {
  private isSynced = false;
  private isStopped = false;
  private timer: NodeJS.Timeout | undefined;
  private isScheduled = false;
  private passedOnce = false;
  private lastFailed = false;

  constructor(
    private readonly owner: LoopOwner,
    private readonly options: InformerLoopOptions,
  ) {}

  /** Starts the informers and, once synced, the first pass and the poll timer. Resolves early when
   * stopped before the informers synced. */
  async start(): Promise<void> {
    const { owner, options } = this;
    const informers = owner.informers();
    for (const informer of informers) informer.start();
    if (!(await waitUntilSynced(informers, () => this.isStopped, options.logger, options.waiting))) return;
    this.isSynced = true;
    owner.reconcile();
    owner.poll();
    this.timer = setInterval(() => owner.poll(), options.pollIntervalMs ?? 5_000);
  }

  /** Marks the loop stopped (passes and polls return at once from now on), awaits `first` (what
   * the owner stops before its informers), then stops the poll timer and the informers. */
  async stop(first?: () => Promise<void>): Promise<void> {
    this.isStopped = true;
    await first?.();
    clearInterval(this.timer);
    await Promise.all(this.owner.informers().map((i) => i.stop()));
  }

  /** A pass may write: the informers synced and the loop is not stopped. */
  get running(): boolean {
    return this.isSynced && !this.isStopped;
  }

  get stopped(): boolean {
    return this.isStopped;
  }

  get informersSynced(): boolean {
    return this.owner.informers().every((i) => i.hasSynced);
  }

  /** Runs `pass` once on the next turn of the event loop, however many changes call this before
   * it runs; nothing while the loop is not running. */
  schedule(pass: () => void): void {
    if (!this.running || this.isScheduled) return;
    this.isScheduled = true;
    setImmediate(() => {
      this.isScheduled = false;
      pass();
    });
  }

  /** A scheduled pass has not run yet. */
  get scheduled(): boolean {
    return this.isScheduled;
  }

  /** A pass wrote the maps. */
  passSucceeded(): void {
    this.passedOnce = true;
    this.lastFailed = false;
  }

  /** A pass failed to write the maps: the next poll retries it. */
  passFailed(): void {
    this.lastFailed = true;
  }

  /** True once a pass has made the maps equal to the desired state (readiness). */
  get reconciledOnce(): boolean {
    return this.passedOnce;
  }

  get lastPassFailed(): boolean {
    return this.lastFailed;
  }
}
