// The "nothing changed" helper itself (quiet-watch.ts) on the real API server: it must fail on a
// change inside its window — a write, a creation, a deletion, one that is undone before the window
// ends — and pass when nothing is written. Otherwise every test that uses it could pass vacuously.
import { Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { sleep } from '../sleep';
import { testKubeConfig, useNamespace } from './fixture';
import { expectNoChangeFor, expectNoChangesFor, watchForChanges } from './quiet-watch';

const rest = new RestClient(testKubeConfig());
type ConfigMap = KubeObject & { data?: Record<string, string> };
const configMap = (namespace: string, name: string, data: Record<string, string>): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data,
});
const patchData = (namespace: string, name: string, data: Record<string, string | null>) =>
  rest.patch(Resources.configMaps, namespace, name, 'merge', { data });

describe('quiet-watch: a window in which nothing may change', () => {
  const ns = useNamespace();

  it('passes when nothing is written to the object during the window', async () => {
    await rest.create(Resources.configMaps, configMap(ns(), 'still', { a: '1' }));
    await expect(
      expectNoChangeFor(500, { type: Resources.configMaps, namespace: ns(), name: 'still' }),
    ).resolves.toBeUndefined();
  });

  it('fails on a write during the window, even one undone before the window ends, and names it', async () => {
    const namespace = ns();
    await rest.create(Resources.configMaps, configMap(namespace, 'flip', { a: '1' }));
    const watch = await watchForChanges<ConfigMap>({ type: Resources.configMaps, namespace, name: 'flip' });
    await patchData(namespace, 'flip', { a: '2' });
    await patchData(namespace, 'flip', { a: '1' });
    const err = await watch.expectNoChangeFor(300).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toContain('ConfigMap flip changed during a window in which nothing may change');
    expect(err?.message).toMatch(/MODIFIED .*\/flip .*: data\.a: "1" -> "2"\n/);
    expect(err?.message).toMatch(/MODIFIED .*\/flip .*: data\.a: "2" -> "1"$/);
    expect(watch.changes).toHaveLength(2);
  });

  it('fails on the creation of a named object that did not exist, and on a deletion', async () => {
    const namespace = ns();
    const created = await watchForChanges({ type: Resources.configMaps, namespace, name: 'late' });
    await rest.create(Resources.configMaps, configMap(namespace, 'late', {}));
    await expect(created.expectNoChangeFor(300)).rejects.toThrow(/ADDED .*\/late .*\(none\) ->/);
    const deleted = await watchForChanges({ type: Resources.configMaps, namespace, name: 'late' });
    await rest.delete(Resources.configMaps, namespace, 'late');
    await expect(deleted.expectNoChangeFor(300)).rejects.toThrow(/DELETED .*\/late .*-> \(none\)/);
  });

  it('with project, only a change of the projected part counts', async () => {
    const namespace = ns();
    await rest.create(Resources.configMaps, configMap(namespace, 'lease-like', { holder: 'a', renew: '0' }));
    const holder = await watchForChanges<ConfigMap>({
      type: Resources.configMaps,
      namespace,
      name: 'lease-like',
      project: (c) => c.data?.holder,
    });
    const renewals = (async () => {
      for (let i = 1; i <= 3; i++) await patchData(namespace, 'lease-like', { renew: String(i) });
    })();
    await renewals;
    await expect(holder.expectNoChangeFor(200)).resolves.toBeUndefined();
    const again = await watchForChanges<ConfigMap>({
      type: Resources.configMaps,
      namespace,
      name: 'lease-like',
      project: (c) => c.data?.holder,
    });
    await patchData(namespace, 'lease-like', { holder: 'b' });
    await expect(again.expectNoChangeFor(200)).rejects.toThrow(/"a" -> "b"/);
  });

  it('several watches over one window: every change of every one is reported, and all are stopped', async () => {
    const namespace = ns();
    await rest.create(Resources.configMaps, configMap(namespace, 'one', {}));
    await rest.create(Resources.configMaps, configMap(namespace, 'two', {}));
    const watches = [
      await watchForChanges({ type: Resources.configMaps, namespace, name: 'one' }),
      await watchForChanges({ type: Resources.configMaps, namespace, name: 'two' }),
    ];
    await patchData(namespace, 'two', { x: '1' });
    await expect(expectNoChangesFor(300, ...watches)).rejects.toThrow(/ConfigMap two changed/);
    // Stopped: a later write is no longer recorded.
    await patchData(namespace, 'one', { x: '1' });
    await sleep(300);
    expect(watches[0].changes).toEqual([]);
  });
});
