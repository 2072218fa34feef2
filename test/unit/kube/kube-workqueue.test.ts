import { WorkQueue, backoffDelay, done } from '../../../runtime/kube/workqueue';

/** A promise the test resolves by hand, to hold a handler mid-pass. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('WorkQueue', () => {
  afterEach(() => jest.useRealTimers());

  it('deduplicates a key added many times before it is taken', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    queue.add('b');
    queue.add('a');
    expect(queue.length).toBe(2);
    expect(await queue.get()).toBe('a');
    expect(await queue.get()).toBe('b');
  });

  it('re-queues a key added while it is processed exactly once, after done()', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    const key = await queue.get();
    queue.add('a');
    queue.add('a');
    expect(queue.length).toBe(0); // not handed to a second worker while in flight
    queue.done(key!);
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe('a');
    queue.done('a');
    expect(queue.length).toBe(0);
  });

  it('never runs one key in two workers at once, and loses no change', async () => {
    const queue = new WorkQueue();
    const held = gate();
    const passes: string[] = [];
    let concurrent = 0;
    let maxConcurrent = 0;
    queue.run(async (key) => {
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      passes.push(key);
      if (passes.length === 1) await held.promise;
      concurrent--;
      return done();
    }, 4);
    queue.add('a');
    await tick();
    queue.add('a'); // changed while the first pass runs
    await tick();
    held.open();
    await tick();
    await queue.shutdown();
    expect(passes).toEqual(['a', 'a']);
    expect(maxConcurrent).toBe(1);
  });

  it('grows the per-key retry delay exponentially up to the cap', () => {
    expect([0, 1, 2, 3, 4].map((n) => backoffDelay(n, 5, 1000))).toEqual([5, 10, 20, 40, 80]);
    expect(backoffDelay(10, 5, 1000)).toBe(1000);
    expect(backoffDelay(5000, 5, 1000)).toBe(1000); // 2^5000 is Infinity; still capped
  });

  it('retries a failing key after its backoff and forgets failures on success', async () => {
    jest.useFakeTimers();
    const queue = new WorkQueue({ baseDelayMs: 100, maxDelayMs: 1000 });
    const attempts: number[] = [];
    let failuresLeft = 3;
    queue.run(async () => {
      attempts.push(Date.now());
      if (failuresLeft-- > 0) throw new Error('boom');
      return done();
    });
    const start = Date.now();
    queue.add('a');
    await jest.advanceTimersByTimeAsync(1000);
    expect(attempts.map((t) => t - start)).toEqual([0, 100, 300, 700]);
    expect(queue.numRequeues('a')).toBe(0);
    await queue.shutdown();
  });

  it('counts requeues and caps them per key independently', () => {
    const queue = new WorkQueue({ baseDelayMs: 1, maxDelayMs: 4 });
    queue.addRateLimited('a');
    queue.addRateLimited('a');
    queue.addRateLimited('b');
    expect(queue.numRequeues('a')).toBe(2);
    expect(queue.numRequeues('b')).toBe(1);
    queue.forget('a');
    expect(queue.numRequeues('a')).toBe(0);
    return queue.shutdown();
  });

  it('addAfter keeps the earliest pending time for a key', async () => {
    jest.useFakeTimers();
    const queue = new WorkQueue();
    queue.addAfter('a', 500);
    queue.addAfter('a', 100);
    queue.addAfter('a', 900);
    await jest.advanceTimersByTimeAsync(99);
    expect(queue.length).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(queue.length).toBe(1);
    await jest.advanceTimersByTimeAsync(1000);
    expect(queue.length).toBe(1);
  });

  it('shutdown drains queued keys, waits for in-flight work, then refuses adds', async () => {
    const queue = new WorkQueue();
    const held = gate();
    const finished: string[] = [];
    queue.add('a');
    queue.add('b');
    queue.add('c');
    queue.run(async (key) => {
      if (key === 'a') await held.promise;
      finished.push(key);
      return done();
    }, 1);
    await tick();
    const stopped = queue.shutdown();
    queue.add('d');
    let stopDone = false;
    void stopped.then(() => (stopDone = true));
    await tick();
    expect(stopDone).toBe(false);
    held.open();
    await stopped;
    expect(finished).toEqual(['a', 'b', 'c']);
    expect(await queue.get()).toBeUndefined();
  });

  it('reports queue depth as it changes', async () => {
    const depths: number[] = [];
    const queue = new WorkQueue({ onDepthChange: (d) => depths.push(d) });
    queue.add('a');
    queue.add('b');
    await queue.get();
    expect(depths).toEqual([1, 2, 1]);
  });
});
