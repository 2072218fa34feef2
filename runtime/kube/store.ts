/**
 * The informer's cache: objects by `namespace/name` plus secondary indexes (e.g. Pods by
 * `spec.nodeName`, ExternalNetworks' users by `spec.externalNetwork`) so a reconciler can
 * find what refers to what in O(1). Not thread-safe in the Go sense; Node's single thread
 * means one mutation at a time. Returned objects are the cached ones: do not mutate them.
 */
import { objectKey, type KubeObject } from './types';

/** The index values of one object (none, one or several). */
export type IndexFunc<T> = (object: T) => readonly string[];

/** What a full relist changed, so the informer can tell its handlers. */
export interface ReplaceResult<T> {
  readonly added: T[];
  readonly updated: Array<{ readonly old: T; readonly object: T }>;
  readonly deleted: T[];
}

/** An IndexFunc from a getter that may return nothing (e.g. an unscheduled Pod). */
export function indexBy<T>(get: (object: T) => string | undefined | null): IndexFunc<T> {
  return (object) => {
    const value = get(object);
    return value === undefined || value === null || value === '' ? [] : [value];
  };
}

export const byNamespace: IndexFunc<KubeObject> = indexBy((o) => o.metadata?.namespace);

export class IndexedStore<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  /** index name -> value -> keys */
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private readonly indexers: Map<string, IndexFunc<T>>;

  constructor(indexers: Readonly<Record<string, IndexFunc<T>>> = {}) {
    this.indexers = new Map([['namespace', byNamespace as IndexFunc<T>], ...Object.entries(indexers)]);
    for (const name of this.indexers.keys()) this.indexes.set(name, new Map());
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.objects.get(namespace ? `${namespace}/${name}` : name);
  }

  getByKey(key: string): T | undefined {
    return this.objects.get(key);
  }

  /** Every object, or those of one namespace (through the built-in namespace index). */
  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.objects.values()];
    return this.byIndex('namespace', namespace);
  }

  keys(): string[] {
    return [...this.objects.keys()];
  }

  get size(): number {
    return this.objects.size;
  }

  /** Objects filed under `value` in index `indexName`; throws on an unknown index. */
  byIndex(indexName: string, value: string): T[] {
    return this.indexKeys(indexName, value).map((key) => this.objects.get(key) as T);
  }

  indexKeys(indexName: string, value: string): string[] {
    const index = this.indexes.get(indexName);
    if (!index) throw new Error(`no index '${indexName}' (have: ${[...this.indexes.keys()].join(', ')})`);
    return [...(index.get(value) ?? [])];
  }

  /**
   * More indexes, filed for the objects already cached too: an informer shared by several readers
   * (./shared-informers.ts) gets the indexes of each. A name already present must come with the
   * same function (two readers asking for one index), else it throws naming the index.
   */
  addIndexers(indexers: Readonly<Record<string, IndexFunc<T>>>): void {
    for (const [name, indexer] of Object.entries(indexers)) {
      const existing = this.indexers.get(name);
      if (existing === indexer) continue;
      if (existing) throw new Error(`index '${name}' is already defined with another function`);
      this.indexers.set(name, indexer);
      this.indexes.set(name, new Map());
      for (const [key, object] of this.objects) this.fileOne(name, indexer, key, object);
    }
  }

  /** Adds or replaces; returns the previous object, if any. */
  upsert(object: T): T | undefined {
    const key = objectKey(object);
    const old = this.objects.get(key);
    if (old) this.unfile(key, old);
    this.objects.set(key, object);
    this.file(key, object);
    return old;
  }

  delete(key: string): T | undefined {
    const old = this.objects.get(key);
    if (!old) return undefined;
    this.unfile(key, old);
    this.objects.delete(key);
    return old;
  }

  /** Makes the store equal to `objects` (a relist) and reports the differences. */
  replace(objects: readonly T[]): ReplaceResult<T> {
    const result: ReplaceResult<T> = { added: [], updated: [], deleted: [] };
    const seen = new Set<string>();
    for (const object of objects) {
      seen.add(objectKey(object));
      const old = this.upsert(object);
      if (!old) result.added.push(object);
      else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion) result.updated.push({ old, object });
    }
    for (const key of this.keys()) {
      if (seen.has(key)) continue;
      result.deleted.push(this.delete(key) as T);
    }
    return result;
  }

  private file(key: string, object: T): void {
    for (const [name, indexer] of this.indexers) this.fileOne(name, indexer, key, object);
  }

  private fileOne(name: string, indexer: IndexFunc<T>, key: string, object: T): void {
    const index = this.indexes.get(name) as Map<string, Set<string>>;
    for (const value of indexer(object)) {
      let keys = index.get(value);
      if (!keys) index.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  /**
   * Unfiles `object` (the one stored under `key`) by computing its index values again: cached
   * objects are never mutated and index functions are pure, so they are the values it was filed
   * under. Keeping those values per object instead cost a Map and its arrays for every cached
   * object (bench/scale: 80,000 Maps at 10,000 addresses).
   */
  private unfile(key: string, object: T): void {
    for (const [name, indexer] of this.indexers) {
      const index = this.indexes.get(name) as Map<string, Set<string>>;
      for (const value of indexer(object)) {
        const keys = index.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(value);
      }
    }
  }
}
