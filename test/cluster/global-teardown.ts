// Jest global teardown of the "cluster" project: stops the control plane the global setup started
// (a reused JUNEAU_TEST_KUBECONFIG cluster is left alone).
export default async function globalTeardown(): Promise<void> {
  const cluster = globalThis.__juneauTestCluster;
  if (!cluster) return;
  globalThis.__juneauTestCluster = undefined;
  await cluster.stop();
  delete process.env.JUNEAU_TEST_KUBECONFIG;
  delete process.env.JUNEAU_TEST_CLUSTER_OWNED;
}
