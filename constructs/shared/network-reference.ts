import { issue, ValidationIssue } from '../../api/validation';

/** What both front-ends' IExternalNetwork have in common: its name and its object when declared. */
interface NetworkReferenceShape {
  readonly name: string;
  definition(): unknown;
}

/** True for an ExternalNetwork construct or component, or what `ExternalNetwork.fromName()` returns. */
export const isNetworkReference = (value: unknown): value is NetworkReferenceShape =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Partial<NetworkReferenceShape>).name === 'string' &&
  typeof (value as Partial<NetworkReferenceShape>).definition === 'function';

/**
 * The problem of a network prop that is not a reference: a plain name (accepted before
 * IExternalNetwork, and still reachable from JavaScript or a cast), or any other object. The
 * message names the field and shows the call that fixes it (`fromName` is the front-end's form).
 */
export function networkReferenceIssues(value: unknown, fromName: (name: string) => string): ValidationIssue[] {
  if (isNetworkReference(value)) return [];
  const fix =
    typeof value === 'string'
      ? `give ${fromName(JSON.stringify(value))} for a network declared elsewhere, or the ExternalNetwork itself`
      : 'give an ExternalNetwork or ExternalNetwork.fromName()';
  return [
    issue(
      'externalNetwork',
      typeof value === 'string' ? value : String(value),
      `is not an ExternalNetwork reference: ${fix}`,
    ),
  ];
}

/** The name to write for a prop that is not a reference (reported by networkReferenceIssues): the string itself, else none. */
export const nameOfNonReference = (value: unknown): string => (typeof value === 'string' ? value : '');
