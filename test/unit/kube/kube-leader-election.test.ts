import { LeaderElector, decideLease, validateTimings, type LeaseSpec } from '../../../runtime/kube/leader-election';
import { MemoryLeases, startLeading, testTimings } from '../memory-leases';
import { sleep } from '../../sleep';

const now = new Date('2025-01-01T00:01:00.000Z');
const ms = now.getTime();
/** A Lease held by `holderIdentity` for 15 s (the duration every case here asks for); `over` is what the case is about. */
const lease = (holderIdentity: string, over: LeaseSpec = {}): LeaseSpec => ({
  holderIdentity,
  leaseDurationSeconds: 15,
  ...over,
});

describe('decideLease', () => {
  it('creates an absent Lease with itself as holder', () => {
    expect(decideLease(undefined, 0, 'a', 15, now)).toEqual({
      action: 'create',
      spec: {
        holderIdentity: 'a',
        leaseDurationSeconds: 15,
        acquireTime: '2025-01-01T00:01:00.000000Z',
        renewTime: '2025-01-01T00:01:00.000000Z',
        leaseTransitions: 0,
      },
    });
  });

  it("waits while another holder's record changed less than leaseDuration ago (by our clock)", () => {
    const held = lease('b', { leaseTransitions: 3, renewTime: '2020-01-01T00:00:00.000000Z' });
    // renewTime is years old, but we observed the record only 14.9 s ago: still valid.
    expect(decideLease(held, ms - 14_900, 'a', 15, now)).toEqual({ action: 'wait', holder: 'b' });
  });

  it('takes over an expired Lease and counts a transition', () => {
    const held = lease('b', { leaseTransitions: 3, acquireTime: 'old' });
    const decision = decideLease(held, ms - 15_000, 'a', 15, now);
    expect(decision).toMatchObject({
      action: 'update',
      spec: { holderIdentity: 'a', leaseTransitions: 4, acquireTime: '2025-01-01T00:01:00.000000Z' },
    });
  });

  it('takes a released Lease (empty holder) at once', () => {
    const released = lease('', { leaseDurationSeconds: 1, leaseTransitions: 4 });
    expect(decideLease(released, ms, 'a', 15, now)).toMatchObject({
      action: 'update',
      spec: { holderIdentity: 'a', leaseTransitions: 5 },
    });
  });

  it('renews its own Lease keeping acquireTime and transitions', () => {
    const mine = lease('a', { leaseTransitions: 2, acquireTime: 'then', renewTime: 'then' });
    expect(decideLease(mine, ms - 5_000, 'a', 15, now)).toEqual({
      action: 'update',
      spec: { ...mine, renewTime: '2025-01-01T00:01:00.000000Z' },
    });
  });

  it('uses the duration written in the Lease, not its own, to judge expiry', () => {
    const held = lease('b', { leaseDurationSeconds: 60 });
    expect(decideLease(held, ms - 30_000, 'a', 15, now).action).toBe('wait');
  });
});

describe('validateTimings', () => {
  it('refuses timings where a leader could be replaced while it still believes it leads', () => {
    expect(() => validateTimings(10_000, 10_000, 2_000)).toThrow(
      'leaseDuration (10000 ms) must be greater than renewDeadline (10000 ms)',
    );
    expect(() => validateTimings(15_000, 2_000, 2_000)).toThrow(
      'renewDeadline (2000 ms) must be greater than 1.2 x retryPeriod (2000 ms)',
    );
    expect(() => validateTimings(15_000, 10_000, 2_000)).not.toThrow();
  });
});

const fast = testTimings(20);

describe('LeaderElector against an in-memory Lease', () => {
  it('elects exactly one of two candidates and hands over at once on release', async () => {
    const leases = new MemoryLeases();
    const log: string[] = [];
    const make = (identity: string): LeaderElector =>
      new LeaderElector(leases, {
        ...fast,
        identity,
        onStartedLeading: () => log.push(`${identity} leads`),
        onStoppedLeading: () => log.push(`${identity} stops`),
      });
    const a = make('a');
    const b = make('b');
    a.start();
    await sleep(50);
    b.start();
    await sleep(150);
    expect([a.isLeader, b.isLeader]).toEqual([true, false]);
    expect(b.leader).toBe('a');
    // a's last renewal, as the Lease records it: without a release nobody may take it before this plus its duration.
    const aRenewed = Date.parse(leases.lease!.spec!.renewTime!);
    await a.release();
    expect(leases.lease?.spec?.holderIdentity).toBe('');
    while (!b.isLeader) await sleep(5);
    // b took the released Lease before a's could have expired: the release, not the expiry, handed it over.
    expect(Date.parse(leases.lease!.spec!.acquireTime!)).toBeLessThan(aRenewed + fast.leaseDurationMs);
    expect(leases.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.release();
    expect(log).toEqual(['a leads', 'a stops', 'b leads', 'b stops']);
  });

  it('stops leading when it cannot renew within renewDeadline', async () => {
    const leases = new MemoryLeases();
    const { elector: a, signal } = await startLeading(leases, { ...fast, identity: 'a' });
    leases.failing = true;
    while (a.isLeader) await sleep(5);
    // Counted from the last renewal the Lease records (the cut can fall anywhere between two
    // renewals, later still on a loaded machine): not before renewDeadline (200 ms, less the
    // moment between an attempt's start and its record), and before the Lease could expire for
    // anyone else (300 ms).
    const took = Date.now() - Date.parse(leases.lease!.spec!.renewTime!);
    expect(took).toBeGreaterThanOrEqual(180);
    expect(took).toBeLessThan(300);
    expect(signal.aborted).toBe(true);
    await a.release();
  });
});

// A crashed leader: its record stays as it last wrote it. Fake time (Date and timers), and the
// jitter pinned to its top (client-go's retries at [1, 2.2) x retryPeriod), so what is shown is when
// the candidate tries, not how fast this machine is.
describe('LeaderElector: a candidate waiting on a crashed leader', () => {
  const timings = {
    namespace: 'juneau-system',
    name: 'juneau-controller',
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
  };
  /** The dead leader's record, as it last renewed it at `at`. */
  const crashed = (leases: MemoryLeases, at: number) => {
    const stamp = new Date(at).toISOString().replace('Z', '000Z');
    leases.lease = {
      metadata: { namespace: timings.namespace, name: timings.name, resourceVersion: String(at) },
      spec: { holderIdentity: 'dead', leaseDurationSeconds: 15, acquireTime: stamp, renewTime: stamp },
    };
  };
  let b: LeaderElector | undefined;
  beforeEach(() => {
    jest.useFakeTimers();
    jest.spyOn(Math, 'random').mockReturnValue(0.999);
  });
  afterEach(async () => {
    b?.nudge(); // nothing pending on the sleeper when released below
    const released = b?.release();
    await jest.runOnlyPendingTimersAsync();
    await released;
    b = undefined;
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  it('takes the Lease just after the record it saw expires, not at the next jittered retry past it', async () => {
    const leases = new MemoryLeases();
    const t0 = Date.now();
    crashed(leases, t0);
    const gets = jest.spyOn(leases, 'get');
    b = new LeaderElector(leases, { ...timings, identity: 'b' });
    b.start();
    // Retries at 4.4 s, 8.8 s, 13.2 s (2.2 x 2 s): the 4th would come at 17.6 s, 2.6 s past the expiry.
    await jest.advanceTimersByTimeAsync(15_000 - 1);
    expect(b.isLeader).toBe(false);
    expect(gets).toHaveBeenCalledTimes(4);
    await jest.advanceTimersByTimeAsync(10);
    expect(b.isLeader).toBe(true);
    expect(leases.lease?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('counts the expiry from the record a watch delivered (observe), not from its own later read of it', async () => {
    const leases = new MemoryLeases();
    const t0 = Date.now();
    crashed(leases, t0);
    b = new LeaderElector(leases, { ...timings, identity: 'b' });
    b.start();
    await jest.advanceTimersByTimeAsync(3_000);
    // The leader renews once more at 3 s, then dies; the watch delivers that record at once. The
    // candidate's own read would see it only at 4.4 s (expiry 19.4 s).
    crashed(leases, t0 + 3_000);
    b.observe(structuredClone(leases.lease));
    await jest.advanceTimersByTimeAsync(15_000 - 1);
    expect(b.isLeader).toBe(false);
    await jest.advanceTimersByTimeAsync(10);
    expect(b.isLeader).toBe(true);
  });

  it('retries an attempt that failed at the jittered period, not in a busy loop at the expiry it waited for', async () => {
    const leases = new MemoryLeases();
    crashed(leases, Date.now());
    const gets = jest.spyOn(leases, 'get');
    b = new LeaderElector(leases, { ...timings, identity: 'b' });
    b.start();
    await jest.advanceTimersByTimeAsync(14_000);
    const before = gets.mock.calls.length;
    leases.failing = true; // from just before the expiry: the attempt at the expiry fails
    await jest.advanceTimersByTimeAsync(1_000 + 10 * 4_400);
    // The one at the expiry, then one per 4.4 s.
    expect(gets.mock.calls.length - before).toBe(11);
    leases.failing = false;
    await jest.advanceTimersByTimeAsync(4_400);
    expect(b.isLeader).toBe(true);
  });

  it('takes a Lease a watch shows released at once, not at its next retry', async () => {
    const leases = new MemoryLeases();
    crashed(leases, Date.now());
    b = new LeaderElector(leases, { ...timings, identity: 'b' });
    b.start();
    await jest.advanceTimersByTimeAsync(100);
    expect(b.isLeader).toBe(false);
    leases.lease!.spec = { ...leases.lease!.spec, holderIdentity: '', leaseDurationSeconds: 1 };
    b.observe(structuredClone(leases.lease));
    await jest.advanceTimersByTimeAsync(1);
    expect(b.isLeader).toBe(true);
  });
});
