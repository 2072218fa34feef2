/**
 * A per-key deduplicating work queue with the semantics of client-go's workqueue:
 * - a key is queued at most once, however often it is added;
 * - a key added while a worker processes it is queued again once that worker is done,
 *   so a key is never processed by two workers at once and no change is lost;
 * - failures back off exponentially per key (base * 2^n, capped) until `forget(key)`;
 * - `addAfter` keeps the earliest pending time per key;
 * - `shutdown()` refuses new work, lets workers drain what is queued, and resolves when
 *   every worker has finished; `shutdown({ drop: true })` drops what is queued instead (a
 *   replica that lost its Lease: the new leader owns that work), so only passes in flight end.
 */

export interface WorkQueueOptions {
  /** First retry delay after a failure. @default 5 ms (client-go's default) */
  readonly baseDelayMs?: number;
  /** Cap of the per-key retry delay. @default 300_000 ms (5 minutes) */
  readonly maxDelayMs?: number;
  /** Called with the number of queued (not in-flight) keys whenever it changes. */
  readonly onDepthChange?: (depth: number) => void;
}

/**
 * The reconcile contract, shaped like controller-runtime's `reconcile.Result` + error. A pass
 * returns what it wants next, or throws:
 * - `done()`: the state is reached; the key's failure count is forgotten and the key comes back
 *   only when something it watches changes (level-triggered);
 * - `requeueAfter(ms)`: come back after `ms` without counting a failure (polling, or a moment the
 *   state depends on: an expiry, a periodic sweep) — `WorkQueue.addAfter`;
 * - a thrown error: transient (a conflict, the API server away), retried after the key's
 *   exponential backoff — `WorkQueue.addRateLimited`;
 * - a thrown `TerminalError`: retrying cannot help (e.g. an invalid spec); the key is forgotten
 *   and the error logged, until a change adds the key again.
 */
export type ReconcileResult = { readonly kind: 'done' } | { readonly kind: 'requeueAfter'; readonly delayMs: number };

/** The state is reached: nothing to do until a watched object changes. */
export function done(): ReconcileResult {
  return { kind: 'done' };
}

/** Come back after `delayMs` (not a failure: no backoff grows). */
export function requeueAfter(delayMs: number): ReconcileResult {
  if (!Number.isFinite(delayMs) || delayMs < 0)
    throw new RangeError(`requeueAfter(${delayMs}): the delay must be a finite number of milliseconds >= 0`);
  return { kind: 'requeueAfter', delayMs };
}

/** One pass over one key; see ReconcileResult for what the queue does with its outcome. */
export type Reconciler = (key: string) => Promise<ReconcileResult>;

/** Thrown by a reconciler when retrying cannot help (e.g. invalid spec): forgotten and logged, no retry. */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

/** Retry delay after `failures` earlier failures: base * 2^failures, at most max. */
export function backoffDelay(failures: number, baseDelayMs: number, maxDelayMs: number): number {
  // 2^failures overflows to Infinity for large counts; Math.min keeps the cap.
  return Math.min(baseDelayMs * Math.pow(2, failures), maxDelayMs);
}

export class WorkQueue {
  private readonly queue: string[] = [];
  /** Keys waiting to be processed (queued, or re-queued after the in-flight pass). */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private shuttingDown = false;
  private dropped = false;
  private workers: Promise<void>[] = [];
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
  }

  /** Queues `key` unless it is already queued; ignored after shutdown. */
  add(key: string): void {
    if (!this.shuttingDown) this.enqueue(key);
  }

  /** Queues `key` in `delayMs`; an earlier pending time for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const at = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.delayed.set(key, { at, timer });
  }

  /** Queues `key` after its backoff delay and counts one more failure. */
  addRateLimited(key: string): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.addAfter(key, backoffDelay(failures, this.baseDelayMs, this.maxDelayMs));
  }

  /** Clears the failure count of `key` (call after a successful pass). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Keys queued and not yet taken by a worker. */
  get length(): number {
    return this.queue.length;
  }

  /** Waits for the next key; `undefined` once shut down and drained. Pair with done(). */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.reportDepth();
      this.take(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks `key` processed; if it was added meanwhile, it is queued again now. */
  done(key: string): void {
    this.processing.delete(key);
    if (!this.dirty.has(key) || this.dropped) return;
    // A change seen before shutdown still gets its pass, so enqueue() and not add().
    this.dirty.delete(key);
    this.enqueue(key);
  }

  /**
   * Starts `workers` loops calling `reconcile` per key and acting on its ReconcileResult:
   * `done` forgets the key's failures, `requeueAfter` adds it after the delay, a thrown error
   * adds it rate-limited, a TerminalError forgets it. `onError` sees every thrown error.
   */
  run(reconcile: Reconciler, workers = 1, onError?: (key: string, err: unknown) => void): void {
    for (let i = 0; i < workers; i++) this.workers.push(this.workerLoop(reconcile, onError));
  }

  /** Refuses new keys, drops pending delays, drains queued keys (or drops them), waits for workers. */
  async shutdown(options: { drop?: boolean } = {}): Promise<void> {
    this.shuttingDown = true;
    if (options.drop) {
      this.dropped = true;
      this.queue.length = 0;
      this.dirty.clear();
      this.reportDepth();
    }
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
    await Promise.all(this.workers);
  }

  private async workerLoop(reconcile: Reconciler, onError?: (key: string, err: unknown) => void): Promise<void> {
    for (let key = await this.get(); key !== undefined; key = await this.get()) {
      try {
        const result = await reconcile(key);
        this.forget(key);
        if (result.kind === 'requeueAfter') this.addAfter(key, result.delayMs);
      } catch (err) {
        onError?.(key, err);
        if (err instanceof TerminalError) this.forget(key);
        else this.addRateLimited(key);
      } finally {
        this.done(key);
      }
    }
  }

  private enqueue(key: string): void {
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // done() queues it again
    const waiter = this.waiters.shift();
    if (waiter) {
      this.take(key);
      waiter(key);
      return;
    }
    this.queue.push(key);
    this.reportDepth();
  }

  private take(key: string): void {
    this.dirty.delete(key);
    this.processing.add(key);
  }

  private reportDepth(): void {
    this.options.onDepthChange?.(this.queue.length);
  }
}

/** What `runQueue` needs around a reconciler: where failures are logged and, optionally, reconcile metrics. */
export interface QueueRunContext {
  readonly logger: {
    warn(message: string, fields?: Record<string, unknown>): void;
    error(message: string, fields?: Record<string, unknown>): void;
  };
  readonly metrics?: { instrument(controller: string, reconcile: Reconciler): Reconciler };
}

/**
 * Runs `workers` loops of a named controller's reconciler, instrumented when metrics are on. A
 * transient failure is a warning (it is retried); a TerminalError an error (it is not, until the
 * object changes).
 */
export function runQueue(
  queue: WorkQueue,
  name: string,
  reconcile: Reconciler,
  workers: number,
  context: QueueRunContext,
): void {
  const instrumented = context.metrics ? context.metrics.instrument(name, reconcile) : reconcile;
  queue.run(instrumented, workers, (key, err) => {
    const fields = { controller: name, key, err: String(err) };
    if (err instanceof TerminalError)
      context.logger.error('reconcile failed terminally; not retrying until the object changes', fields);
    else context.logger.warn('reconcile failed; retrying', fields);
  });
}
