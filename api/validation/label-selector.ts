/**
 * SEC-9: a Kubernetes label selector (metav1.LabelSelector) evaluated on a set of labels, as the
 * API server does: every matchLabels pair and every matchExpressions requirement must hold. Pure.
 */

export interface LabelSelectorView {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: ReadonlyArray<{
    readonly key: string;
    readonly operator: string;
    readonly values?: readonly string[];
  }>;
}

export function selectorMatches(
  selector: LabelSelectorView,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const l = labels ?? {};
  const has = (key: string) => Object.prototype.hasOwnProperty.call(l, key);
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (!has(key) || l[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const ok =
      operator === 'In'
        ? has(key) && values.includes(l[key])
        : operator === 'NotIn'
          ? !has(key) || !values.includes(l[key])
          : operator === 'Exists'
            ? has(key)
            : operator === 'DoesNotExist'
              ? !has(key)
              : false; // an unknown operator selects nothing, as the API server refuses it
    if (!ok) return false;
  }
  return true;
}

/** A selector as `kubectl get ns -l` spells it, for messages. */
export function formatSelector(selector: LabelSelectorView): string {
  const parts = [
    ...Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
    ...(selector.matchExpressions ?? []).map(({ key, operator, values = [] }) =>
      operator === 'Exists'
        ? key
        : operator === 'DoesNotExist'
          ? `!${key}`
          : `${key} ${operator === 'In' ? 'in' : 'notin'} (${values.join(',')})`,
    ),
  ];
  return parts.length ? parts.join(',') : '(every namespace)';
}
