// Suites that need something of the machine (root, a built file): on a developer's machine a
// missing requirement skips them with the reason in the title; under CI it is a failure, so a
// green CI run means every suite ran, not that some quietly did nothing.

/** True when CI is set (CI=true, as CI services and .ci/run set it); CI=false or 0 does not count. */
export const isCI = ((v) => v !== undefined && v !== '' && v !== '0' && v.toLowerCase() !== 'false')(process.env.CI);

/** The title a skipped suite or test gets, so the reason shows in Jest's list of skipped tests. */
const skippedTitle = (title: string, reason: string) => `${title} [skipped: ${reason}]`;

/** The failure a CI run reports instead of skipping. */
function missingRequirement(title: string, reason: string): Error {
  return new Error(
    `"${title}" cannot run: ${reason}. Under CI=true a missing requirement fails the run instead of skipping it.`,
  );
}

/**
 * describe() when `met`; otherwise skipped with the reason (CI unset) or one failing test that
 * states the reason (CI set). The body is not evaluated when the requirement is missing under CI.
 */
export function describeWhen(met: boolean, reason: string, title: string, body: () => void): void {
  if (met) {
    describe(title, body);
    return;
  }
  if (isCI) {
    describe(title, () => {
      it(`requires: ${reason}`, () => {
        throw missingRequirement(title, reason);
      });
    });
    return;
  }
  console.warn(`skipping "${title}": ${reason}`);
  describe.skip(skippedTitle(title, reason), body);
}

/** it() when `met`; otherwise skipped with the reason (CI unset) or failing with it (CI set). */
export function itWhen(
  met: boolean,
  reason: string,
  title: string,
  fn: () => Promise<unknown>,
  timeoutMs?: number,
): void {
  if (met) {
    it(title, fn, timeoutMs);
    return;
  }
  if (isCI) {
    it(title, () => {
      throw missingRequirement(title, reason);
    });
    return;
  }
  console.warn(`skipping "${title}": ${reason}`);
  it.skip(skippedTitle(title, reason), fn, timeoutMs);
}

export const isRoot = process.getuid?.() === 0;

/** A describe() for suites that need root, naming what for in the skip reason or CI failure. */
export const describeAsRootFor =
  (needs: string) =>
  (title: string, body: () => void): void =>
    describeWhen(isRoot, `needs root (${needs})`, title, body);
