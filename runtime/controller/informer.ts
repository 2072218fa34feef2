/**
 * A minimal list+watch cache, here because runtime/kube has no informer yet (see the report of
 * issue 4): list, then watch from the list's resourceVersion with bookmarks; a 410 Gone relists;
 * a stream that ends is resumed from the last resourceVersion seen; any other failure relists
 * after a backoff. Handlers see every add, update and delete once the cache holds the object.
 */
import type { Logger } from '../kube/log';
import { silentLogger } from '../kube/log';
import { resourcePath, type ResourceType } from '../kube/resources';
import { isGone, type RestClient, type WatchHandle } from '../kube/rest';
import { objectKey, type KubeObject } from '../kube/types';

export type InformerEvent = 'add' | 'update' | 'delete';
export type InformerHandler<T> = (event: InformerEvent, object: T, old: T | undefined) => void;

export interface InformerOptions {
  readonly labelSelector?: string;
  readonly logger?: Logger;
  /** Backoff after a failed list or watch. @default 1000 */
  readonly retryDelayMs?: number;
}

export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  private readonly handlers: InformerHandler<T>[] = [];
  private resourceVersion = '';
  private watch: WatchHandle | undefined;
  private stopped = false;
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  private loop: Promise<void> | undefined;
  private readonly logger: Logger;

  constructor(
    private readonly rest: RestClient,
    readonly type: ResourceType,
    private readonly options: InformerOptions = {},
  ) {
    this.logger = (options.logger ?? silentLogger).child({ informer: type.plural });
  }

  on(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** Starts in the background; resolves once the first list is in the cache. */
  start(): Promise<void> {
    this.stopped = false;
    this.loop ??= this.run();
    return this.waitForSync();
  }

  waitForSync(): Promise<void> {
    return this.synced ? Promise.resolve() : new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watch?.abort();
    await this.loop;
    this.loop = undefined;
  }

  private async run(): Promise<void> {
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) await this.relist();
        needList = false;
        const error = await this.watchOnce();
        if (error) needList = true;
      } catch (err) {
        if (this.stopped) break;
        needList = true;
        this.logger.warn('list/watch failed; retrying', { err: String(err), gone: isGone(err) });
        await delay(this.options.retryDelayMs ?? 1000);
      }
    }
  }

  private async relist(): Promise<void> {
    const list = await this.rest.list<T>(this.type, { labelSelector: this.options.labelSelector });
    const seen = new Set<string>();
    for (const item of list.items) {
      const key = objectKey(item);
      seen.add(key);
      this.apply('MODIFIED', item);
    }
    for (const [key, old] of this.store) if (!seen.has(key)) this.apply('DELETED', old);
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /** One watch stream; resolves with true when a relist is needed (410 or an ERROR event). */
  private async watchOnce(): Promise<boolean> {
    let relist = false;
    const query = { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, labelSelector: this.options.labelSelector, timeoutSeconds: 240 + Math.floor(Math.random() * 120) };
    this.watch = await this.rest.watch<T>(resourcePath(this.type), query, (event) => {
      if (event.type === 'ERROR') {
        relist = true;
        this.watch?.abort();
        return;
      }
      const rv = event.object.metadata?.resourceVersion;
      if (rv) this.resourceVersion = rv;
      if (event.type !== 'BOOKMARK') this.apply(event.type, event.object);
    });
    // stop() may have run while the watch was being opened: it found nothing to abort then.
    if (this.stopped) this.watch.abort();
    const error = await this.watch.done;
    this.watch = undefined;
    if (error && !this.stopped) throw error;
    return relist;
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void {
    const key = objectKey(object);
    const old = this.store.get(key);
    if (type === 'DELETED') {
      if (!old) return;
      this.store.delete(key);
      this.emit('delete', object, old);
      return;
    }
    if (old && old.metadata?.resourceVersion === object.metadata?.resourceVersion) return;
    this.store.set(key, object);
    this.emit(old ? 'update' : 'add', object, old);
  }

  private emit(event: InformerEvent, object: T, old: T | undefined): void {
    for (const handler of this.handlers) {
      try {
        handler(event, object, old);
      } catch (err) {
        this.logger.error('informer handler threw', { err: String(err) });
      }
    }
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
