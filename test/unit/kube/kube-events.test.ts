import {
  EventRecorder,
  EventSeriesCache,
  type EventSink,
  type EventSpec,
  type KubeEvent,
} from '../../../runtime/kube/events';
import { KubeApiError } from '../../../runtime/kube/rest';
import { sleep } from '../../sleep';

const spec: EventSpec = {
  regarding: { apiVersion: 'v1', kind: 'Service', namespace: 'shop', name: 'web', uid: 'u1' },
  type: 'Warning',
  reason: 'NoFreeAddress',
  action: 'Allocate',
  note: 'pool default has no free address',
};
const reporter = { controller: 'juneau.io/controller', instance: 'controller-0' };
const at = (seconds: number): Date => new Date(Date.UTC(2025, 0, 1, 0, 0, seconds));

describe('EventSeriesCache', () => {
  it('creates the first Event with reporter, MicroTime and the regarding namespace', () => {
    const cache = new EventSeriesCache(reporter);
    const decision = cache.observe(spec, at(0));
    expect(decision.op).toBe('create');
    const event = (decision as { event: KubeEvent }).event;
    expect(event).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { namespace: 'shop' },
      reportingController: 'juneau.io/controller',
      reportingInstance: 'controller-0',
      eventTime: '2025-01-01T00:00:00.000000Z',
      reason: 'NoFreeAddress',
      action: 'Allocate',
      type: 'Warning',
    });
    expect(event.metadata?.name).toMatch(/^web\.[0-9a-f]+$/);
    expect(event.series).toBeUndefined();
  });

  it('patches a series at the second repeat and then only counts in memory until flushed', () => {
    const cache = new EventSeriesCache(reporter);
    cache.observe(spec, at(0));
    const second = cache.observe(spec, at(1));
    expect(second).toMatchObject({
      op: 'patch',
      event: { series: { count: 2, lastObservedTime: '2025-01-01T00:00:01.000000Z' } },
    });
    for (let s = 2; s < 100; s++) expect(cache.observe(spec, at(s)).op).toBe('none');
    const dirty = cache.takeDirty(at(100));
    expect(dirty).toHaveLength(1);
    expect(dirty[0].event.series?.count).toBe(100);
    expect(cache.takeDirty(at(101))).toHaveLength(0); // written once
  });

  it('keeps different reasons, actions and objects apart', () => {
    const cache = new EventSeriesCache(reporter);
    expect(cache.observe(spec, at(0)).op).toBe('create');
    expect(cache.observe({ ...spec, reason: 'Allocated', type: 'Normal' }, at(0)).op).toBe('create');
    expect(cache.observe({ ...spec, action: 'Release' }, at(0)).op).toBe('create');
    expect(cache.observe({ ...spec, regarding: { ...spec.regarding, name: 'api' } }, at(0)).op).toBe('create');
    expect(cache.observe({ ...spec, note: 'different words, same event' }, at(0)).op).toBe('patch');
  });

  it('starts a new Event once a key has been quiet longer than the window', () => {
    const cache = new EventSeriesCache(reporter, 60_000);
    cache.observe(spec, at(0));
    expect(cache.observe(spec, at(61)).op).toBe('create');
    cache.takeDirty(at(200));
    expect(cache.size).toBe(0);
  });

  it("puts cluster-scoped objects' Events in default and truncates long notes", () => {
    const cache = new EventSeriesCache(reporter);
    const decision = cache.observe({ ...spec, regarding: { kind: 'Node', name: 'n1' }, note: 'x'.repeat(5000) }, at(0));
    const event = (decision as { event: KubeEvent }).event;
    expect(event.metadata?.namespace).toBe('default');
    expect(event.note).toHaveLength(1024);
  });
});

describe('EventRecorder', () => {
  function fakeSink(): EventSink & { calls: string[]; failPatchWith?: Error } {
    const sink = {
      calls: [] as string[],
      failPatchWith: undefined as Error | undefined,
      create: async <T>(_type: unknown, object: T): Promise<T> => {
        await sleep(5); // a slow create must still come first
        sink.calls.push('create');
        return object;
      },
      patch: async <T>(_t: unknown, _ns: unknown, _n: unknown, _p: unknown, body: unknown): Promise<T> => {
        if (sink.failPatchWith) throw sink.failPatchWith;
        sink.calls.push(`patch ${JSON.stringify((body as { series: { count: number } }).series.count)}`);
        return {} as T;
      },
    };
    return sink as unknown as EventSink & { calls: string[]; failPatchWith?: Error };
  }

  it('turns a hot loop into one create and few patches, in order', async () => {
    const sink = fakeSink();
    let now = 0;
    const recorder = new EventRecorder(sink, {
      ...{ reportingController: 'c', reportingInstance: 'i' },
      clock: () => at(now++),
    });
    for (let i = 0; i < 50; i++) recorder.record(spec);
    await recorder.stop();
    expect(sink.calls).toEqual(['create', 'patch 2', 'patch 50']);
  });

  it('creates a new Event when the old one expired on the server', async () => {
    const sink = fakeSink();
    const recorder = new EventRecorder(sink, { reportingController: 'c', reportingInstance: 'i' });
    recorder.record(spec);
    sink.failPatchWith = new KubeApiError(404, 'NotFound', 'gone', undefined);
    recorder.record(spec);
    await recorder.flush();
    sink.failPatchWith = undefined;
    recorder.record(spec);
    await recorder.stop();
    expect(sink.calls).toEqual(['create', 'create']);
  });
});
