// FO-2: runtime/kube's informer treats a watch that delivers nothing, not even a bookmark, for
// longer than its idle bound as broken and relists; a watch that delivers events is left alone.
// Real API server: a namespace nobody writes to is a watch that delivers nothing (the server's
// bookmarks come about once a minute, far beyond the bound used here).
import { Informer, type ListWatchClient } from '../../runtime/kube/informer';
import { Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { testKubeConfig, useNamespace, waitFor } from './fixture';
import { sleep } from '../sleep';

const rest = new RestClient(testKubeConfig());
const IDLE_MS = 1_000;

/** Counts the informer's lists (a relist is a second list); relists wait while `hold` is set. */
function countingClient(): ListWatchClient & { lists: number; hold: Promise<void> | undefined } {
  const client = {
    lists: 0,
    hold: undefined as Promise<void> | undefined,
    list: (async (type, options) => {
      client.lists++;
      if (client.lists > 1) await client.hold;
      return rest.list(type, options);
    }) as ListWatchClient['list'],
    watch: ((path, query, onEvent) => rest.watch(path, query, onEvent)) as ListWatchClient['watch'],
  };
  return client;
}

const configMap = (namespace: string, name: string, value: string): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { v: value } }) as KubeObject;

describe('FO-2 watch idle bound (runtime/kube informer, real API server)', () => {
  const ns = useNamespace();
  let informer: Informer<KubeObject> | undefined;

  afterEach(async () => {
    await informer?.stop();
    informer = undefined;
  });
  /** An informer of the namespace's ConfigMaps over `client` with the short idle bound, synced. */
  const startSynced = async (client: ReturnType<typeof countingClient>) => {
    const started = new Informer(client, { type: Resources.configMaps, namespace: ns(), idleTimeoutMs: IDLE_MS });
    started.start();
    await started.waitForSync(10_000);
    return started;
  };

  test('FO-2: a watch silent for longer than the bound is treated as broken: not current, relisted, and the cache still follows the API server', async () => {
    await rest.create(Resources.configMaps, configMap(ns(), 'a', '1'));
    const client = countingClient();
    informer = await startSynced(client);
    await waitFor(() => informer!.isCurrent, { what: 'the watch open (current)' });
    let release: () => void = () => undefined;
    client.hold = new Promise((resolve) => (release = resolve));
    await waitFor(() => informer!.idleRelistCount >= 1, { what: 'an idle relist', timeoutMs: 10_000 });
    await waitFor(() => client.lists >= 2, { what: 'a second list' });
    // Until the relist is back, the informer cannot prove its cache current (the agent's heartbeat stops).
    expect(informer.isCurrent).toBe(false);
    release();
    await waitFor(() => informer!.isCurrent, { what: 'current again after the relist' });
    await rest.create(Resources.configMaps, configMap(ns(), 'b', '1'));
    await waitFor(() => informer!.get(ns(), 'b'), { what: 'the object created after the relist in the cache' });
  });

  test('FO-2: a watch that keeps delivering is never cut: no relist while events arrive faster than the bound', async () => {
    await rest.create(Resources.configMaps, configMap(ns(), 'busy', '0'));
    const client = countingClient();
    informer = await startSynced(client);
    for (let i = 1; i <= 12; i++) {
      await rest.patch(Resources.configMaps, ns(), 'busy', 'merge', { data: { v: String(i) } });
      await sleep(IDLE_MS / 4);
    }
    await waitFor(() => (informer!.get(ns(), 'busy') as KubeObject & { data?: { v?: string } })?.data?.v === '12', {
      what: 'the last write seen',
    });
    expect(informer.idleRelistCount).toBe(0);
    expect(client.lists).toBe(1);
  });
});
