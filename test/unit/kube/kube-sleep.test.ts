// The runtime's one interruptible sleep (informer backoff, leader-election retries): wake() ends
// the sleep in progress at once, and only that one.
import { Sleeper } from '../../../runtime/kube/sleep';

describe('Sleeper', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('resolves after its time, or at once when woken', async () => {
    const s = new Sleeper();
    let slept = false;
    const first = s.sleep(1_000).then(() => (slept = true));
    await jest.advanceTimersByTimeAsync(999);
    expect(slept).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    await first;
    let woken = false;
    const second = s.sleep(60_000).then(() => (woken = true));
    s.wake();
    await second;
    expect(woken).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a wake with no sleep in progress does not cut the next sleep short', async () => {
    const s = new Sleeper();
    s.wake();
    let done = false;
    void s.sleep(500).then(() => (done = true));
    await jest.advanceTimersByTimeAsync(499);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });
});
