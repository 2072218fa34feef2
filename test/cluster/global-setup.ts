// Jest global setup of the "cluster" project: one real control plane per test run, shared by all
// workers through JUNEAU_TEST_KUBECONFIG. When that variable is already set (e.g. after
// `eval "$(npm run -s cluster -- up)"` and `export JUNEAU_TEST_KUBECONFIG=$KUBECONFIG`), that
// cluster is reused and left running. The synthesized CRDs (dist/juneau-crds.k8s.yaml, from
// `npx cdk8s synth`) are applied when they exist; under CI=true their absence fails the run (most
// suites need them, and a run without them proves nothing about Juneau).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { INSTALL } from '../../api/constants';
import { isCI } from '../requirements';
import { Cluster, startCluster } from './harness';
import { applyCrds } from './kubectl';
import { CRD_MANIFEST, resolveBinDir } from './paths';

export const KUBECONFIG_ENV = 'JUNEAU_TEST_KUBECONFIG';
const OWNED_ENV = 'JUNEAU_TEST_CLUSTER_OWNED';

declare global {
  var __juneauTestCluster: Cluster | undefined;
}

export default async function globalSetup(): Promise<void> {
  const crdFiles = fs.existsSync(CRD_MANIFEST) ? [CRD_MANIFEST] : [];
  if (crdFiles.length === 0 && isCI) {
    throw new Error(
      `cluster: ${CRD_MANIFEST} not found (run \`npx cdk8s synth\` first); under CI=true the cluster project does not run without the Juneau CRDs`,
    );
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const given = process.env[KUBECONFIG_ENV];
  if (given && process.env[OWNED_ENV] !== '1') {
    log(`cluster: reusing the control plane of ${KUBECONFIG_ENV}=${given}`);
    if (crdFiles.length > 0) {
      const binDir = resolveBinDir();
      await applyCrds(`${binDir}/kubectl`, given, crdFiles);
      log(`cluster: applied ${crdFiles.join(', ')} (its garbage collector notices new kinds within ~30 s)`);
    }
    ensureInstallNamespace(`${resolveBinDir()}/kubectl`, given);
    return;
  }
  if (crdFiles.length === 0)
    log(`cluster: ${CRD_MANIFEST} not found (run \`npx cdk8s synth\`); starting without Juneau CRDs`);
  const cluster = await startCluster({ crdFiles, log });
  ensureInstallNamespace(`${cluster.binDir}/kubectl`, cluster.kubeconfigPath);
  globalThis.__juneauTestCluster = cluster;
  process.env[KUBECONFIG_ENV] = cluster.kubeconfigPath;
  process.env[OWNED_ENV] = '1';
  process.env.JUNEAU_K8S_BIN_DIR = cluster.binDir;
  process.env.JUNEAU_TEST_CLUSTER_START_MS = String(cluster.timings.totalMs);
}

/** The install namespace, where agents keep their Leases (FO-3) as on a real install. Created,
 * not applied: a client-side apply would leave an annotation that conflicts with the tests'
 * server-side applies of the install manifest. */
function ensureInstallNamespace(kubectl: string, kubeconfig: string): void {
  try {
    execFileSync(kubectl, ['--kubeconfig', kubeconfig, 'create', 'namespace', INSTALL.namespace], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '');
    if (!stderr.includes('AlreadyExists')) throw new Error(`creating namespace ${INSTALL.namespace}: ${stderr}`);
  }
}
