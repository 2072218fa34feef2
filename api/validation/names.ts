import { issue, ValidationIssue } from './issue';

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Object names: a DNS-1123 subdomain of at most 253 characters, as the API server requires. */
export function checkObjectName(field: string, name: unknown): ValidationIssue[] {
  if (typeof name !== 'string' || name === '') return [issue(field, name, 'must be a non-empty name')];
  if (name.length > 253) return [issue(field, name, 'must be at most 253 characters')];
  if (!DNS1123_SUBDOMAIN.test(name))
    return [
      issue(
        field,
        name,
        'must consist of lower case alphanumeric characters, "-" or ".", and start and end with an alphanumeric character',
      ),
    ];
  return [];
}

/** Namespace names and Service names: a DNS-1123 label of at most 63 characters. */
export function checkLabelName(field: string, name: unknown): ValidationIssue[] {
  if (typeof name !== 'string' || name === '') return [issue(field, name, 'must be a non-empty name')];
  if (name.length > 63) return [issue(field, name, 'must be at most 63 characters')];
  if (!DNS1123_LABEL.test(name))
    return [
      issue(
        field,
        name,
        'must consist of lower case alphanumeric characters or "-", and start and end with an alphanumeric character',
      ),
    ];
  return [];
}
