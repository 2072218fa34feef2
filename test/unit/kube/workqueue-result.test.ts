// The reconcile contract (runtime/kube/workqueue.ts ReconcileResult) acted on by a
// real WorkQueue run through runQueue, as the controller runs its reconcilers. Fake timers stand
// in for the clock only, so delays are exact and nothing sleeps.
import {
  done,
  requeueAfter,
  runQueue,
  TerminalError,
  WorkQueue,
  type ReconcileResult,
} from '../../../runtime/kube/workqueue';
import { RuntimeMetrics } from '../../../runtime/kube/metrics';

interface Logged {
  readonly level: 'warn' | 'error';
  readonly message: string;
  readonly fields?: Record<string, unknown>;
}

/** A real queue under runQueue with a logger that records; `outcomes` answers pass n (then the last). */
function harness(outcomes: Array<() => ReconcileResult>, options: { baseDelayMs?: number; maxDelayMs?: number } = {}) {
  const queue = new WorkQueue(options);
  const passes: number[] = [];
  const logged: Logged[] = [];
  const logger = {
    warn: (message: string, fields?: Record<string, unknown>) => logged.push({ level: 'warn', message, fields }),
    error: (message: string, fields?: Record<string, unknown>) => logged.push({ level: 'error', message, fields }),
  };
  const metrics = new RuntimeMetrics({ processMetrics: false });
  const start = Date.now();
  runQueue(
    queue,
    'test',
    async () => {
      passes.push(Date.now() - start);
      return outcomes[Math.min(passes.length - 1, outcomes.length - 1)]();
    },
    1,
    { logger, metrics },
  );
  return { queue, passes, logged, metrics };
}

const fail =
  (message = 'conflict') =>
  (): ReconcileResult => {
    throw new Error(message);
  };
const terminal = () => (): ReconcileResult => {
  throw new TerminalError('spec.requestedIP is not in any pool');
};

/** A pass that throws, then `second` on the retry 100 ms later: the failure counts until that pass and
 * is forgotten by it, and no third pass comes within `waitMs`. */
async function failThen(second: () => ReconcileResult, waitMs: number) {
  const h = harness([fail(), second], { baseDelayMs: 100 });
  h.queue.add('a');
  await jest.advanceTimersByTimeAsync(0);
  expect(h.queue.numRequeues('a')).toBe(1);
  await jest.advanceTimersByTimeAsync(waitMs);
  expect(h.passes).toEqual([0, 100]);
  expect(h.queue.numRequeues('a')).toBe(0);
  return h;
}

describe('the work queue acts on each ReconcileResult', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('done: one pass, no retry, earlier failures forgotten', async () => {
    const { queue, logged } = await failThen(done, 60_000);
    expect(logged.map((l) => l.level)).toEqual(['warn']);
    await queue.shutdown();
  });

  it('requeueAfter(ms): the key comes back after exactly ms, every time, without counting a failure', async () => {
    const { queue, passes, logged, metrics } = harness([() => requeueAfter(1_000)]);
    queue.add('a');
    await jest.advanceTimersByTimeAsync(3_500);
    expect(passes).toEqual([0, 1_000, 2_000, 3_000]);
    expect(queue.numRequeues('a')).toBe(0);
    expect(logged).toEqual([]);
    expect(await metrics.exposition()).toContain('juneau_reconcile_total{controller="test",result="requeue"} 4');
    await queue.shutdown();
  });

  it('a change during requeueAfter is not delayed by it (level-triggered)', async () => {
    const { queue, passes } = harness([() => requeueAfter(10_000)]);
    queue.add('a');
    await jest.advanceTimersByTimeAsync(2_000);
    queue.add('a');
    await jest.advanceTimersByTimeAsync(0);
    expect(passes).toEqual([0, 2_000]);
    await queue.shutdown();
  });

  it('a thrown error: rate-limited requeue with growing backoff, logged as a warning', async () => {
    const { queue, passes, logged } = harness([fail(), fail(), fail(), done], { baseDelayMs: 100, maxDelayMs: 250 });
    queue.add('a');
    await jest.advanceTimersByTimeAsync(10_000);
    expect(passes).toEqual([0, 100, 300, 550]); // 100, 200, then capped at 250
    expect(logged).toHaveLength(3);
    expect(logged.every((l) => l.level === 'warn' && l.fields?.key === 'a' && l.fields?.controller === 'test')).toBe(
      true,
    );
    expect(queue.numRequeues('a')).toBe(0);
    await queue.shutdown();
  });

  it('a TerminalError: forgotten (failure count reset, no retry), logged as an error, counted as terminal', async () => {
    const { queue, passes, logged, metrics } = await failThen(terminal(), 600_000);
    expect(logged.map((l) => l.level)).toEqual(['warn', 'error']);
    expect(logged[1].fields?.err).toContain('spec.requestedIP is not in any pool');
    expect(await metrics.exposition()).toContain('juneau_reconcile_total{controller="test",result="terminal"} 1');
    // The next change of the object brings the key back.
    queue.add('a');
    await jest.advanceTimersByTimeAsync(0);
    expect(passes).toHaveLength(3);
    await queue.shutdown();
  });

  it('shutdown cancels a pending requeueAfter', async () => {
    const { queue, passes } = harness([() => requeueAfter(1_000)]);
    queue.add('a');
    await jest.advanceTimersByTimeAsync(0);
    await queue.shutdown();
    await jest.advanceTimersByTimeAsync(5_000);
    expect(passes).toEqual([0]);
  });

  it('requeueAfter refuses a delay that is not a finite number of milliseconds >= 0', () => {
    expect(() => requeueAfter(-1)).toThrow('requeueAfter(-1)');
    expect(() => requeueAfter(Number.NaN)).toThrow('finite');
    expect(requeueAfter(0)).toEqual({ kind: 'requeueAfter', delayMs: 0 });
  });
});
