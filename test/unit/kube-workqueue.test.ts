import { TerminalError, WorkQueue, backoffDelay } from '../../runtime/kube/workqueue';

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
    });
    const start = Date.now();
    queue.add('a');
    await jest.advanceTimersByTimeAsync(1000);
    expect(attempts.map((t) => t - start)).toEqual([0, 100, 300, 700]);
    expect(queue.numRequeues('a')).toBe(0);
    await queue.shutdown();
  });

  it('does not retry a TerminalError', async () => {
    jest.useFakeTimers();
    const queue = new WorkQueue({ baseDelayMs: 10 });
    let attempts = 0;
    const errors: unknown[] = [];
    queue.run(
      async () => {
        attempts++;
        throw new TerminalError('spec is invalid');
      },
      1,
      (_key, err) => errors.push(err),
    );
    queue.add('a');
    await jest.advanceTimersByTimeAsync(10_000);
    expect(attempts).toBe(1);
    expect(errors).toHaveLength(1);
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

  it('polls with requeueAfterMs without counting a failure', async () => {
    jest.useFakeTimers();
    const queue = new WorkQueue();
    let passes = 0;
    queue.run(async () => {
      passes++;
      return { requeueAfterMs: 1000 };
    });
    queue.add('a');
    await jest.advanceTimersByTimeAsync(3500);
    expect(passes).toBe(4);
    expect(queue.numRequeues('a')).toBe(0);
    await queue.shutdown();
  });

  it('shutdown drains queued keys, waits for in-flight work, then refuses adds', async () => {
    const queue = new WorkQueue();
    const held = gate();
    const done: string[] = [];
    queue.add('a');
    queue.add('b');
    queue.add('c');
    queue.run(async (key) => {
      if (key === 'a') await held.promise;
      done.push(key);
    }, 1);
    await tick();
    const stopped = queue.shutdown();
    queue.add('d');
    let finished = false;
    void stopped.then(() => (finished = true));
    await tick();
    expect(finished).toBe(false);
    held.open();
    await stopped;
    expect(done).toEqual(['a', 'b', 'c']);
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
