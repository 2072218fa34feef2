/**
 * NATGateway (NGW) rules that need no cluster: the spec's own fields (shared by the constructs at
 * synth time and the webhook at admission time), and NGW-4's choice of one NATGateway per pod,
 * which the controller (status.selectedPods, status.contestedPods) and a node's agent (which of its
 * pods it steers to which gateway) must make the same way.
 */
import { issue, type ValidationIssue } from './issue';
import { isIPv4 } from './ipv4';
import { checkObjectName } from './names';
import { selectorMatches, type LabelSelectorView } from './label-selector';

/** A label name (the part after an optional `<DNS subdomain>/` prefix) and a non-empty label value. */
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const OPERATORS: readonly string[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

function checkLabelKey(field: string, key: unknown): ValidationIssue[] {
  if (typeof key !== 'string' || key === '') return [issue(field, key, 'must be a non-empty label key')];
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return [issue(field, key, 'has a prefix that is not a DNS subdomain of at most 253 characters')];
  if (!LABEL_NAME.test(name))
    return [
      issue(
        field,
        key,
        'must be a label name of at most 63 alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric character (optionally after a "<DNS subdomain>/" prefix)',
      ),
    ];
  return [];
}

function checkLabelValue(field: string, value: unknown): ValidationIssue[] {
  if (typeof value !== 'string') return [issue(field, value, 'must be a string label value')];
  if (value === '' || LABEL_NAME.test(value)) return [];
  return [
    issue(
      field,
      value,
      'must be a label value: empty, or at most 63 alphanumeric characters, "-", "_" or ".", starting and ending with an alphanumeric character',
    ),
  ];
}

/** A metav1.LabelSelector as the API server would accept it: label formats, operators, values per operator. */
export function checkLabelSelector(field: string, selector: unknown, specId: string): ValidationIssue[] {
  if (selector === null || typeof selector !== 'object' || Array.isArray(selector))
    return [
      issue(field, selector, `must be a label selector ({matchLabels, matchExpressions}; {} selects all) (${specId})`),
    ];
  const s = selector as { matchLabels?: unknown; matchExpressions?: unknown };
  const issues: ValidationIssue[] = [];
  const tag = (list: ValidationIssue[]) => list.map((i) => ({ ...i, message: `${i.message} (${specId})` }));
  if (s.matchLabels !== undefined) {
    if (s.matchLabels === null || typeof s.matchLabels !== 'object' || Array.isArray(s.matchLabels))
      issues.push(issue(`${field}.matchLabels`, s.matchLabels, 'must be a map of label keys to values'));
    else
      for (const [key, value] of Object.entries(s.matchLabels)) {
        issues.push(...checkLabelKey(`${field}.matchLabels`, key));
        issues.push(...checkLabelValue(`${field}.matchLabels[${JSON.stringify(key)}]`, value));
      }
  }
  if (s.matchExpressions !== undefined) {
    if (!Array.isArray(s.matchExpressions))
      issues.push(issue(`${field}.matchExpressions`, s.matchExpressions, 'must be a list of requirements'));
    else
      s.matchExpressions.forEach((r: { key?: unknown; operator?: unknown; values?: unknown }, i) => {
        const at = `${field}.matchExpressions[${i}]`;
        issues.push(...checkLabelKey(`${at}.key`, r?.key));
        if (!OPERATORS.includes(r?.operator as string)) {
          issues.push(issue(`${at}.operator`, r?.operator, 'must be In, NotIn, Exists or DoesNotExist'));
          return;
        }
        const values = Array.isArray(r.values) ? (r.values as unknown[]) : [];
        const needsValues = r.operator === 'In' || r.operator === 'NotIn';
        if (needsValues && values.length === 0)
          issues.push(issue(`${at}.values`, r.values, `must hold at least one value for operator ${r.operator}`));
        if (!needsValues && values.length > 0)
          issues.push(issue(`${at}.values`, r.values, `must be empty for operator ${r.operator}`));
        values.forEach((v, j) => issues.push(...checkLabelValue(`${at}.values[${j}]`, v)));
      });
  }
  return tag(issues);
}

/** The spec of a NATGateway as written. */
export interface NATGatewaySpecView {
  readonly externalNetwork?: unknown;
  readonly requestedIP?: unknown;
  readonly podSelector?: unknown;
  readonly nodeSelector?: unknown;
}

/** NGW-1, NGW-2, NGW-3: every field of the spec on its own (the network's pools are checked elsewhere). */
export function checkNATGatewaySpec(spec: NATGatewaySpecView): ValidationIssue[] {
  const issues = [...checkObjectName('spec.externalNetwork', spec.externalNetwork)];
  if (spec.requestedIP !== undefined && (typeof spec.requestedIP !== 'string' || !isIPv4(spec.requestedIP)))
    issues.push(issue('spec.requestedIP', spec.requestedIP, 'is not an IPv4 address (NGW-2)'));
  if (spec.podSelector === undefined)
    issues.push(issue('spec.podSelector', undefined, 'is required; {} selects every pod of the namespace (NGW-1)'));
  else issues.push(...checkLabelSelector('spec.podSelector', spec.podSelector, 'NGW-1'));
  if (spec.nodeSelector !== undefined)
    issues.push(...checkLabelSelector('spec.nodeSelector', spec.nodeSelector, 'NGW-3'));
  return issues;
}

// ---- NGW-4: one NATGateway per pod ------------------------------------------------------------

/** A NATGateway as the choice reads it: its name, age and podSelector (all in one namespace). */
export interface GatewaySelectorView {
  readonly name: string;
  /** metadata.creationTimestamp (RFC 3339; one-second resolution, so ties are common). */
  readonly creationTimestamp?: string;
  readonly podSelector: LabelSelectorView;
  /** Being deleted: it selects nothing any more, so its pods go to the next gateway. */
  readonly deleting?: boolean;
}

/** NGW-4: older first, ties by name; the first whose selector matches is the pod's gateway. */
export function compareGatewayAge(a: GatewaySelectorView, b: GatewaySelectorView): number {
  const ta = a.creationTimestamp ? Date.parse(a.creationTimestamp) : Number.POSITIVE_INFINITY;
  const tb = b.creationTimestamp ? Date.parse(b.creationTimestamp) : Number.POSITIVE_INFINITY;
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * NGW-4: the NATGateway a pod with these labels uses, among the gateways of its namespace: the
 * oldest whose podSelector matches (ties by name); undefined when none does. `byAge` must be
 * sorted with compareGatewayAge (sort once per namespace, then ask per pod).
 */
export function gatewayOfPod(
  labels: Readonly<Record<string, string>> | undefined,
  byAge: readonly GatewaySelectorView[],
): GatewaySelectorView | undefined {
  return byAge.find((g) => !g.deleting && selectorMatches(g.podSelector, labels));
}
