// "Nothing changed" proven by a watch, not by a sleep: a watch opened at a known resourceVersion
// sees every write to the watched objects during the window, so a change that comes and goes
// between two polls (or after the last one) still fails the test.
//
//   const quiet = await watchForChanges({ type: JuneauResources.arpAdvertisements, name: 'slb-ns-web' });
//   await restartTheController();              // the window starts at the watch, not here
//   await quiet.expectNoChangeFor(3_000);      // throws, listing every change seen
//
// `project` narrows what counts: a Lease renews every few seconds, but only a new holderIdentity
// is a change of leader. Without it, any event (a create, a write of any field, a delete) counts.
import { resourcePath, type ResourceType } from '../../runtime/kube/resources';
import { RestClient, type WatchEvent, type WatchHandle } from '../../runtime/kube/rest';
import { objectKey, type KubeObject } from '../../runtime/kube/types';
import { sleep } from '../sleep';
import { testKubeConfig } from './fixture';

/** `T` is the object's wire shape as the test reads it (api/ types or KubeObject). */
export interface QuietWatchOptions<T = KubeObject> {
  readonly type: ResourceType;
  /** Watch one namespace; @default every namespace (or the cluster-scoped kind) */
  readonly namespace?: string;
  /** One object by name (it may not exist yet: its creation is a change too). @default every object */
  readonly name?: string;
  readonly labelSelector?: string;
  /** The part of an object that must stay equal (compared as JSON). @default the whole object: any event is a change */
  readonly project?: (object: T) => unknown;
  /** Named in the failure message. @default the kind and name */
  readonly what?: string;
  /** @default a client of the test control plane */
  readonly rest?: RestClient;
}

export interface ChangeWatch {
  /** Every change seen so far, one line each. */
  readonly changes: readonly string[];
  /** Waits until `ms` from now, stops watching, and throws if anything changed since the watch began. */
  expectNoChangeFor(ms: number): Promise<void>;
  /** Stops watching and throws if anything changed since the watch began. */
  expectNoChange(): void;
  stop(): void;
}

/** Opens a watch on the objects from their current resourceVersion; see the file comment. */
export async function watchForChanges<T = KubeObject>(opts: QuietWatchOptions<T>): Promise<ChangeWatch> {
  const rest = opts.rest ?? new RestClient(testKubeConfig());
  const what = opts.what ?? `${opts.type.kind}${opts.name ? ` ${opts.name}` : 's'}`;
  const fieldSelector = opts.name ? `metadata.name=${opts.name}` : undefined;
  // Without `project` the whole object counts, less what every write changes by itself.
  const project = (o: T): unknown => (opts.project ? opts.project(o) : withoutBookkeeping(o as KubeObject));
  const list = await rest.list<KubeObject>(opts.type, {
    namespace: opts.namespace,
    fieldSelector,
    labelSelector: opts.labelSelector,
  });
  const seen = new Map(list.items.map((o) => [objectKey(o), project(o as T)]));
  const changes: string[] = [];
  const startedAt = Date.now();
  let stopped = false;
  const onEvent = (e: WatchEvent<KubeObject>) => {
    if (e.type === 'BOOKMARK') return;
    if (e.type === 'ERROR') {
      changes.push(`watch error after ${Date.now() - startedAt} ms: ${JSON.stringify(e.object).slice(0, 300)}`);
      return;
    }
    const key = objectKey(e.object);
    const now = e.type === 'DELETED' ? undefined : project(e.object as T);
    const before = seen.get(key);
    if (e.type !== 'DELETED' && opts.project && JSON.stringify(now) === JSON.stringify(before)) return;
    changes.push(
      `${e.type} ${key} at +${Date.now() - startedAt} ms (resourceVersion ${e.object.metadata?.resourceVersion}): ${describeChange(before, now)}`,
    );
    if (e.type === 'DELETED') seen.delete(key);
    else seen.set(key, now);
  };
  const handle: WatchHandle = await rest.watch<KubeObject>(
    resourcePath(opts.type, opts.namespace),
    { resourceVersion: list.metadata?.resourceVersion, fieldSelector, labelSelector: opts.labelSelector },
    onEvent,
  );
  // A watch that ends inside the window could miss a change: that is a failure, not a pass.
  void handle.done.then((err) => {
    if (!stopped)
      changes.push(
        `the watch ended after ${Date.now() - startedAt} ms, before the window did (${err?.message ?? 'closed by the server'}): nothing can be proven`,
      );
  });
  const stop = () => {
    stopped = true;
    handle.abort();
  };
  const expectNoChange = () => {
    stop();
    if (changes.length > 0)
      throw new Error(
        `${what} changed during a window in which nothing may change (${Date.now() - startedAt} ms):\n${changes.join('\n')}`,
      );
  };
  return {
    changes,
    stop,
    expectNoChange,
    async expectNoChangeFor(ms: number) {
      await sleep(ms);
      expectNoChange();
    },
  };
}

/** Watches for `forMs` and throws on any change (as `project` defines it) during that window. */
export async function expectNoChangeFor<T = KubeObject>(forMs: number, opts: QuietWatchOptions<T>): Promise<void> {
  const watch = await watchForChanges(opts);
  await watch.expectNoChangeFor(forMs);
}

/** Several watches over one window: waits `ms`, stops them all, and throws with every change of every one. */
export async function expectNoChangesFor(ms: number, ...watches: ChangeWatch[]): Promise<void> {
  await sleep(ms);
  const failures: string[] = [];
  for (const w of watches) {
    try {
      w.expectNoChange();
    } catch (err) {
      failures.push((err as Error).message);
    }
  }
  if (failures.length > 0) throw new Error(failures.join('\n'));
}

function withoutBookkeeping(o: KubeObject): unknown {
  // A list's items carry no kind/apiVersion, a watch's objects do: neither is a change.
  const {
    resourceVersion: _rv,
    managedFields: _mf,
    ...metadata
  } = (o.metadata ?? {}) as KubeObject['metadata'] & { managedFields?: unknown };
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = o;
  return { ...rest, metadata };
}

/** `path: before -> after` for each differing leaf (a few at most), or the whole value when created or deleted. */
function describeChange(before: unknown, after: unknown): string {
  if (before === undefined || after === undefined) return `${clip(before)} -> ${clip(after)}`;
  const diffs: string[] = [];
  const walk = (a: unknown, b: unknown, path: string) => {
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    if (isRecord(a) && isRecord(b)) {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[k], b[k], path ? `${path}.${k}` : k);
      return;
    }
    diffs.push(`${path || '(value)'}: ${clip(a)} -> ${clip(b)}`);
  };
  walk(before, after, '');
  return diffs.length > 6 ? `${diffs.slice(0, 6).join('; ')}; and ${diffs.length - 6} more` : diffs.join('; ');
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function clip(value: unknown): string {
  if (value === undefined) return '(none)';
  const json = JSON.stringify(value);
  return json.length > 300 ? `${json.slice(0, 300)}…` : json;
}
