import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App, AppProps } from 'cdk8s';

/**
 * Temporary directories of one test file, all below one root that is removed after the file's
 * tests: cdk8s `testApp()` makes a `cdk8s.outdir.*` directory it never removes, and every unit
 * run used to leave about a hundred of them in /tmp.
 */
let root: string | undefined;

afterAll(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** A fresh directory, removed with the others after this test file. */
export function tempDir(prefix: string): string {
  root ??= fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-unit-'));
  return fs.mkdtempSync(path.join(root, `${prefix}-`));
}

/** `testApp()` whose output directory is removed after this test file. */
export const testApp = (props: AppProps = {}): App => new App({ outdir: tempDir('cdk8s'), ...props });
