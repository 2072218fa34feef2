import type { App } from 'cdk8s';

/** The error `fn` throws; the test fails when it throws nothing. */
export function thrown<E extends Error = Error>(fn: () => unknown): E {
  try {
    fn();
  } catch (e) {
    return e as E;
  }
  throw new Error('expected construction to throw, it did not');
}

/** The message of the error `fn` throws; the test fails when it throws nothing. */
export const thrownMessage = (fn: () => unknown): string => thrown(fn).message;

/** What a cdk8s synth reports (every construct's problems in one error), or '' when the app synthesizes. */
export function synthErrors(app: App): string {
  try {
    app.synthYaml();
  } catch (e) {
    return (e as Error).message;
  }
  return '';
}
