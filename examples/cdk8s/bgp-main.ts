// The BGP example as a stand-alone cdk8s app: `npx tsx examples/cdk8s/bgp-main.ts` writes
// cdk8s.out/bgp-example.k8s.yaml (or $CDK8S_OUTDIR).
import { App } from 'cdk8s';
import { BGPExample } from './bgp-example';

const app = new App();
new BGPExample(app, 'bgp-example');
app.synth();
