// kubectl against a test cluster.
import * as path from 'node:path';
import { ClusterStartError, run } from './processes';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl (the one in binDir) against kubeconfigPath. Does not throw on a non-zero exit. */
export function runKubectl(
  binDir: string,
  kubeconfigPath: string,
  args: string[],
  opts: { input?: string } = {},
): Promise<KubectlResult> {
  return run(path.join(binDir, 'kubectl'), [`--kubeconfig=${kubeconfigPath}`, ...args], opts);
}

/** Server-side applies CRD manifests and waits until every CRD in them is Established. */
export async function applyCrds(
  kubectl: string,
  kubeconfigPath: string,
  files: string[],
  timeoutS = 30,
): Promise<void> {
  const binDir = path.dirname(kubectl);
  const fileArgs = files.flatMap((f) => ['-f', f]);
  const applied = await runKubectl(binDir, kubeconfigPath, [
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=juneau-test-harness',
    ...fileArgs,
  ]);
  if (applied.code !== 0)
    throw new ClusterStartError(
      `kubectl apply of ${files.join(', ')} failed`,
      (applied.stderr || applied.stdout).trim(),
    );
  const waited = await runKubectl(binDir, kubeconfigPath, [
    'wait',
    '--for=condition=Established',
    `--timeout=${timeoutS}s`,
    ...fileArgs,
  ]);
  if (waited.code !== 0)
    throw new ClusterStartError(
      `CRDs in ${files.join(', ')} did not become Established`,
      (waited.stderr || waited.stdout).trim(),
    );
}
