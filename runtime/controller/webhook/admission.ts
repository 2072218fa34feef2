/**
 * AdmissionReview v1 as the API server sends and expects it, and the verdict every rule returns.
 * A denial is always HTTP 200 with `response.allowed: false`; `status.code`/`reason` tell the API
 * server what to answer the client (403 Forbidden for a conflict with another object, 422 Invalid
 * for a value that does not fit the objects it refers to), and `details.causes` name the fields.
 */
import type { ValidationIssue } from '../../../api/validation';
import { formatIssue } from '../../../api/validation';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionRequest<T = unknown> {
  readonly uid: string;
  readonly kind?: { group: string; version: string; kind: string };
  readonly resource?: { group: string; version: string; resource: string };
  readonly subResource?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly operation: AdmissionOperation;
  readonly userInfo?: { username?: string; groups?: string[] };
  readonly object?: T;
  readonly oldObject?: T;
  readonly dryRun?: boolean;
}

export interface AdmissionReview<T = unknown> {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly request?: AdmissionRequest<T>;
  readonly response?: AdmissionResponse;
}

export type DenialReason = 'Forbidden' | 'Invalid' | 'BadRequest';

export interface StatusCause {
  readonly field: string;
  readonly message: string;
  readonly reason: 'FieldValueForbidden' | 'FieldValueInvalid';
}

export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: {
    readonly code: number;
    readonly reason: DenialReason;
    readonly message: string;
    readonly details?: { readonly causes: readonly StatusCause[] };
  };
  readonly warnings?: readonly string[];
}

/** What a rule decides. A denial carries the issues (field + conflicting object) it found. */
export type Verdict =
  | { readonly allowed: true; readonly warnings?: readonly string[] }
  | { readonly allowed: false; readonly reason: DenialReason; readonly issues: readonly ValidationIssue[] };

export const allowed = (warnings?: readonly string[]): Verdict =>
  warnings?.length ? { allowed: true, warnings } : { allowed: true };

/** 403: the request conflicts with another object (EN-4, AP-2 across pools, ARP-4, ARP-5, EIP-5). */
export const forbidden = (issues: readonly ValidationIssue[]): Verdict => ({
  allowed: false,
  reason: 'Forbidden',
  issues,
});

/** 422: a value does not fit the objects it refers to (EN-3, ARP-2). */
export const invalid = (issues: readonly ValidationIssue[]): Verdict => ({ allowed: false, reason: 'Invalid', issues });

/** Forbidden issues win over invalid ones: the first thing to fix is the conflict. */
export function verdictOf(
  conflicts: readonly ValidationIssue[],
  invalidValues: readonly ValidationIssue[] = [],
): Verdict {
  if (conflicts.length) return forbidden([...conflicts, ...invalidValues]);
  if (invalidValues.length) return invalid(invalidValues);
  return allowed();
}

const CODES: Record<DenialReason, number> = { Forbidden: 403, Invalid: 422, BadRequest: 400 };

/** The message the user sees after "admission webhook ... denied the request: ". */
export function denialMessage(issues: readonly ValidationIssue[]): string {
  return issues.map(formatIssue).join('; ');
}

export function toAdmissionResponse(uid: string, verdict: Verdict): AdmissionResponse {
  if (verdict.allowed)
    return verdict.warnings?.length ? { uid, allowed: true, warnings: verdict.warnings } : { uid, allowed: true };
  const causeReason = verdict.reason === 'Forbidden' ? 'FieldValueForbidden' : 'FieldValueInvalid';
  return {
    uid,
    allowed: false,
    status: {
      code: CODES[verdict.reason],
      reason: verdict.reason,
      message: denialMessage(verdict.issues),
      details: {
        causes: verdict.issues.map((i) => ({ field: i.field, message: formatIssue(i), reason: causeReason })),
      },
    },
  };
}

export function reviewResponse(response: AdmissionResponse): AdmissionReview {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

/** The object a CREATE or UPDATE would store; undefined for DELETE and CONNECT, which no rule refuses. */
export const writtenObject = <T>(request: AdmissionRequest<T>): T | undefined =>
  request.operation === 'CREATE' || request.operation === 'UPDATE' ? request.object : undefined;

/** Whether the object is being deleted (it still holds what it holds until it is gone: EN-4). */
export const isDeleting = (object: { metadata?: { deletionTimestamp?: string | Date } } | undefined): boolean =>
  object?.metadata?.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null;

/**
 * The object a rule checks: a CREATE's or UPDATE's, but not an update of an object being deleted
 * (removing its finalizers is how it ends; it holds what it holds until it is gone, EN-4).
 */
export function checkedObject<T extends { metadata?: { deletionTimestamp?: string | Date } }>(
  request: AdmissionRequest<T>,
): T | undefined {
  const object = writtenObject(request);
  return request.operation === 'UPDATE' && isDeleting(object) ? undefined : object;
}
