/**
 * The cdk8s app behind cdk8s.yaml. `npx cdk8s synth` writes:
 *   dist/juneau-crds.k8s.yaml     the CustomResourceDefinitions of every Juneau kind
 *   dist/juneau-install.k8s.yaml  namespace, RBAC, controller, webhooks and agent (without the CRDs)
 *   dist/examples.k8s.yaml        the seeds' examples (examples/cdk8s)
 * Invalid input fails the synth with every error listed.
 */
import { ApiObject, App, Chart, YamlOutputType } from 'cdk8s';
import { allCustomResourceDefinitions } from '../api';
import { JuneauInstall } from '../constructs/cdk8s';
import { SeedExamples } from '../examples/cdk8s/seed-examples';

const app = new App({
  outdir: process.env.CDK8S_OUTDIR ?? 'dist',
  outputFileExtension: '.k8s.yaml',
  yamlOutputType: YamlOutputType.FILE_PER_CHART,
});

const crds = new Chart(app, 'juneau-crds', { disableResourceNameHashes: true });
for (const crd of allCustomResourceDefinitions()) {
  const { apiVersion, kind, metadata, ...rest } = crd as {
    apiVersion: string;
    kind: string;
    metadata: { name: string };
  };
  new ApiObject(crds, metadata.name, { apiVersion, kind, metadata, ...rest });
}

const install = new Chart(app, 'juneau-install', { disableResourceNameHashes: true });
new JuneauInstall(install, 'juneau', { includeCrds: false });

new SeedExamples(app, 'examples');

app.synth();
