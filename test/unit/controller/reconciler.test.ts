// The one way a reconciler is wired (runtime/controller/reconciler.ts): its own objects are queued
// at start and on every change, another kind's change maps to the keys it names (both states of
// an update, level-triggered), a delayed watch batches, a signal queues what it names, and stop
// drains or drops. Real Informers over a scripted list/watch, a real WorkQueue.
import { Informer, type ListWatchClient } from '../../../runtime/kube/informer';
import { Resources } from '../../../runtime/kube/resources';
import type { WatchEvent } from '../../../runtime/kube/rest';
import type { KubeObject } from '../../../runtime/kube/types';
import { done } from '../../../runtime/kube/workqueue';
import { Registration, watch, type ReconcilerSpec } from '../../../runtime/controller/reconciler';
import { sleep } from '../../sleep';

type Named = KubeObject & { spec?: { owner?: string } };
const obj = (name: string, rv: string, owner?: string): Named => ({
  metadata: { namespace: 'ns', name, resourceVersion: rv },
  ...(owner ? { spec: { owner } } : {}),
});

/** An informer that lists `items`, then delivers what `emit` is given. */
function scripted(items: Named[]) {
  let emit: (e: WatchEvent<Named>) => void = () => undefined;
  const client: ListWatchClient = {
    list: (async () => ({ metadata: { resourceVersion: '1' }, items })) as ListWatchClient['list'],
    watch: (async (_path: string, _query: Record<string, unknown>, onEvent: (e: WatchEvent<Named>) => void) => {
      emit = onEvent;
      let finish: () => void = () => undefined;
      const ended = new Promise<undefined>((resolve) => (finish = () => resolve(undefined)));
      return { done: ended, abort: finish };
    }) as unknown as ListWatchClient['watch'],
  };
  const informer = new Informer<Named>(client, { type: Resources.configMaps });
  return { informer, emit: (e: WatchEvent<Named>) => emit(e) };
}

const until = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !cond(); i++) await sleep(5);
  if (!cond()) throw new Error('condition not met');
};

const silent = { logger: { warn: () => undefined, error: () => undefined } };

describe('Registration', () => {
  it('queues its objects and the initial keys at start, then what every watched change names', async () => {
    const own = scripted([obj('a', '1')]);
    const other = scripted([obj('x', '1', 'b')]);
    const listeners: Array<() => void> = [];
    const passes: string[] = [];
    const spec: ReconcilerSpec = {
      name: 'test',
      reconcile: async (key) => (passes.push(key), done()),
      workers: 1,
      objects: own.informer,
      initialKeys: () => ['ns/remembered', undefined],
      watches: [
        watch(other.informer, (o, deleted) => [o.spec?.owner && `ns/${o.spec.owner}${deleted ? '-gone' : ''}`]),
        { signal: (l) => listeners.push(l), keys: () => ['ns/signalled'] },
      ],
    };
    const registration = new Registration(spec, silent);
    expect(registration.informers).toEqual([own.informer, other.informer]);
    own.informer.start();
    other.informer.start();
    await Promise.all([own.informer.waitForSync(2_000), other.informer.waitForSync(2_000)]);
    expect(registration.hasSynced).toBe(true);
    registration.start();
    await until(() => passes.length >= 3);
    // The cached objects were replayed as adds when wired; the queue keeps one of each key.
    expect(new Set(passes)).toEqual(new Set(['ns/a', 'ns/b', 'ns/remembered']));

    passes.length = 0;
    // An update maps both states: the owner it left and the one it names now.
    other.emit({ type: 'MODIFIED', object: obj('x', '2', 'c') });
    await until(() => passes.length >= 2);
    expect(new Set(passes)).toEqual(new Set(['ns/b', 'ns/c']));

    passes.length = 0;
    other.emit({ type: 'DELETED', object: obj('x', '3', 'c') });
    own.emit({ type: 'ADDED', object: obj('d', '2') });
    listeners.forEach((l) => l());
    await until(() => passes.length >= 3);
    expect(new Set(passes)).toEqual(new Set(['ns/c-gone', 'ns/d', 'ns/signalled']));

    await registration.stop();
    await Promise.all([own.informer.stop(), other.informer.stop()]);
  });

  it('queues a delayed watch later, and a stop that drops runs nothing more', async () => {
    const own = scripted([]);
    const other = scripted([]);
    const passes: string[] = [];
    const registration = new Registration(
      {
        name: 'test',
        reconcile: async (key) => (passes.push(key), done()),
        workers: 1,
        objects: own.informer,
        watches: [watch(other.informer, (o) => [`ns/${o.spec?.owner}`], 50)],
      },
      silent,
    );
    own.informer.start();
    other.informer.start();
    await Promise.all([own.informer.waitForSync(2_000), other.informer.waitForSync(2_000)]);
    registration.start();
    other.emit({ type: 'ADDED', object: obj('x', '2', 'late') });
    await sleep(10);
    expect(passes).toEqual([]);
    await until(() => passes.length === 1);
    expect(passes).toEqual(['ns/late']);

    await registration.stop({ drop: true });
    own.emit({ type: 'ADDED', object: obj('after', '3') });
    await sleep(20);
    expect(passes).toEqual(['ns/late']);
    await Promise.all([own.informer.stop(), other.informer.stop()]);
  });
});
