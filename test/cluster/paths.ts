// Where the test clusters find things: the repository, the CRD manifest `npx cdk8s synth` writes,
// and the upstream control-plane binaries test/cluster/build.sh builds.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ClusterStartError } from './processes';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** The CRD manifest `npx cdk8s synth` writes; applied by the Jest global setup and `cluster up`. */
export const CRD_MANIFEST = path.join(REPO_ROOT, 'dist', 'juneau-crds.k8s.yaml');
export const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'] as const;

/** The folder of the control-plane binaries; a clear error naming the missing ones. */
export function resolveBinDir(binDir?: string): string {
  const dir =
    binDir ??
    process.env.JUNEAU_K8S_BIN_DIR ??
    require('node:child_process')
      .execFileSync('bash', [path.join(__dirname, 'build.sh'), '--print-dir'], { encoding: 'utf8' })
      .trim();
  const missing = BINARIES.filter((b) => !isExecutable(path.join(dir, b)));
  if (missing.length > 0) {
    throw new ClusterStartError(
      `control-plane binaries missing in ${dir}: ${missing.join(', ')}. Build them with \`npm run cluster:build\` ` +
        `(a cold build takes many minutes; later ones are instant).`,
    );
  }
  return dir;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
