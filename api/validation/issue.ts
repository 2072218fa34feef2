/** One problem with user input: which field, which value, and what is wrong. */
export interface ValidationIssue {
  /** The field path, e.g. `spec.addresses[1]`. */
  readonly field: string;
  /** The offending value as the user wrote it (omitted when the problem is absence). */
  readonly value?: unknown;
  readonly message: string;
}

/** `spec.addresses[1]: "10.0.0.0/33" is not ...` — the form every Juneau error takes. */
export function formatIssue(issue: ValidationIssue): string {
  return issue.value === undefined
    ? `${issue.field}: ${issue.message}`
    : `${issue.field}: ${JSON.stringify(issue.value)} ${issue.message}`;
}

export const issue = (field: string, value: unknown, message: string): ValidationIssue => ({ field, value, message });
