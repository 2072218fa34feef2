/**
 * metav1.Condition helpers, pure. `lastTransitionTime` moves only when `status` flips, so
 * a reconciler may set the same condition every pass without rewriting history.
 */

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** The wire shape of metav1.Condition. */
export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  /** CamelCase, e.g. `NoFreeAddress`. */
  readonly reason: string;
  /** What a person can do about it. */
  readonly message: string;
  readonly observedGeneration?: number;
  /** RFC 3339, seconds precision as the API server stores it. */
  readonly lastTransitionTime: string;
}

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

const CAMEL_CASE = /^[A-Z][A-Za-z0-9]*$/;

/**
 * Returns a new list with `input` set: appended if its type is new; otherwise replaced,
 * keeping the old `lastTransitionTime` unless the status changed. Order is preserved.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date = new Date(),
): Condition[] {
  if (!CAMEL_CASE.test(input.reason)) {
    throw new Error(`condition ${input.type}: reason '${input.reason}' must be CamelCase (e.g. 'NoFreeAddress')`);
  }
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === input.type);
  const previous = index >= 0 ? list[index] : undefined;
  const lastTransitionTime =
    previous !== undefined && previous.status === input.status ? previous.lastTransitionTime : toRfc3339Seconds(now);
  const next: Condition = { ...input, lastTransitionTime };
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

/** metav1.Time is RFC 3339 with whole seconds. */
export function toRfc3339Seconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime has exactly six fractional digits; the API server rejects three. */
export function toMicroTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
