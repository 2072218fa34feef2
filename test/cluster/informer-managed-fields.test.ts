// The informer caches objects without metadata.managedFields (bench/scale: they are a large share
// of 10,000 cached objects and nothing reads them), from the list and from the watch alike; a PUT
// built from a cached object leaves the server's managedFields as they were.
import { Informer } from '../../runtime/kube/informer';
import { Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { createNamespace, deleteNamespace, testKubeConfig, waitFor } from './fixture';

type ConfigMap = KubeObject & {
  data?: Record<string, string>;
  metadata: { managedFields?: Array<{ manager?: string }> };
};
const rest = new RestClient(testKubeConfig());
let namespace = '';
let informer: Informer<ConfigMap> | undefined;

beforeAll(async () => {
  namespace = await createNamespace('informer-mf');
});
afterAll(async () => {
  await informer?.stop();
  await deleteNamespace(namespace);
});

const configMap = (name: string, value: string) =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace, name }, data: { k: value } }) as KubeObject;

test("the cache holds no managedFields (listed or watched); an update from a cached object keeps the server's", async () => {
  const listed = (await rest.create(Resources.configMaps, configMap('listed', 'a'), {
    fieldManager: 'bench-a',
  })) as ConfigMap;
  expect(listed.metadata.managedFields?.length).toBeGreaterThan(0); // the server keeps them
  informer = new Informer<ConfigMap>(rest, { type: Resources.configMaps, namespace });
  informer.start();
  await informer.waitForSync(30_000);
  expect(informer.get(namespace, 'listed')?.metadata).not.toHaveProperty('managedFields');

  await rest.create(Resources.configMaps, configMap('watched', 'b'), { fieldManager: 'bench-b' });
  const watched = await waitFor(() => informer!.get(namespace, 'watched'));
  expect(watched.metadata).not.toHaveProperty('managedFields');

  // A PUT of the cached object (no managedFields in the body) changes data, not the field owners' list.
  const cached = informer.get(namespace, 'listed')!;
  const updated = await rest.request<ConfigMap>('PUT', `/api/v1/namespaces/${namespace}/configmaps/listed`, {
    body: { ...cached, data: { k: 'c' } } as KubeObject,
    query: { fieldManager: 'bench-a' },
  });
  expect(updated.data).toEqual({ k: 'c' });
  expect(updated.metadata.managedFields?.map((f) => f.manager)).toEqual(['bench-a']);
});
