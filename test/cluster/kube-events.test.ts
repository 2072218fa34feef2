// The Event recorder writes events.k8s.io/v1 Events the API server accepts, and aggregates repeats.
import { EventRecorder, referenceTo, type KubeEvent } from '../../runtime/kube/events';
import { Resources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { TestResources, testRest, useNamespace, waitForMatch } from './fixture';

describe('EventRecorder on a real API server', () => {
  const rest = testRest();
  const namespace = useNamespace();

  it('creates an Event regarding an object, and folds 20 repeats into one series', async () => {
    const ns = namespace();
    const cm = await rest.create<KubeObject>(Resources.configMaps, { metadata: { name: 'target', namespace: ns } });
    const regarding = referenceTo({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: ns, name: 'target', uid: cm.metadata?.uid },
    });
    const recorder = new EventRecorder(rest, {
      reportingController: 'juneau.io/controller',
      reportingInstance: 'test-0',
    });
    recorder.normal(regarding, 'Allocated', 'Allocate', 'VIP 192.0.2.10 from pool default');
    for (let i = 0; i < 20; i++)
      recorder.warning(regarding, 'NoFreeAddress', 'Allocate', `pool default is full (attempt ${i})`);
    await recorder.stop();

    const list = await waitForMatch(
      () => rest.list<KubeEvent>(Resources.events, { namespace: ns }),
      (l) => l.items.length === 2 && l.items.some((e) => e.series?.count === 20),
      { what: 'two Events, one with a series of 20', timeoutMs: 10_000 },
    );
    const allocated = list.items.find((e) => e.reason === 'Allocated');
    const full = list.items.find((e) => e.reason === 'NoFreeAddress');
    expect(allocated).toMatchObject({
      type: 'Normal',
      action: 'Allocate',
      note: 'VIP 192.0.2.10 from pool default',
      reportingController: 'juneau.io/controller',
      reportingInstance: 'test-0',
      regarding: { kind: 'ConfigMap', name: 'target', namespace: ns, uid: cm.metadata?.uid },
    });
    expect(allocated?.series).toBeUndefined();
    expect(full).toMatchObject({ type: 'Warning', note: 'pool default is full (attempt 0)', series: { count: 20 } });
    // The same Events through the core/v1 view that `kubectl describe` uses.
    const core = await rest.list<KubeObject & { reason?: string }>(TestResources.coreEvents, { namespace: ns });
    expect(core.items.map((e) => e.reason).sort()).toEqual(['Allocated', 'NoFreeAddress']);
  });
});
