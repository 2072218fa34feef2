/**
 * One way to wire a reconciler into the controller: a registration names the reconcile function,
 * how many keys it works on at once, the changes that bring a key back (watches mapped to keys)
 * and the keys every start begins with. `Registration` owns the rest: the work queue (its depth
 * reported as a metric), the workers and their logging, the first enqueue, stop and `hasSynced`.
 * The controller (./controller.ts) is a list of these over one context.
 */
import type { Informer, InformerHandlers } from '../kube/informer';
import type { RuntimeMetrics } from '../kube/metrics';
import type { KubeObject } from '../kube/types';
import { runQueue, WorkQueue, type QueueRunContext, type Reconciler, type WorkQueueOptions } from '../kube/workqueue';

/** Changes of one informer's objects, as the keys they affect. */
export interface InformerWatch {
  readonly informer: Pick<Informer<KubeObject>, 'addHandlers' | 'hasSynced'>;
  /**
   * The keys a change affects, level-triggered: called for an added and a deleted object, and for
   * both states of an update (a reference the update removed needs its pass as much as the one it
   * added). `deleted` only for a deletion.
   */
  readonly keysOf: (object: KubeObject, deleted: boolean) => Iterable<string | undefined>;
  /** Keys are queued this much later, so a burst of changes is one pass. @default 0 */
  readonly delayMs?: number;
}

/** A change that is not an object's (e.g. an agent's liveness, FO-3): every key it names gets a pass. */
export interface SignalWatch {
  readonly signal: (listener: () => void) => unknown;
  readonly keys: () => Iterable<string>;
}

export type Watch = InformerWatch | SignalWatch;

/** An InformerWatch typed by the informer's objects. */
export function watch<T extends KubeObject>(
  informer: Informer<T>,
  keysOf: (object: T, deleted: boolean) => Iterable<string | undefined>,
  delayMs?: number,
): InformerWatch {
  return {
    informer: informer as unknown as InformerWatch['informer'],
    keysOf: keysOf as InformerWatch['keysOf'],
    delayMs,
  };
}

export interface ReconcilerSpec {
  /** The controller's name in logs and metrics, and its queue's. */
  readonly name: string;
  readonly reconcile: Reconciler;
  /** Concurrent passes (always on different keys). */
  readonly workers: number;
  readonly watches: readonly Watch[];
  /** Keys queued once the caches have synced: every object, and anything else that needs a first pass. */
  readonly initialKeys: () => Iterable<string | undefined>;
  /** Retry delays of the queue. @default the WorkQueue's */
  readonly retry?: Pick<WorkQueueOptions, 'baseDelayMs' | 'maxDelayMs'>;
}

/** A ReconcilerSpec wired: its watches feed its queue from construction on; `start()` runs the workers. */
export class Registration {
  readonly queue: WorkQueue;

  constructor(
    readonly spec: ReconcilerSpec,
    private readonly run: QueueRunContext & { readonly metrics?: RuntimeMetrics },
  ) {
    this.queue = new WorkQueue({ ...spec.retry, onDepthChange: run.metrics?.queueDepthHook(spec.name) });
    for (const w of spec.watches) this.wire(w);
  }

  get name(): string {
    return this.spec.name;
  }

  /** Starts the workers and queues the initial keys; call once the caches the reconciler reads have synced. */
  start(): void {
    runQueue(this.queue, this.spec.name, this.spec.reconcile, this.spec.workers, this.run);
    this.addAll(this.spec.initialKeys());
  }

  /** Lets passes in flight finish; `drop`: keys not yet taken are dropped instead of drained. */
  stop(options: { drop?: boolean } = {}): Promise<void> {
    return this.queue.shutdown({ drop: options.drop });
  }

  /** The informers it watches (their owner starts them: the controller starts every cache). */
  get informers(): ReadonlyArray<InformerWatch['informer']> {
    return [...new Set(this.spec.watches.flatMap((w) => ('informer' in w ? [w.informer] : [])))];
  }

  /** True once every informer it watches has listed. */
  get hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced);
  }

  private wire(w: Watch): void {
    if (!('informer' in w)) {
      w.signal(() => this.addAll(w.keys()));
      return;
    }
    const changed = (object: KubeObject, deleted: boolean) => this.addAll(w.keysOf(object, deleted), w.delayMs);
    const handlers: InformerHandlers<KubeObject> = {
      onAdd: (o) => changed(o, false),
      onUpdate: (old, o) => (changed(old, false), changed(o, false)),
      onDelete: (o) => changed(o, true),
    };
    w.informer.addHandlers(handlers);
  }

  private addAll(keys: Iterable<string | undefined>, delayMs = 0): void {
    for (const key of keys) {
      if (key === undefined) continue;
      if (delayMs > 0) this.queue.addAfter(key, delayMs);
      else this.queue.add(key);
    }
  }
}
