/**
 * The wire shape of Kubernetes objects as this package reads and writes them: plain JSON,
 * timestamps as strings (api/common.ts ObjectMeta, the one metadata type of api/ and runtime/).
 */
import type { ObjectMeta, OwnerReference } from '../../api/common';

export type { ObjectMeta, OwnerReference };

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/**
 * An object as the API server keeps it (what a GET, a LIST, a watch or a cache gives): it always
 * has a name, so readers need no fallback for one.
 */
export type Stored<T> = T & KubeObject & { metadata: ObjectMeta & { name: string } };

export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  metadata?: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** `namespace/name`, or `name` for cluster-scoped objects; the work-queue key convention. */
export function objectKey(object: KubeObject): string {
  const namespace = object.metadata?.namespace;
  const name = object.metadata?.name ?? '';
  return namespace ? `${namespace}/${name}` : name;
}

/** The inverse of objectKey. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: undefined, name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
