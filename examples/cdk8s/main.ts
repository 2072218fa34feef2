// A stand-alone cdk8s app of the seed examples: `npx tsx examples/cdk8s/main.ts` writes
// cdk8s.out/examples.k8s.yaml (or $CDK8S_OUTDIR).
import { App } from 'cdk8s';
import { SeedExamples } from './seed-examples';

const app = new App();
new SeedExamples(app, 'examples');
app.synth();
