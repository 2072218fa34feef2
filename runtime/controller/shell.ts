/**
 * The steps a reconcile pass ends with, written once for every reconciler: the plan decided what
 * should be; these write only what differs. Status is written once per pass and only when it
 * changed (level-triggered reconcilers run often), the plan's Events are recorded about the
 * object, and a finalizer is let go of an object that may already be gone.
 */
import { applyStatus, removeFinalizer } from '../kube/apply';
import { referenceTo, type PlannedEvent } from '../kube/events';
import type { ResourceType } from '../kube/resources';
import { isNotFound } from '../kube/rest';
import type { KubeObject, ObjectMeta } from '../kube/types';
import type { ControllerContext } from './context';

type ShellContext = Pick<ControllerContext, 'rest' | 'fieldManager' | 'recorder'>;

/** An object as the caches hold it: its metadata and its current status. */
interface Observed<S> {
  readonly metadata: ObjectMeta;
  readonly status?: S;
}

/**
 * Server-side apply of `status` through the status subresource unless the object already has it.
 * Nothing is written for an undefined status (the object is going away). Returns whether it wrote.
 */
export async function writeStatusIfChanged<S>(
  ctx: Pick<ShellContext, 'rest' | 'fieldManager'>,
  type: ResourceType,
  object: Observed<S>,
  status: S | undefined,
): Promise<boolean> {
  if (status === undefined || sameJson(object.status, status)) return false;
  const { namespace, name = '' } = object.metadata;
  await applyStatus(ctx.rest, type, { namespace, name }, status, ctx.fieldManager);
  return true;
}

/** Records the plan's Events about `object` (of `type`), each with the reconciler's `action`. */
export function recordPlanEvents(
  ctx: Pick<ShellContext, 'recorder'>,
  object: KubeObject,
  type: ResourceType,
  events: readonly PlannedEvent[],
  action = 'Reconcile',
): void {
  if (!ctx.recorder || events.length === 0) return;
  const regarding = referenceTo(object, type);
  for (const e of events) ctx.recorder.record({ regarding, type: e.type, reason: e.reason, action, note: e.message });
}

/** Removes `finalizer` (the last step of a deletion); an object already gone is fine. */
export async function releaseFinalizer<T extends KubeObject>(
  ctx: Pick<ShellContext, 'rest' | 'fieldManager'>,
  type: ResourceType,
  object: T,
  finalizer: string,
): Promise<void> {
  try {
    await removeFinalizer(ctx.rest, type, object, finalizer, ctx.fieldManager);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Order-insensitive deep equality of JSON values, to skip writes that change nothing. */
export function sameJson(a: unknown, b: unknown): boolean {
  return stableStringify(a) === stableStringify(b);
}

function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
