/**
 * A typed informer: list, then watch from the list's resourceVersion, into an IndexedStore,
 * telling handlers what changed. Unlike client-node's ListWatch it never stops on its own:
 * - a watch that ends cleanly (server timeout) resumes from the last resourceVersion;
 * - 410 Gone (resourceVersion too old) relists, and the relist's differences reach the
 *   handlers as adds, updates and deletes, so nothing is missed across the gap;
 * - any other error retries with exponential backoff (capped), resuming where it was;
 * - with `idleTimeoutMs`, a watch that delivers nothing, not even a bookmark, for that long is
 *   treated as broken (a connection a middlebox silently dropped still looks open) and the
 *   informer relists (FO-2).
 * Works for any kind, core or custom, given its ResourceType.
 */
import { silentLogger, type Logger } from './log';
import { resourcePath, type ResourceType } from './resources';
import { KubeApiError, isGone, type RestClient, type WatchEvent, type WatchHandle } from './rest';
import { IndexedStore, type IndexFunc } from './store';
import { objectKey, type KubeObject } from './types';
import { backoffDelay } from './workqueue';
import { Sleeper } from './sleep';

export interface InformerHandlers<T> {
  onAdd?(object: T): void;
  onUpdate?(old: T, object: T): void;
  /** On a relist the object may be the last state seen, not the deleted one. */
  onDelete?(object: T): void;
}

export interface InformerOptions<T> {
  readonly type: ResourceType;
  /** Watch one namespace only. @default all namespaces */
  readonly namespace?: string;
  readonly labelSelector?: string;
  /** e.g. `spec.nodeName=node-1` (CRDs need it in `selectableFields`). */
  readonly fieldSelector?: string;
  readonly indexers?: Readonly<Record<string, IndexFunc<T>>>;
  /** List page size. @default 500 */
  readonly pageSize?: number;
  /** @default 500 ms, doubling to maxBackoffMs */
  readonly initialBackoffMs?: number;
  /** @default 30_000 */
  readonly maxBackoffMs?: number;
  /**
   * Client-side idle bound of a watch (FO-2): no event and no bookmark for this long and the
   * watch is aborted and the informer relists, since it can no longer prove its cache is current.
   * kube-apiserver sends a bookmark to every watch that asked for them about once a minute, so a
   * bound above that (plus its jitter) fires only on a broken stream. @default none
   */
  readonly idleTimeoutMs?: number;
  readonly logger?: Logger;
  /**
   * Applied to every object as it enters the cache (after managedFields are dropped), as
   * client-go's SetTransform: keep only the fields the readers use. It may change the object it
   * is given (a fresh decode, nobody else holds it). @default none
   */
  readonly transform?: (object: T) => T;
}

/** The two calls an informer makes; RestClient is one. */
export type ListWatchClient = Pick<RestClient, 'list' | 'watch'>;

export class Informer<T extends KubeObject> {
  readonly store: IndexedStore<T>;
  private readonly handlers = new Set<InformerHandlers<T>>();
  private readonly syncWaiters: Array<() => void> = [];
  private readonly logger: Logger;
  private resourceVersion = '';
  private synced = false;
  private stopped = true;
  private watchHandle: WatchHandle | undefined;
  private readonly sleeper = new Sleeper();
  private loop: Promise<void> | undefined;
  /** True while a watch is open and has not gone idle (FO-2: `isCurrent`). */
  private watching = false;
  private idleRelists = 0;

  constructor(
    private readonly client: ListWatchClient,
    private readonly options: InformerOptions<T>,
  ) {
    this.store = new IndexedStore<T>(options.indexers);
    this.logger = (options.logger ?? silentLogger).child({
      informer: options.type.plural,
      namespace: options.namespace,
    });
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(namespace, name);
  }

  /** By work-queue key: `namespace/name`, or `name` for a cluster-scoped kind. */
  getByKey(key: string): T | undefined {
    return this.store.getByKey(key);
  }

  list(namespace?: string): T[] {
    return this.store.list(namespace);
  }

  byIndex(indexName: string, value: string): T[] {
    return this.store.byIndex(indexName, value);
  }

  /** More indexes (a reader of a shared informer, ./shared-informers.ts); cached objects are filed too. */
  addIndexers(indexers: Readonly<Record<string, IndexFunc<T>>>): void {
    this.store.addIndexers(indexers);
  }

  /** True once the first list is in the cache. */
  get hasSynced(): boolean {
    return this.synced;
  }

  /**
   * FO-2: the cache can be trusted to be current: synced, and a watch is open that has delivered
   * something (an event or a bookmark) within `idleTimeoutMs`. False while listing, between a
   * failed watch and its retry, and after a watch went idle until the relist is done.
   */
  get isCurrent(): boolean {
    return this.synced && this.watching && !this.stopped;
  }

  /** How many times a watch was found idle and the informer relisted (FO-2). */
  get idleRelistCount(): number {
    return this.idleRelists;
  }

  /** The resourceVersion the next watch resumes from ('' means relist). */
  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  /** Adds handlers; objects already cached are replayed as adds. Returns an unsubscribe. */
  addHandlers(handlers: InformerHandlers<T>): () => void {
    this.handlers.add(handlers);
    for (const object of this.store.list()) this.call(handlers, 'onAdd', object);
    return () => this.handlers.delete(handlers);
  }

  /**
   * Level-triggered wiring: `fn` sees every object that changed — the added one, the deleted one,
   * and both states of an update, since a reference the update removed (a pool, an owner) needs
   * its pass as much as the one it added. Returns an unsubscribe.
   */
  onChange(fn: (object: T) => void): () => void {
    return this.addHandlers({ onAdd: fn, onUpdate: (old, object) => (fn(old), fn(object)), onDelete: fn });
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watchHandle?.abort();
    this.sleeper.wake();
    await this.loop;
  }

  /**
   * Resolves once synced; rejects after `timeoutMs` naming the resource. `Infinity` waits as long
   * as it takes (a controller start that gives up only when stopped), without a timer.
   */
  waitForSync(timeoutMs = 60_000): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (timeoutMs === Infinity) return new Promise((resolve) => this.syncWaiters.push(resolve));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`informer for ${this.describe()} not synced after ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.syncWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        if (!this.resourceVersion) await this.relist();
        await this.watchOnce();
        failures = 0; // a clean end (server timeout): resume from resourceVersion at once
      } catch (err) {
        if (this.stopped) break;
        if (isGone(err)) {
          this.logger.info('resourceVersion expired; relisting', { resourceVersion: this.resourceVersion });
          this.resourceVersion = '';
          continue;
        }
        const delay = backoffDelay(
          failures++,
          this.options.initialBackoffMs ?? 500,
          this.options.maxBackoffMs ?? 30_000,
        );
        this.logger.warn('list/watch failed; retrying', { err, retryInMs: delay });
        await this.sleeper.sleep(delay);
      }
    }
  }

  private async relist(): Promise<void> {
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.client.list<T>(this.options.type, {
        namespace: this.options.namespace,
        labelSelector: this.options.labelSelector,
        fieldSelector: this.options.fieldSelector,
        limit: this.options.pageSize ?? 500,
        continue: continueToken,
      });
      for (const item of page.items) items.push(this.admit(item));
      continueToken = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? '';
    } while (continueToken);
    if (this.stopped) return;
    const changes = this.store.replace(items);
    this.resourceVersion = resourceVersion;
    for (const object of changes.added) this.emit('onAdd', object);
    for (const { old, object } of changes.updated) this.emit('onUpdate', old, object);
    for (const object of changes.deleted) this.emit('onDelete', object);
    this.markSynced();
  }

  private async watchOnce(): Promise<void> {
    const path = resourcePath(this.options.type, this.options.namespace);
    const query = {
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      labelSelector: this.options.labelSelector,
      fieldSelector: this.options.fieldSelector,
      // Like client-go: 5-10 minutes, so watches of many replicas do not all end at once.
      timeoutSeconds: Math.floor(300 * (1 + Math.random())),
    };
    const idle = new IdleTimer(this.options.idleTimeoutMs, () => this.watchHandle?.abort());
    try {
      this.watchHandle = await this.client.watch<T>(path, query, (event) => {
        idle.touch();
        this.onEvent(event);
      });
      if (this.stopped) this.watchHandle.abort();
      this.watching = true;
      idle.touch();
      const err = await this.watchHandle.done;
      if (idle.fired && !this.stopped) {
        this.idleRelists++;
        this.logger.warn('watch delivered nothing, not even a bookmark; treating it as broken and relisting', {
          idleTimeoutMs: this.options.idleTimeoutMs,
        });
        this.resourceVersion = '';
        return;
      }
      if (err) throw err;
    } finally {
      idle.cancel();
      this.watching = false;
      this.watchHandle = undefined;
    }
  }

  private onEvent(event: WatchEvent<T>): void {
    if (event.type === 'ERROR') {
      const status = event.object as { code?: number; reason?: string; message?: string };
      throw new KubeApiError(
        status.code ?? 0,
        status.reason ?? '',
        `watch ${this.describe()}: ${status.message ?? 'error'}`,
        status,
      );
    }
    const object = this.admit(event.object);
    if (event.type === 'ADDED' || event.type === 'MODIFIED') {
      const old = this.store.upsert(object);
      if (!old) this.emit('onAdd', object);
      else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) this.emit('onUpdate', old, object);
    } else if (event.type === 'DELETED') {
      if (this.store.delete(objectKey(object))) this.emit('onDelete', object);
    }
    this.resourceVersion = object.metadata?.resourceVersion ?? this.resourceVersion;
  }

  /** What the cache keeps of a decoded object. */
  private admit(object: T): T {
    const kept = withoutManagedFields(object);
    return this.options.transform ? this.options.transform(kept) : kept;
  }

  private emit(kind: 'onAdd' | 'onDelete', object: T): void;
  private emit(kind: 'onUpdate', old: T, object: T): void;
  private emit(kind: keyof InformerHandlers<T>, a: T, b?: T): void {
    for (const handlers of this.handlers) this.call(handlers, kind, a, b);
  }

  /** A throwing handler is logged; it must not stop the informer or other handlers. */
  private call(handlers: InformerHandlers<T>, kind: keyof InformerHandlers<T>, a: T, b?: T): void {
    try {
      if (kind === 'onUpdate') handlers.onUpdate?.(a, b as T);
      else handlers[kind]?.(a);
    } catch (err) {
      this.logger.error('informer handler threw', { handler: kind, key: objectKey(a), err });
    }
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const waiter of this.syncWaiters.splice(0)) waiter();
  }

  private describe(): string {
    const { type, namespace, labelSelector, fieldSelector } = this.options;
    const scope = [
      namespace && `namespace=${namespace}`,
      labelSelector && `labels=${labelSelector}`,
      fieldSelector && `fields=${fieldSelector}`,
    ].filter(Boolean);
    return `${type.plural}${type.group ? '.' + type.group : ''}${scope.length ? ` (${scope.join(', ')})` : ''}`;
  }
}

/** Calls `onIdle` once when `touch()` has not been called for `ms` (undefined: never). */
class IdleTimer {
  private timer: NodeJS.Timeout | undefined;
  fired = false;

  constructor(
    private readonly ms: number | undefined,
    private readonly onIdle: () => void,
  ) {}

  touch(): void {
    if (this.ms === undefined || this.fired) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onIdle();
    }, this.ms);
  }

  cancel(): void {
    clearTimeout(this.timer);
  }
}

/** Resolves when every informer has synced; the error names those that did not. */
export async function waitForCacheSync(
  informers: ReadonlyArray<Pick<Informer<KubeObject>, 'waitForSync'>>,
  timeoutMs = 60_000,
): Promise<void> {
  await Promise.all(informers.map((informer) => informer.waitForSync(timeoutMs)));
}

/**
 * Waits for the informers however long it takes, logging `meanwhile` every `logEveryMs` while
 * they have not synced (a node daemon keeps serving from its pinned state meanwhile). Resolves
 * true once synced, false when `stopped()` turned true first.
 */
export async function waitUntilSynced(
  informers: ReadonlyArray<Pick<Informer<KubeObject>, 'waitForSync'>>,
  stopped: () => boolean,
  logger: Logger,
  meanwhile: string,
  logEveryMs = 30_000,
): Promise<boolean> {
  while (!stopped()) {
    try {
      await waitForCacheSync(informers, logEveryMs);
      return !stopped();
    } catch (err) {
      logger.warn(meanwhile, { err });
    }
  }
  return false;
}

/**
 * Drops metadata.managedFields from an object as it enters the cache, as client-go's informers
 * are commonly set up to do: nothing here reads them, and with several field managers per object
 * they are a large share of every cached object (bench/scale: 10,000 Services, EndpointSlices,
 * ElasticIPs, claims and ARPAdvertisements). A write built from a cached object simply carries
 * no managedFields, which the API server takes as "unchanged".
 */
function withoutManagedFields<T>(object: T): T {
  const metadata = (object as { metadata?: { managedFields?: unknown } }).metadata;
  if (metadata?.managedFields !== undefined) delete metadata.managedFields;
  return object;
}

/**
 * A trimmed copy of `object` for a cache (a `transform`, H4): its kind, its identity, version, age
 * and deletion, and `fields` (what its readers use). Labels, annotations, finalizers and owner
 * references go unless `fields` carries them: an object's writer can make those as large as the
 * API server allows, and a cache that keeps them can be made to hold gigabytes.
 */
export function trimmedObject<T extends KubeObject>(object: T, fields: Omit<Partial<T>, 'apiVersion' | 'kind'>): T {
  const { name, namespace, uid, resourceVersion, creationTimestamp, deletionTimestamp } = object.metadata ?? {};
  const metadata = { name, namespace, uid, resourceVersion, creationTimestamp, deletionTimestamp };
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    ...fields,
    metadata: { ...metadata, ...fields.metadata },
  } as T;
}
