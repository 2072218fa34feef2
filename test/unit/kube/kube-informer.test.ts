import { Informer, type ListWatchClient } from '../../../runtime/kube/informer';
import { Resources } from '../../../runtime/kube/resources';
import type { WatchEvent } from '../../../runtime/kube/rest';
import type { KubeObject } from '../../../runtime/kube/types';
import { sleep } from '../../sleep';

const cm = (name: string, rv: string): KubeObject => ({ metadata: { namespace: 'ns', name, resourceVersion: rv } });

/** Lists fail `listFailures` times, then return `items`; a watch stays open until ended. */
function scriptedClient(items: KubeObject[], listFailures: number) {
  const state = {
    lists: 0,
    watchQueries: [] as Array<Record<string, unknown>>,
    emit: (_e: WatchEvent<KubeObject>) => undefined as void,
    end: () => undefined as void,
  };
  const client: ListWatchClient = {
    list: (async () => {
      state.lists++;
      if (state.lists <= listFailures) throw new Error('connection refused');
      return { metadata: { resourceVersion: '10' }, items };
    }) as ListWatchClient['list'],
    watch: (async (_path: string, query: Record<string, unknown>, onEvent: (e: WatchEvent<KubeObject>) => void) => {
      state.watchQueries.push(query);
      let finish: (e: Error | undefined) => void = () => undefined;
      const done = new Promise<Error | undefined>((resolve) => (finish = resolve));
      state.emit = (e) => {
        try {
          onEvent(e);
        } catch (err) {
          finish(err as Error);
        }
      };
      state.end = () => finish(undefined);
      return { done, abort: () => finish(undefined) };
    }) as ListWatchClient['watch'],
  };
  return { client, state };
}

const until = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !cond(); i++) await sleep(5);
  if (!cond()) throw new Error('condition not met');
};

describe('Informer (scripted list/watch)', () => {
  it('retries a failing list with backoff, then syncs and watches from the list resourceVersion', async () => {
    const { client, state } = scriptedClient([cm('a', '5')], 2);
    const informer = new Informer(client, { type: Resources.configMaps, initialBackoffMs: 5 });
    informer.start();
    await informer.waitForSync(2_000);
    expect(state.lists).toBe(3);
    await until(() => state.watchQueries.length === 1);
    expect(state.watchQueries[0]).toMatchObject({ resourceVersion: '10', allowWatchBookmarks: true });
    await informer.stop();
  });

  it('tracks bookmarks and resumes the next watch from the last resourceVersion seen', async () => {
    const { client, state } = scriptedClient([], 0);
    const informer = new Informer(client, { type: Resources.configMaps });
    informer.start();
    await until(() => state.watchQueries.length === 1);
    state.emit({ type: 'ADDED', object: cm('a', '11') });
    state.emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } });
    state.end(); // the server's timeoutSeconds elapsed
    await until(() => state.watchQueries.length === 2);
    expect(state.watchQueries[1].resourceVersion).toBe('15');
    expect(state.lists).toBe(1);
    await informer.stop();
  });

  it('keeps going when a handler throws, and other handlers still run', async () => {
    const { client, state } = scriptedClient([], 0);
    const informer = new Informer(client, { type: Resources.configMaps });
    const seen: string[] = [];
    informer.addHandlers({
      onAdd: () => {
        throw new Error('bug in a handler');
      },
    });
    informer.addHandlers({
      onAdd: (o) => seen.push(o.metadata?.name ?? ''),
      onUpdate: (_old, o) => seen.push(`~${o.metadata?.name}`),
    });
    informer.start();
    await until(() => state.watchQueries.length === 1);
    state.emit({ type: 'ADDED', object: cm('a', '11') });
    state.emit({ type: 'MODIFIED', object: cm('a', '11') }); // same resourceVersion: no update
    state.emit({ type: 'MODIFIED', object: cm('a', '12') });
    expect(seen).toEqual(['a', '~a']);
    expect(state.watchQueries).toHaveLength(1);
    await informer.stop();
  });

  it('replays cached objects to handlers added late', async () => {
    const { client } = scriptedClient([cm('a', '1'), cm('b', '2')], 0);
    const informer = new Informer(client, { type: Resources.configMaps });
    informer.start();
    await informer.waitForSync(1_000);
    const seen: string[] = [];
    informer.addHandlers({ onAdd: (o) => seen.push(o.metadata?.name ?? '') });
    expect(seen.sort()).toEqual(['a', 'b']);
    await informer.stop();
  });

  it('waitForSync(Infinity) outlives any timer and resolves on the first list (a controller start waits until stopped)', async () => {
    const { client } = scriptedClient([cm('a', '1')], 0);
    let releaseList: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (releaseList = resolve));
    const gated: ListWatchClient = {
      ...client,
      list: (async (...args: Parameters<ListWatchClient['list']>) => (
        await gate,
        client.list(...args)
      )) as ListWatchClient['list'],
    };
    const informer = new Informer(gated, { type: Resources.configMaps });
    informer.start();
    let outcome = 'pending';
    informer.waitForSync(Infinity).then(
      () => (outcome = 'synced'),
      (err: Error) => (outcome = err.message),
    );
    // A finite timer of Infinity ms would fire at once (Node clamps it to 1 ms).
    await sleep(50);
    expect(outcome).toBe('pending');
    releaseList();
    await until(() => outcome !== 'pending');
    expect(outcome).toBe('synced');
    await informer.stop();
  });

  it('onChange sees the added and deleted object and both states of an update; getByKey reads a queue key', async () => {
    const { client, state } = scriptedClient([], 0);
    const informer = new Informer(client, { type: Resources.configMaps });
    const seen: string[] = [];
    informer.onChange((o) => seen.push(`${o.metadata?.name}@${o.metadata?.resourceVersion}`));
    informer.start();
    await until(() => state.watchQueries.length === 1);
    state.emit({ type: 'ADDED', object: cm('a', '11') });
    state.emit({ type: 'MODIFIED', object: cm('a', '12') });
    expect(informer.getByKey('ns/a')?.metadata?.resourceVersion).toBe('12');
    state.emit({ type: 'DELETED', object: cm('a', '13') });
    expect(seen).toEqual(['a@11', 'a@11', 'a@12', 'a@13']);
    expect(informer.getByKey('ns/a')).toBeUndefined();
    await informer.stop();
  });
});
