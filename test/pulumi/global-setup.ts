// Jest global setup of the "pulumi" project: its own real control plane (the cluster project's
// setup, plus the `endpoints-controller`). pulumi-kubernetes 4.25 waits for a Service's v1
// Endpoints to list a ready pod before `pulumi up` goes on, and the cluster project's
// kube-controller-manager runs only the EndpointSlice controller.
import * as fs from 'node:fs';
import { CONTROLLERS, startCluster } from '../cluster/harness';
import { CRD_MANIFEST } from '../cluster/paths';

export default async function globalSetup(): Promise<void> {
  if (!fs.existsSync(CRD_MANIFEST))
    throw new Error(
      `pulumi: ${CRD_MANIFEST} not found: run \`npx cdk8s synth\` first (the program's objects are Juneau kinds)`,
    );
  const cluster = await startCluster({
    crdFiles: [CRD_MANIFEST],
    log: (line) => process.stderr.write(`${line}\n`),
    extraArgs: { 'kube-controller-manager': [`--controllers=${CONTROLLERS},endpoints-controller`] },
  });
  globalThis.__juneauTestCluster = cluster;
  process.env.JUNEAU_TEST_KUBECONFIG = cluster.kubeconfigPath;
  process.env.JUNEAU_TEST_CLUSTER_OWNED = '1';
  process.env.JUNEAU_K8S_BIN_DIR = cluster.binDir;
}
