// runtime/kube's informer against the real API server: list+watch, handlers, field selectors,
// secondary indexes, resuming after a dropped watch and relisting after 410 Gone.
import { Informer, type ListWatchClient } from '../../runtime/kube/informer';
import { Resources } from '../../runtime/kube/resources';
import { RestClient, type WatchHandle } from '../../runtime/kube/rest';
import { indexBy } from '../../runtime/kube/store';
import type { KubeObject } from '../../runtime/kube/types';
import { ensureNode, testKubeConfig, testRest, useNamespace, waitFor } from './fixture';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}
interface Pod extends KubeObject {
  spec?: { nodeName?: string };
}

/**
 * A RestClient whose open watch can be cut (a network blip), or whose next watch answers the
 * way the API server does when the resourceVersion was compacted away: an ERROR event with a
 * 410 Status. (A real 410 needs etcd compaction, which the API server does every 5 minutes.)
 */
class FlakyClient implements ListWatchClient {
  lists = 0;
  watches = 0;
  private current: WatchHandle | undefined;
  goneNextWatch = false;
  /** While set, new watches wait for it: changes pile up unseen. */
  paused: Promise<void> | undefined;
  constructor(private readonly rest: RestClient) {}
  list: ListWatchClient['list'] = (type, options) => {
    this.lists++;
    return this.rest.list(type, options);
  };
  watch: ListWatchClient['watch'] = async (path, query, onEvent) => {
    await this.paused;
    this.watches++;
    if (this.goneNextWatch) {
      this.goneNextWatch = false;
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        code: 410,
        reason: 'Expired',
        message: 'too old resource version: 1 (42)',
      };
      let failed: Error | undefined;
      try {
        onEvent({ type: 'ERROR', object: status as never });
      } catch (err) {
        failed = err as Error; // RestClient.watch ends the stream with the handler's error
      }
      return { done: Promise.resolve(failed), abort: () => undefined };
    }
    this.current = await this.rest.watch(path, query, onEvent);
    return this.current;
  };
  /** Drops the open watch connection, as a network blip or an API server restart would. */
  cut(): void {
    this.current?.abort();
  }
}

describe('Informer on a real API server', () => {
  const rest = testRest();
  const namespace = useNamespace();
  let ns: string;
  beforeEach(() => (ns = namespace()));
  const configMap = (name: string, data?: Record<string, string>): ConfigMap => ({
    metadata: { name, namespace: ns },
    data,
  });
  const createConfigMap = (name: string, data?: Record<string, string>) =>
    rest.create(Resources.configMaps, configMap(name, data));
  const deleteConfigMap = (name: string) => rest.delete(Resources.configMaps, ns, name);
  /** An informer of this namespace's ConfigMaps over a FlakyClient, retrying fast. */
  const flakyInformer = () => {
    const client = new FlakyClient(rest);
    const informer = new Informer<ConfigMap>(client, {
      type: Resources.configMaps,
      namespace: ns,
      initialBackoffMs: 50,
    });
    return { client, informer };
  };

  it('lists what exists, then sees create, update and delete through handlers', async () => {
    await createConfigMap('before', { v: '0' });
    const informer = new Informer<ConfigMap>(rest, { type: Resources.configMaps, namespace: ns });
    const seen: string[] = [];
    informer.addHandlers({
      onAdd: (o) => seen.push(`add ${o.metadata?.name}`),
      onUpdate: (old, o) => seen.push(`update ${o.metadata?.name} ${old.data?.v}->${o.data?.v}`),
      onDelete: (o) => seen.push(`delete ${o.metadata?.name}`),
    });
    informer.start();
    try {
      await informer.waitForSync(10_000);
      expect(informer.hasSynced).toBe(true);
      expect(informer.get(ns, 'before')?.data).toEqual({ v: '0' });
      await createConfigMap('cm', { v: '1' });
      await rest.replace(Resources.configMaps, configMap('cm', { v: '2' }));
      await deleteConfigMap('cm');
      await waitFor(() => seen.length >= 4, { what: 'four events', timeoutMs: 10_000 });
      expect(seen).toEqual(['add before', 'add cm', 'update cm 1->2', 'delete cm']);
      expect(informer.list(ns).map((o) => o.metadata?.name)).toEqual(['before']);
    } finally {
      await informer.stop();
    }
  });

  it('watches only what a field selector picks (Pods by spec.nodeName) and indexes by node', async () => {
    await ensureNode('kube-informer-n1');
    await ensureNode('kube-informer-n2');
    const pod = (name: string, nodeName: string) =>
      rest.create(Resources.pods, {
        metadata: { name, namespace: ns },
        spec: { nodeName, containers: [{ name: 'c', image: 'registry.invalid/none' }] },
      });
    const onN1 = new Informer<Pod>(rest, {
      type: Resources.pods,
      namespace: ns,
      fieldSelector: 'spec.nodeName=kube-informer-n1',
    });
    const all = new Informer<Pod>(rest, {
      type: Resources.pods,
      namespace: ns,
      indexers: { node: indexBy((p) => p.spec?.nodeName) },
    });
    onN1.start();
    all.start();
    try {
      await Promise.all([onN1.waitForSync(10_000), all.waitForSync(10_000)]);
      await pod('a', 'kube-informer-n1');
      await pod('b', 'kube-informer-n2');
      await pod('c', 'kube-informer-n1');
      await waitFor(() => all.list().length === 3, { what: 'three pods in the unfiltered cache', timeoutMs: 10_000 });
      await waitFor(() => onN1.list().length === 2, { what: 'two pods in the n1 cache', timeoutMs: 10_000 });
      expect(
        onN1
          .list()
          .map((p) => p.metadata?.name)
          .sort(),
      ).toEqual(['a', 'c']);
      expect(all.byIndex('node', 'kube-informer-n2').map((p) => p.metadata?.name)).toEqual(['b']);
      expect(
        all
          .byIndex('node', 'kube-informer-n1')
          .map((p) => p.metadata?.name)
          .sort(),
      ).toEqual(['a', 'c']);
    } finally {
      await Promise.all([onN1.stop(), all.stop()]);
    }
  });

  it('resumes from its resourceVersion after a dropped watch, without relisting', async () => {
    const { client, informer } = flakyInformer();
    const adds: string[] = [];
    informer.addHandlers({ onAdd: (o) => adds.push(o.metadata?.name ?? '') });
    informer.start();
    try {
      await informer.waitForSync(10_000);
      await createConfigMap('one');
      await waitFor(() => informer.get(ns, 'one'), { what: 'cm one', timeoutMs: 10_000 });
      client.cut();
      await createConfigMap('two'); // during the gap
      await waitFor(() => informer.get(ns, 'two'), { what: 'cm two after the cut', timeoutMs: 10_000 });
      expect(client.lists).toBe(1);
      expect(client.watches).toBeGreaterThanOrEqual(2);
      expect(adds).toEqual(['one', 'two']);
    } finally {
      await informer.stop();
    }
  });

  it('relists when a watch reports 410 Gone, and reports what changed meanwhile, deletes included', async () => {
    const { client, informer } = flakyInformer();
    const seen: string[] = [];
    informer.addHandlers({
      onAdd: (o) => seen.push(`add ${o.metadata?.name}`),
      onDelete: (o) => seen.push(`delete ${o.metadata?.name}`),
    });
    await createConfigMap('doomed');
    informer.start();
    try {
      await informer.waitForSync(10_000);
      const syncedAt = informer.lastResourceVersion;
      let resume = (): void => undefined;
      client.paused = new Promise((resolve) => (resume = resolve));
      client.goneNextWatch = true;
      client.cut();
      // Changes while it is not watching: the relist must surface both, the delete included.
      await deleteConfigMap('doomed');
      await createConfigMap('born');
      resume();
      await waitFor(() => informer.get(ns, 'born') && !informer.get(ns, 'doomed'), {
        what: 'cache caught up',
        timeoutMs: 15_000,
      });
      expect(client.lists).toBe(2); // the 410 made it relist
      expect(informer.lastResourceVersion).not.toBe(syncedAt);
      expect(seen).toEqual(expect.arrayContaining(['add doomed', 'delete doomed', 'add born']));
    } finally {
      await informer.stop();
    }
  });

  it('waitForSync names the resource when it cannot sync', async () => {
    const kc = testKubeConfig();
    kc.clusters = [{ ...kc.clusters[0], server: 'https://127.0.0.1:1' }];
    const informer = new Informer<ConfigMap>(new RestClient(kc), {
      type: Resources.configMaps,
      namespace: 'x',
      fieldSelector: 'metadata.name=y',
      initialBackoffMs: 10,
    });
    informer.start();
    try {
      await expect(informer.waitForSync(300)).rejects.toThrow(
        'informer for configmaps (namespace=x, fields=metadata.name=y) not synced after 300 ms',
      );
    } finally {
      await informer.stop();
    }
  });
});
