import { issue, ValidationIssue } from './issue';

/** A DNS-1123 name format: its longest length, its pattern and how the pattern reads in words. */
interface NameRule {
  readonly maxLength: number;
  readonly pattern: RegExp;
  readonly characters: string;
}

const DNS1123_SUBDOMAIN: NameRule = {
  maxLength: 253,
  pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
  characters: 'lower case alphanumeric characters, "-" or "."',
};
const DNS1123_LABEL: NameRule = {
  maxLength: 63,
  pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
  characters: 'lower case alphanumeric characters or "-"',
};

function checkName(rule: NameRule, field: string, name: unknown): ValidationIssue[] {
  if (typeof name !== 'string' || name === '') return [issue(field, name, 'must be a non-empty name')];
  if (name.length > rule.maxLength) return [issue(field, name, `must be at most ${rule.maxLength} characters`)];
  if (!rule.pattern.test(name)) {
    return [issue(field, name, `must consist of ${rule.characters}, and start and end with an alphanumeric character`)];
  }
  return [];
}

/** Object names: a DNS-1123 subdomain of at most 253 characters, as the API server requires. */
export const checkObjectName = (field: string, name: unknown): ValidationIssue[] =>
  checkName(DNS1123_SUBDOMAIN, field, name);

/** Namespace names and Service names: a DNS-1123 label of at most 63 characters. */
export const checkLabelName = (field: string, name: unknown): ValidationIssue[] =>
  checkName(DNS1123_LABEL, field, name);
