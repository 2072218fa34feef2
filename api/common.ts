import { LIMITS } from './constants';
import { Infer, s } from './schema';

/** An object name (DNS-1123 subdomain); used for references to other objects. */
export const objectName = (description: string) =>
  s.string({ description, minLength: 1, maxLength: LIMITS.nameLength });

/** A name copied or written by the controller: empty until known, so no minLength. */
export const nameOrEmpty = (description: string) => s.string({ description, maxLength: LIMITS.nameLength });

/** A dotted-quad IPv4 address; the API server checks the format. */
export const ipv4 = (description: string) => s.string({ description, format: 'ipv4', maxLength: 15 });

/** metav1.Condition, as every Juneau status carries it. */
export const condition = s.object(
  {
    type: s.string({ description: 'Condition type in CamelCase, e.g. Allocated.', maxLength: 316 }),
    status: s.enum(['True', 'False', 'Unknown'] as const),
    reason: s.string({ description: 'CamelCase reason for the last transition.', maxLength: LIMITS.reasonLength }),
    message: s.string({ description: 'What a person can act on.', maxLength: LIMITS.messageLength }),
    lastTransitionTime: s.dateTime({ description: 'When status last changed.' }),
    observedGeneration: s.integer({ minimum: 0, description: 'metadata.generation this condition was computed from.' }),
  },
  { required: ['type', 'status', 'reason', 'message', 'lastTransitionTime'] },
);
export type Condition = Infer<typeof condition>;

export const conditions = s.array(condition, {
  maxItems: LIMITS.conditions,
  listType: 'map',
  listMapKeys: ['type'],
  description: 'Current state, one entry per condition type.',
});

/**
 * The status fields every reconciled kind ends with: the metadata.generation its status was
 * computed from, and its conditions.
 */
export const reconciledStatus = { observedGeneration: s.integer({ minimum: 0 }), conditions };

/** A `phase` that is Pending with a CamelCase `reason` and a `message` until the object is ready. */
export const pendingPhase = <const V extends string>(
  phases: readonly V[],
  descriptions: { readonly phase: string; readonly reason: string },
) => ({
  phase: s.enum(phases, { description: descriptions.phase }),
  reason: s.string({ maxLength: LIMITS.reasonLength, description: descriptions.reason }),
  message: s.string({ maxLength: LIMITS.messageLength }),
});

/**
 * Standard object metadata as the API server sends it and Juneau writes it: plain JSON, times as
 * RFC 3339 strings (a watch never sends a Date). The runtime reads every object with this type.
 */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A CEL rule making a required field immutable. */
export const immutable = (field: string, specId: string) => ({
  rule: 'self == oldSelf',
  message: `${field} is immutable (${specId})`,
});

/** The operators of a label selector's matchExpressions (metav1.LabelSelectorRequirement). */
export const LABEL_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

/** A label key or value: 317 characters at most (a 253-character prefix, `/`, a 63-character name). */
const labelString = (description: string) => s.string({ description, maxLength: 317 });

/**
 * A Kubernetes label selector (metav1.LabelSelector) over `what` (namespaces, nodes) at `field`:
 * every matchLabels pair and every matchExpressions requirement must hold; `{}` selects all.
 */
export const labelSelector = (what: string, field: string, specId: string, description: string) =>
  s.object(
    {
      matchLabels: s.map(labelString('A label value.'), {
        maxProperties: 32,
        description: `Labels the ${what} must have, with these values.`,
      }),
      matchExpressions: s.array(
        s.object(
          {
            key: labelString('The label key.'),
            operator: s.enum(LABEL_SELECTOR_OPERATORS, { description: 'In, NotIn, Exists or DoesNotExist.' }),
            values: s.array(labelString('A label value.'), {
              maxItems: 32,
              description: 'For In and NotIn: at least one value; for Exists and DoesNotExist: none.',
            }),
          },
          {
            required: ['key', 'operator'],
            validations: [
              {
                rule: "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
                message: `${field}.matchExpressions[].values: In and NotIn need at least one value, Exists and DoesNotExist take none (${specId})`,
              },
            ],
          },
        ),
        { maxItems: 16, description: `Requirements on the ${what} labels; all must hold.` },
      ),
    },
    { description },
  );
