// A NATGateway example: the pods `app=crawler` of `team-a` leave from one address of ext-net-arp,
// through a node labelled for egress (docs/nat-gateway.md). `npx tsx examples/cdk8s/nat-gateway.ts`
// writes cdk8s.out/nat-gateway.k8s.yaml (or $CDK8S_OUTDIR). Copy this file to start your own.
import { App, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ExternalNetwork, NATGateway } from '../../constructs/cdk8s';

export class NatGatewayExample extends Chart {
  readonly gateway: NATGateway;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    // The seed examples' network (examples/cdk8s/seed-examples.ts), declared there.
    const net = ExternalNetwork.fromName(this, 'ext-net-arp', 'ext-net-arp');
    this.gateway = new NATGateway(this, 'crawlers', {
      metadata: { namespace: 'team-a' },
      externalNetwork: net,
      podSelector: { matchLabels: { app: 'crawler' } },
      requestedIP: '10.225.32.250',
      nodeSelector: { matchExpressions: [{ key: 'node-role.example.com/egress', operator: 'Exists' }] },
    });
  }
}

if (require.main === module) {
  const app = new App();
  new NatGatewayExample(app, 'nat-gateway');
  app.synth();
}
