import { issue, ValidationIssue } from './issue';

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Object names: a DNS-1123 subdomain of at most 253 characters, as the API server requires. */
export function checkObjectName(field: string, name: unknown): ValidationIssue[] {
  if (typeof name !== 'string' || name === '') return [issue(field, name, 'must be a non-empty name')];
  if (name.length > 253) return [issue(field, name, 'must be at most 253 characters')];
  if (!DNS1123_SUBDOMAIN.test(name)) return [issue(field, name, 'must consist of lower case alphanumeric characters, "-" or ".", and start and end with an alphanumeric character')];
  return [];
}

/** Namespace names and Service names: a DNS-1123 label of at most 63 characters. */
export function checkLabelName(field: string, name: unknown): ValidationIssue[] {
  if (typeof name !== 'string' || name === '') return [issue(field, name, 'must be a non-empty name')];
  if (name.length > 63) return [issue(field, name, 'must be at most 63 characters')];
  if (!DNS1123_LABEL.test(name)) return [issue(field, name, 'must consist of lower case alphanumeric characters or "-", and start and end with an alphanumeric character')];
  return [];
}

/**
 * The ARPAdvertisement names `eip-<ns>-<name>` and `slb-<ns>-<name>` (EIP-17, SLB-6) must stay
 * valid object names, so namespace + name may use at most 253 - 5 characters.
 */
export function checkDerivedAdvertisementName(field: string, namespace: string, name: string): ValidationIssue[] {
  const derived = `eip-${namespace}-${name}`;
  return derived.length > 253 ? [issue(field, name, `is too long: the ARPAdvertisement name ${derived.slice(0, 40)}... would exceed 253 characters`)] : [];
}
