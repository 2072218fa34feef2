/**
 * The scheduling and resource options of the install's two workloads (the controller Deployment
 * and the agent DaemonSet), and the extra labels of every install object: their types, their
 * defaults (exactly what the manifest had before they existed, so the default output does not
 * change), their validation, and how they are put into the rendered objects. The other files of
 * install/ render; this file only adds what the user chose.
 */
import { checkObjectName, issue, ValidationIssue } from '../../../api/validation';
import type { JuneauImageOptions } from '../image';

/** A pod toleration, as in core/v1. @see https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/ */
export interface JuneauToleration {
  /** @default any key (only with operator Exists) */
  readonly key?: string;
  /** @default 'Equal' */
  readonly operator?: 'Exists' | 'Equal';
  /** @default '' */
  readonly value?: string;
  /** @default every effect */
  readonly effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  /** Only with effect NoExecute. @default tolerate forever */
  readonly tolerationSeconds?: number;
}

/** Container resources, as in core/v1: quantities by resource name (`cpu`, `memory`, `ephemeral-storage`). */
export interface JuneauResources {
  /** @default none */
  readonly requests?: Readonly<Record<string, string>>;
  /** @default none */
  readonly limits?: Readonly<Record<string, string>>;
}

/** Options of one of the install's workloads. */
export interface JuneauWorkloadOptions {
  /**
   * The image of this workload only, over the install's `image` (field by field): for a build of
   * one binary under another tag, say. Both binaries are in one image, so usually leave it unset.
   * @default the install's `image`
   */
  readonly image?: JuneauImageOptions;
  /**
   * Nodes the pods may run on (pod `nodeSelector`). An agent is needed on every node that may
   * answer ARP: narrowing the agents narrows where Juneau addresses can be answered.
   * @default no selector
   */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /**
   * The pods' tolerations; replaces the default list.
   * @default controller: none; agent: `[{ operator: 'Exists' }]` (every taint: an agent runs on every node)
   */
  readonly tolerations?: readonly JuneauToleration[];
  /**
   * The container's resources; replaces the default.
   * @default controller: requests cpu 100m, memory 128Mi, limit memory 512Mi; agent: requests cpu 50m, memory 64Mi, limit memory 256Mi
   */
  readonly resources?: JuneauResources;
  /**
   * The pods' PriorityClass.
   * @default controller: none; agent: 'system-node-critical'
   */
  readonly priorityClassName?: string;
}

export type Component = 'controller' | 'agent';

/** What the manifest had before these options existed; the default output stays byte-identical. */
export const WORKLOAD_DEFAULTS: Readonly<
  Record<
    Component,
    {
      readonly tolerations?: readonly JuneauToleration[];
      readonly resources: JuneauResources;
      readonly priorityClassName?: string;
    }
  >
> = {
  controller: { resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
  agent: {
    tolerations: [{ operator: 'Exists' }],
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
    priorityClassName: 'system-node-critical',
  },
};

/** Label keys the install sets itself (selectors, pod security); extra labels may not replace them. */
export const RESERVED_LABELS = [
  'app.kubernetes.io/name',
  'app.kubernetes.io/part-of',
  'app.kubernetes.io/version',
  'pod-security.kubernetes.io/enforce',
] as const;

// core/v1 grammar: a qualified name (optional DNS prefix, "/", a name of 63), label values, quantities.
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(|[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;
const QUANTITY = /^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$/;
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  return (
    LABEL_NAME.test(key.slice(slash + 1)) &&
    (prefix === undefined || (prefix.length <= 253 && LABEL_PREFIX.test(prefix)))
  );
}

/** A label map (extra labels, a nodeSelector): valid keys and values, and none of `reserved`. */
export function checkLabels(field: string, labels: unknown, reserved: readonly string[] = []): ValidationIssue[] {
  if (labels === undefined) return [];
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels))
    return [issue(field, labels, 'must be a map of label keys to values')];
  return Object.entries(labels).flatMap(([key, value]) => {
    if (!isLabelKey(key))
      return [
        issue(
          `${field}[${key}]`,
          key,
          'is not a label key: an optional DNS prefix and "/", then 1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit',
        ),
      ];
    if (reserved.includes(key))
      return [
        issue(
          `${field}[${key}]`,
          key,
          'is set by the install itself (its selectors and pod security depend on it); choose another key',
        ),
      ];
    if (typeof value !== 'string' || !LABEL_VALUE.test(value))
      return [
        issue(
          `${field}[${key}]`,
          value,
          'is not a label value: at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit',
        ),
      ];
    return [];
  });
}

function checkTolerations(field: string, tolerations: unknown): ValidationIssue[] {
  if (tolerations === undefined) return [];
  if (!Array.isArray(tolerations)) return [issue(field, tolerations, 'must be a list of tolerations')];
  return (tolerations as JuneauToleration[]).flatMap((t, i) => {
    const at = `${field}[${i}]`;
    const issues: ValidationIssue[] = [];
    const operator = t.operator ?? 'Equal';
    if (operator !== 'Exists' && operator !== 'Equal')
      issues.push(issue(`${at}.operator`, t.operator, 'must be Exists or Equal'));
    if (t.key !== undefined && !isLabelKey(t.key)) issues.push(issue(`${at}.key`, t.key, 'is not a taint key'));
    if (operator === 'Equal' && !t.key) issues.push(issue(`${at}.key`, t.key, 'is required unless operator is Exists'));
    if (operator === 'Exists' && t.value)
      issues.push(issue(`${at}.value`, t.value, 'must be empty when operator is Exists'));
    if (t.effect !== undefined && !EFFECTS.includes(t.effect))
      issues.push(issue(`${at}.effect`, t.effect, 'must be NoSchedule, PreferNoSchedule or NoExecute'));
    if (t.tolerationSeconds !== undefined && (t.effect !== 'NoExecute' || !Number.isInteger(t.tolerationSeconds))) {
      issues.push(
        issue(`${at}.tolerationSeconds`, t.tolerationSeconds, 'must be an integer, and only with effect NoExecute'),
      );
    }
    return issues;
  });
}

function checkResources(field: string, resources: unknown): ValidationIssue[] {
  if (resources === undefined) return [];
  if (typeof resources !== 'object' || resources === null || Array.isArray(resources))
    return [issue(field, resources, 'must be { requests?, limits? }')];
  return Object.entries(resources).flatMap(([part, quantities]) => {
    if (part !== 'requests' && part !== 'limits')
      return [issue(`${field}.${part}`, undefined, 'is not a resources field: use requests and limits')];
    return Object.entries((quantities ?? {}) as Record<string, unknown>).flatMap(([name, q]) =>
      typeof q === 'string' && QUANTITY.test(q)
        ? []
        : [issue(`${field}.${part}.${name}`, q, 'is not a Kubernetes quantity such as 100m, 128Mi or 2')],
    );
  });
}

/** Every problem of one workload's options, fields named from the install's options (`agent.tolerations[0].effect`). */
export function validateWorkloadOptions(
  component: Component,
  o: JuneauWorkloadOptions | undefined,
  validateImage: (field: string, image: JuneauImageOptions | undefined) => ValidationIssue[],
): ValidationIssue[] {
  if (o === undefined) return [];
  if (typeof o !== 'object' || o === null || Array.isArray(o))
    return [
      issue(component, o, 'must be an object { image?, nodeSelector?, tolerations?, resources?, priorityClassName? }'),
    ];
  return [
    ...(o.image !== undefined ? validateImage(`${component}.image`, o.image) : []),
    ...checkLabels(`${component}.nodeSelector`, o.nodeSelector),
    ...checkTolerations(`${component}.tolerations`, o.tolerations),
    ...checkResources(`${component}.resources`, o.resources),
    ...(o.priorityClassName !== undefined
      ? checkObjectName(`${component}.priorityClassName`, o.priorityClassName)
      : []),
  ];
}

export function checkImagePullSecrets(secrets: unknown): ValidationIssue[] {
  if (secrets === undefined) return [];
  if (!Array.isArray(secrets)) return [issue('imagePullSecrets', secrets, 'must be a list of Secret names')];
  return secrets.flatMap((s, i) => checkObjectName(`imagePullSecrets[${i}]`, s));
}

/** The scheduling fields of a pod spec, in the order the manifest writes them; unset ones absent. */
export function podScheduling(
  component: Component,
  o: JuneauWorkloadOptions | undefined,
  imagePullSecrets: readonly string[],
): Record<string, unknown> {
  const d = WORKLOAD_DEFAULTS[component];
  const priorityClassName = o?.priorityClassName ?? d.priorityClassName;
  const tolerations = o?.tolerations ?? d.tolerations;
  return {
    ...(priorityClassName !== undefined ? { priorityClassName } : {}),
    ...(tolerations !== undefined ? { tolerations: tolerations.map((t) => ({ ...t })) } : {}),
    ...(o?.nodeSelector !== undefined ? { nodeSelector: { ...o.nodeSelector } } : {}),
    ...(imagePullSecrets.length ? { imagePullSecrets: imagePullSecrets.map((name) => ({ name })) } : {}),
  };
}

/** The container's resources: the option, or the default. */
export const containerResources = (component: Component, o: JuneauWorkloadOptions | undefined): JuneauResources =>
  structuredClone(o?.resources ?? WORKLOAD_DEFAULTS[component].resources) as JuneauResources;

/** Adds the extra labels to an object's labels and to its pod template's; nothing when there are none. */
export function withExtraLabels<T extends { metadata: { labels?: Record<string, string> } }>(
  object: T,
  extra: Readonly<Record<string, string>>,
): T {
  if (Object.keys(extra).length === 0) return object;
  const out = { ...object, metadata: { ...object.metadata, labels: { ...object.metadata.labels, ...extra } } } as T & {
    spec?: { template?: { metadata?: { labels?: Record<string, string> } } };
  };
  const template = out.spec?.template;
  if (template?.metadata)
    out.spec = {
      ...out.spec,
      template: { ...template, metadata: { ...template.metadata, labels: { ...template.metadata.labels, ...extra } } },
    };
  return out;
}
