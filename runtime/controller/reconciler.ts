/**
 * One way to wire a reconciler into the controller: a registration names the reconcile function,
 * how many keys it works on at once, the objects whose keys are its own, and the other changes
 * that bring a key back (watches mapped to keys). `Registration` owns the rest: the work queue (its depth
 * reported as a metric), the workers and their logging, the first enqueue, stop and `hasSynced`.
 * The controller (./controller.ts) is a list of these over one context.
 */
import type { Informer, InformerHandlers } from '../kube/informer';
import type { RuntimeMetrics } from '../kube/metrics';
import { objectKey, type KubeObject } from '../kube/types';
import { runQueue, WorkQueue, type QueueRunContext, type Reconciler, type WorkQueueOptions } from '../kube/workqueue';

/** An informer of any kind's objects, as a registration reads it. */
export interface WatchedInformer {
  readonly hasSynced: boolean;
  list(): readonly KubeObject[];
  addHandlers(handlers: InformerHandlers<never>): unknown;
}

/** Changes of one informer's objects, as the keys they affect. */
export interface InformerWatch {
  readonly informer: WatchedInformer;
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
  /** The objects whose keys are this reconciler's: each one is queued at start and on its every change. */
  readonly objects?: WatchedInformer;
  /** Other changes that bring keys back (another kind's objects naming one, a signal). */
  readonly watches: readonly Watch[];
  /** More keys queued at start (e.g. holders only their claims remember). @default none */
  readonly initialKeys?: () => Iterable<string | undefined>;
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
    for (const w of this.allWatches) this.wire(w);
  }

  get name(): string {
    return this.spec.name;
  }

  /** Starts the workers and queues every object and the initial keys; call once the caches it reads have synced. */
  start(): void {
    runQueue(this.queue, this.spec.name, this.spec.reconcile, this.spec.workers, this.run);
    this.addAll(this.spec.objects?.list().map(objectKey) ?? []);
    this.addAll(this.spec.initialKeys?.() ?? []);
  }

  /** Lets passes in flight finish; `drop`: keys not yet taken are dropped instead of drained. */
  stop(options: { drop?: boolean } = {}): Promise<void> {
    return this.queue.shutdown({ drop: options.drop });
  }

  /** The informers it watches (their owner starts them: the controller starts every cache). */
  get informers(): readonly WatchedInformer[] {
    return [...new Set(this.allWatches.flatMap((w) => ('informer' in w ? [w.informer] : [])))];
  }

  /** True once every informer it watches has listed. */
  get hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced);
  }

  private get allWatches(): readonly Watch[] {
    const { objects, watches } = this.spec;
    return objects ? [{ informer: objects, keysOf: (o) => [objectKey(o)] }, ...watches] : watches;
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
