/**
 * Writes with one field manager per component: server-side apply for owned objects, the
 * status subresource for status, and finalizers guarded by resourceVersion.
 */
import { FIELD_MANAGERS } from '../../api/constants';
import type { ResourceType } from './resources';
import { apiVersionOf } from './resources';
import type { RestClient } from './rest';
import type { KubeObject } from './types';

/** One field manager per component, so managedFields show who owns what. */
export const FieldManagers = FIELD_MANAGERS;
export type FieldManager = (typeof FieldManagers)[keyof typeof FieldManagers];

/** An object that has a status subresource. */
export interface WithStatus<S> extends KubeObject {
  status?: S;
}

/**
 * Server-side apply of `object` (which must carry apiVersion, kind, name and, if
 * namespaced, namespace). `force` takes over fields another manager owns; the controller
 * uses it for objects it alone should own.
 */
export function applyObject<T extends KubeObject>(
  rest: RestClient,
  type: ResourceType,
  object: T,
  fieldManager: FieldManager,
  options: { force?: boolean } = {},
): Promise<T> {
  const body = { ...object, apiVersion: object.apiVersion ?? apiVersionOf(type), kind: object.kind ?? type.kind };
  const { namespace, name } = requireName(type, object);
  return rest.patch<T>(type, namespace, name, 'apply', body, { fieldManager, force: options.force ?? true });
}

/**
 * Server-side apply of the status subresource: only the fields in `status` are claimed
 * by `fieldManager`, so the controller and agent can each own part of one status.
 */
export function applyStatus<S, T extends WithStatus<S>>(
  rest: RestClient,
  type: ResourceType,
  ref: { namespace?: string; name: string },
  status: S,
  fieldManager: FieldManager,
): Promise<T> {
  const body = {
    apiVersion: apiVersionOf(type),
    kind: type.kind,
    metadata: { name: ref.name, namespace: ref.namespace },
    status,
  };
  return rest.patch<T>(type, ref.namespace, ref.name, 'apply', body, {
    fieldManager,
    force: true,
    subresource: 'status',
  });
}

export function hasFinalizer(object: KubeObject, finalizer: string): boolean {
  return object.metadata?.finalizers?.includes(finalizer) ?? false;
}

/** What addFinalizer and removeFinalizer take. */
type FinalizerArgs<T> = [
  rest: RestClient,
  type: ResourceType,
  object: T,
  finalizer: string,
  fieldManager: FieldManager,
];

/**
 * Adds `finalizer` if missing. The merge patch carries resourceVersion because it replaces
 * the whole list: without it a concurrent writer's finalizer could be lost. Returns the
 * object unchanged when there is nothing to do.
 */
export function addFinalizer<T extends KubeObject>(...args: FinalizerArgs<T>): Promise<T> {
  return setFinalizer(true, ...args);
}

/** Removes `finalizer` if present; the same precondition as addFinalizer. */
export function removeFinalizer<T extends KubeObject>(...args: FinalizerArgs<T>): Promise<T> {
  return setFinalizer(false, ...args);
}

async function setFinalizer<T extends KubeObject>(
  present: boolean,
  ...[rest, type, object, finalizer, fieldManager]: FinalizerArgs<T>
): Promise<T> {
  if (hasFinalizer(object, finalizer) === present) return object;
  const others = (object.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
  const finalizers = present ? [...others, finalizer] : others;
  const { namespace, name } = requireName(type, object);
  const metadata = { finalizers, resourceVersion: object.metadata?.resourceVersion };
  return rest.patch<T>(type, namespace, name, 'merge', { metadata }, { fieldManager });
}

function requireName(type: ResourceType, object: KubeObject): { namespace: string | undefined; name: string } {
  const name = object.metadata?.name;
  const namespace = object.metadata?.namespace;
  if (!name) throw new Error(`${type.kind}: metadata.name is required`);
  if (type.namespaced && !namespace)
    throw new Error(`${type.kind} ${name}: metadata.namespace is required (namespaced kind)`);
  return { namespace, name };
}
