import { ObjectMeta } from '../../api';

/** The metadata a user may give any Juneau object (name, namespace, labels, annotations). */
export interface ObjectMetadataInput {
  readonly name?: string;
  readonly namespace?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

/** Metadata with the name filled in and empty maps dropped. */
export function renderMetadata(name: string, input: ObjectMetadataInput | undefined, namespaced: boolean): ObjectMeta {
  const meta: ObjectMeta = { name: input?.name ?? name };
  if (namespaced && input?.namespace) meta.namespace = input.namespace;
  if (input?.labels && Object.keys(input.labels).length) meta.labels = { ...input.labels };
  if (input?.annotations && Object.keys(input.annotations).length) meta.annotations = { ...input.annotations };
  return meta;
}
