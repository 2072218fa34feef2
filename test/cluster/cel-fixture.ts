// Re-exports of the cluster fixture used by the CRD tests, plus the repository root.
import * as path from 'node:path';
export { clients, kubectl, mergePatch, rejection, useNamespace, waitFor } from './fixture';
export const REPO_ROOT_FOR_TESTS = path.resolve(__dirname, '..', '..');
