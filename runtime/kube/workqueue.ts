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

/** What a handler may ask for besides success (forget) or failure (retry with backoff). */
export interface HandlerResult {
  /** Process this key again after this long, without counting a failure. */
  readonly requeueAfterMs?: number;
}

export type KeyHandler = (key: string) => Promise<HandlerResult | void>;

/** Thrown by a handler when retrying cannot help (e.g. invalid spec): no retry. */
export class TerminalError extends Error {
  constructor(message: string) {
    super(message);
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
   * Starts `workers` loops calling `handler` per key. Success forgets the key's failures;
   * a thrown error retries with backoff, except TerminalError; `requeueAfterMs` polls.
   */
  run(handler: KeyHandler, workers = 1, onError?: (key: string, err: unknown) => void): void {
    for (let i = 0; i < workers; i++) this.workers.push(this.workerLoop(handler, onError));
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

  private async workerLoop(handler: KeyHandler, onError?: (key: string, err: unknown) => void): Promise<void> {
    for (let key = await this.get(); key !== undefined; key = await this.get()) {
      try {
        const result = await handler(key);
        this.forget(key);
        if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
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

/** What `runQueue` needs around a handler: where failures are logged and, optionally, reconcile metrics. */
export interface QueueRunContext {
  readonly logger: { warn(message: string, fields?: Record<string, unknown>): void };
  readonly metrics?: { instrument(controller: string, handler: KeyHandler): KeyHandler };
}

/** Runs `workers` loops of a named controller's handler, instrumented when metrics are on; failures are logged and retried. */
export function runQueue(
  queue: WorkQueue,
  name: string,
  handler: KeyHandler,
  workers: number,
  context: QueueRunContext,
): void {
  const instrumented = context.metrics ? context.metrics.instrument(name, handler) : handler;
  queue.run(instrumented, workers, (key, err) =>
    context.logger.warn('reconcile failed; retrying', { controller: name, key, err: String(err) }),
  );
}
