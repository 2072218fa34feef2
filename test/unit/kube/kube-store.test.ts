import { IndexedStore, indexBy } from '../../../runtime/kube/store';

interface Pod {
  metadata: { namespace?: string; name: string; resourceVersion?: string };
  spec: { nodeName?: string; networks?: string[] };
}
const pod = (namespace: string, name: string, nodeName?: string, rv = '1', networks: string[] = []): Pod => ({
  metadata: { namespace, name, resourceVersion: rv },
  spec: { nodeName, networks },
});
const names = (pods: Pod[]): string[] => pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).sort();

describe('IndexedStore', () => {
  const make = (): IndexedStore<Pod> =>
    new IndexedStore<Pod>({ nodeName: indexBy((p) => p.spec.nodeName), network: (p) => p.spec.networks ?? [] });

  it('gets by namespace/name and lists all or one namespace', () => {
    const store = make();
    store.upsert(pod('a', 'p1', 'n1'));
    store.upsert(pod('b', 'p2', 'n1'));
    expect(store.get('a', 'p1')?.spec.nodeName).toBe('n1');
    expect(store.get('b', 'p1')).toBeUndefined();
    expect(names(store.list())).toEqual(['a/p1', 'b/p2']);
    expect(names(store.list('b'))).toEqual(['b/p2']);
  });

  it('keeps secondary indexes right through add, move and delete', () => {
    const store = make();
    store.upsert(pod('a', 'p1', 'n1'));
    store.upsert(pod('a', 'p2', 'n1'));
    store.upsert(pod('a', 'p3')); // unscheduled: in no nodeName bucket
    expect(names(store.byIndex('nodeName', 'n1'))).toEqual(['a/p1', 'a/p2']);
    store.upsert(pod('a', 'p2', 'n2', '2'));
    expect(names(store.byIndex('nodeName', 'n1'))).toEqual(['a/p1']);
    expect(names(store.byIndex('nodeName', 'n2'))).toEqual(['a/p2']);
    store.delete('a/p1');
    expect(store.byIndex('nodeName', 'n1')).toEqual([]);
    expect(store.indexKeys('nodeName', 'n2')).toEqual(['a/p2']);
  });

  it('files an object under several values of a multi-valued index', () => {
    const store = make();
    store.upsert(pod('a', 'p1', 'n1', '1', ['red', 'blue']));
    store.upsert(pod('a', 'p2', 'n1', '1', ['blue']));
    expect(names(store.byIndex('network', 'blue'))).toEqual(['a/p1', 'a/p2']);
    store.upsert(pod('a', 'p1', 'n1', '2', ['red']));
    expect(names(store.byIndex('network', 'blue'))).toEqual(['a/p2']);
  });

  it('reports what a relist added, changed and deleted', () => {
    const store = make();
    store.upsert(pod('a', 'keep', 'n1', '1'));
    store.upsert(pod('a', 'change', 'n1', '1'));
    store.upsert(pod('a', 'gone', 'n1', '1'));
    const result = store.replace([
      pod('a', 'keep', 'n1', '1'),
      pod('a', 'change', 'n2', '5'),
      pod('a', 'new', 'n1', '6'),
    ]);
    expect(names(result.added)).toEqual(['a/new']);
    expect(result.updated.map((u) => [u.old.spec.nodeName, u.object.spec.nodeName])).toEqual([['n1', 'n2']]);
    expect(names(result.deleted)).toEqual(['a/gone']);
    expect(names(store.byIndex('nodeName', 'n1'))).toEqual(['a/keep', 'a/new']);
    expect(store.size).toBe(3);
  });

  it('handles cluster-scoped objects and names an unknown index', () => {
    const store = make();
    store.upsert({ metadata: { name: 'node-1' }, spec: {} });
    expect(store.get(undefined, 'node-1')).toBeDefined();
    expect(store.getByKey('node-1')).toBeDefined();
    expect(() => store.byIndex('nope', 'x')).toThrow("no index 'nope' (have: namespace, nodeName, network)");
  });
});
