// Leader fencing, the pure parts (SLB-7 needs one writer at a time): a leader whose Lease calls hang (a partition that holds the
// connection open) steps down at renewDeadline anyway and every Lease call is aborted below it; a
// work queue shut down with `drop` runs nothing more that was queued; a fenced RestClient sends
// nothing after its fence aborted (here against a local HTTP server standing in for the API server).
import { LeaderElector, validateTimings } from '../../../runtime/kube/leader-election';
import { localApiServer } from '../local-api-server';
import { MemoryLeases, startLeading, testTimings } from '../memory-leases';
import { FencedError, RestClient } from '../../../runtime/kube/rest';
import { done, WorkQueue } from '../../../runtime/kube/workqueue';
import { sleep } from '../../sleep';

const timings = testTimings(40);

describe('a leader cut off from the API server steps down at renewDeadline', () => {
  it('steps down at renewDeadline while its Lease call hangs, before the Lease can expire for anyone else', async () => {
    const leases = new MemoryLeases();
    const { elector: a, signal } = await startLeading(leases, { ...timings, identity: 'a' });
    const cut = Date.now();
    leases.hang = true;
    while (a.isLeader) await sleep(5);
    const took = Date.now() - cut;
    expect(signal.aborted).toBe(true);
    expect(took).toBeLessThan(timings.leaseDurationMs);
    await a.release();
  });

  it('aborts every Lease call after callTimeout, which must be below renewDeadline', async () => {
    expect(() => validateTimings(15_000, 10_000, 2_000, 10_000)).toThrow(
      'callTimeout (10000 ms) must be greater than 0 and less than renewDeadline (10000 ms)',
    );
    const leases = new MemoryLeases();
    leases.hang = true;
    const a = new LeaderElector(leases, { ...timings, identity: 'a', callTimeoutMs: 50 });
    a.start();
    const started = Date.now();
    while (leases.aborted < 2) await sleep(5);
    expect(Date.now() - started).toBeLessThan(timings.renewDeadlineMs);
    await a.release();
  });
});

describe('WorkQueue.shutdown({ drop: true })', () => {
  it('drops queued keys and keys added during a pass; the pass in flight ends', async () => {
    const q = new WorkQueue();
    const seen: string[] = [];
    let release!: () => void;
    const blocked = new Promise<void>((r) => (release = r));
    q.run(async (key) => {
      seen.push(key);
      if (key === 'a') await blocked;
      return done();
    });
    q.add('a');
    await sleep(5);
    q.add('b');
    q.add('a'); // changed during its pass: would run again after it
    const shutdown = q.shutdown({ drop: true });
    release();
    await shutdown;
    expect(seen).toEqual(['a']);
    expect(q.length).toBe(0);
  });
});

describe('RestClient fenced by leadership', () => {
  it('aborts the request in flight when the fence aborts and refuses new ones without sending them', async () => {
    const received: string[] = [];
    const api = await localApiServer((req) => received.push(`${req.method} ${req.url}`)); // never answers
    const leadership = new AbortController();
    const rest = new RestClient(api.kubeConfig).fenced(leadership.signal);
    try {
      const inFlight = rest.request('PUT', '/api/v1/namespaces/a', { body: {} });
      while (received.length === 0) await sleep(5);
      leadership.abort();
      await expect(inFlight).rejects.toThrow();
      await expect(rest.request('POST', '/api/v1/namespaces', { body: {} })).rejects.toBeInstanceOf(FencedError);
      await sleep(20);
      expect(received).toEqual(['PUT /api/v1/namespaces/a']);
    } finally {
      await api.close();
    }
  });
});
