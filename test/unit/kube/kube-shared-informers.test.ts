// One informer per kind and selection for the whole controller process (the
// reconcilers, the duplicate detector and the webhooks each built their own, and held 10,000
// ARPAdvertisements two or three times). Only the sharing is under test: nothing is started, so
// the client is never called (a stub that throws if it is).
import { SharedInformers } from '../../../runtime/kube/shared-informers';
import { Resources } from '../../../runtime/kube/resources';
import { IndexedStore, indexBy } from '../../../runtime/kube/store';
import type { ListWatchClient } from '../../../runtime/kube/informer';
import type { KubeObject } from '../../../runtime/kube/types';

const client: ListWatchClient = {
  list: () => Promise.reject(new Error('not started: list must not be called')),
  watch: () => Promise.reject(new Error('not started: watch must not be called')),
};
type Pod = KubeObject & { spec: { nodeName?: string; serviceAccountName?: string } };
const pod = (name: string, nodeName: string, serviceAccountName = 'default', rv = '1'): Pod => ({
  metadata: { namespace: 'ns', name, resourceVersion: rv },
  spec: { nodeName, serviceAccountName },
});
const byNode = indexBy<Pod>((p) => p.spec.nodeName);
const byAccount = indexBy<Pod>((p) => p.spec.serviceAccountName);
const names = (pods: Pod[]) => pods.map((p) => p.metadata?.name).sort();

describe('SharedInformers', () => {
  it('gives every reader of one type and selection the same informer, with the indexes of each', () => {
    const shared = new SharedInformers(client);
    const a = shared.informer<Pod>({ type: Resources.pods, indexers: { node: byNode } });
    a.store.upsert(pod('p1', 'n1', 'builder'));
    const b = shared.informer<Pod>({ type: Resources.pods, indexers: { account: byAccount } });
    expect(b).toBe(a);
    // The second reader's index files what was cached before it asked, and what comes after.
    b.store.upsert(pod('p2', 'n1'));
    expect(names(b.byIndex('account', 'builder'))).toEqual(['p1']);
    expect(names(b.byIndex('account', 'default'))).toEqual(['p2']);
    expect(names(a.byIndex('node', 'n1'))).toEqual(['p1', 'p2']);
    expect(shared.all()).toHaveLength(1);
  });

  it('keeps another namespace or selector apart', () => {
    const shared = new SharedInformers(client);
    const all = shared.informer<Pod>({ type: Resources.pods });
    expect(shared.informer<Pod>({ type: Resources.pods, namespace: 'ns' })).not.toBe(all);
    expect(shared.informer<Pod>({ type: Resources.pods, labelSelector: 'app=x' })).not.toBe(all);
    expect(shared.informer<Pod>({ type: Resources.nodes })).not.toBe(all);
    expect(shared.all()).toHaveLength(4);
  });

  it('refuses one index name with two different functions, naming the index', () => {
    const shared = new SharedInformers(client);
    shared.informer<Pod>({ type: Resources.pods, indexers: { node: byNode } });
    expect(() => shared.informer<Pod>({ type: Resources.pods, indexers: { node: byAccount } })).toThrow(/index 'node'/);
    // The same function again is the same index, not a conflict.
    expect(() => shared.informer<Pod>({ type: Resources.pods, indexers: { node: byNode } })).not.toThrow();
  });
});

describe('IndexedStore without per-object filing records', () => {
  it('moves an updated object between index values and forgets a deleted one', () => {
    const store = new IndexedStore<Pod>({ node: byNode });
    store.upsert(pod('p1', 'n1'));
    store.upsert(pod('p1', 'n2', 'default', '2'));
    expect(store.indexKeys('node', 'n1')).toEqual([]);
    expect(store.indexKeys('node', 'n2')).toEqual(['ns/p1']);
    store.delete('ns/p1');
    expect(store.indexKeys('node', 'n2')).toEqual([]);
    expect(store.indexKeys('namespace', 'ns')).toEqual([]);
  });
});
