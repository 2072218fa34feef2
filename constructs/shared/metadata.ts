import { ObjectMeta } from '../../api';
import { checkLabelName, ValidationIssue } from '../../api/validation';

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

/**
 * A namespace given at synth time must be a DNS-1123 label (at most 63 characters), as the API
 * server requires; absent, the object goes to the namespace of the apply.
 */
export const checkNamespace = (meta: ObjectMeta): ValidationIssue[] =>
  meta.namespace === undefined ? [] : checkLabelName('metadata.namespace', meta.namespace);
