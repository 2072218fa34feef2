import { setCondition, toMicroTime, toRfc3339Seconds } from '../../../runtime/kube/conditions';
import { hasFinalizer } from '../../../runtime/kube/apply';

const t0 = new Date('2025-01-01T00:00:00.123Z');
const t1 = new Date('2025-01-01T00:05:00.000Z');
const ready = {
  type: 'Ready',
  status: 'True',
  reason: 'Allocated',
  message: 'VIP 192.0.2.10',
  observedGeneration: 1,
} as const;

describe('setCondition', () => {
  it('appends a new condition with the transition time now, in whole seconds', () => {
    const list = setCondition(undefined, ready, t0);
    expect(list).toEqual([{ ...ready, lastTransitionTime: '2025-01-01T00:00:00Z' }]);
  });

  it('keeps lastTransitionTime when the status does not flip, but updates the rest', () => {
    const first = setCondition([], ready, t0);
    const second = setCondition(
      first,
      { ...ready, reason: 'Reallocated', message: 'moved', observedGeneration: 2 },
      t1,
    );
    expect(second).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'Reallocated',
        message: 'moved',
        observedGeneration: 2,
        lastTransitionTime: '2025-01-01T00:00:00Z',
      },
    ]);
  });

  it('moves lastTransitionTime when the status flips', () => {
    const first = setCondition([], ready, t0);
    const flipped = setCondition(
      first,
      { ...ready, status: 'False', reason: 'NoFreeAddress', message: 'pool full' },
      t1,
    );
    expect(flipped[0].lastTransitionTime).toBe('2025-01-01T00:05:00Z');
    expect(flipped[0].status).toBe('False');
  });

  it('does not mutate its input and preserves the order of other conditions', () => {
    const input = setCondition(setCondition([], { ...ready, type: 'Allocated' }, t0), ready, t0);
    const frozen = JSON.stringify(input);
    const out = setCondition(
      input,
      { ...ready, type: 'Allocated', status: 'False', reason: 'PoolGone', message: 'x' },
      t1,
    );
    expect(JSON.stringify(input)).toBe(frozen);
    expect(out.map((c) => c.type)).toEqual(['Allocated', 'Ready']);
  });

  it('carries observedGeneration through', () => {
    const list = setCondition([], { ...ready, observedGeneration: 7 }, t0);
    expect(list.find((c) => c.type === 'Ready')?.observedGeneration).toBe(7);
  });

  it('refuses a reason that is not CamelCase, naming it', () => {
    expect(() => setCondition([], { ...ready, reason: 'no free address' }, t0)).toThrow(
      "reason 'no free address' must be CamelCase",
    );
  });
});

describe('time formats', () => {
  it('writes metav1.Time in seconds and MicroTime with six digits', () => {
    expect(toRfc3339Seconds(t0)).toBe('2025-01-01T00:00:00Z');
    expect(toMicroTime(t0)).toBe('2025-01-01T00:00:00.123000Z');
  });
});

describe('hasFinalizer', () => {
  it('reads metadata.finalizers', () => {
    expect(hasFinalizer({ metadata: { finalizers: ['juneau.io/claim'] } }, 'juneau.io/claim')).toBe(true);
    expect(hasFinalizer({ metadata: {} }, 'juneau.io/claim')).toBe(false);
  });
});
