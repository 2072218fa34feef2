/**
 * A NATGateway example, the same object as examples/cdk8s/nat-gateway.ts: the pods `app=crawler`
 * of `team-a` leave from one address of `network`, through a node labelled for egress
 * (docs/nat-gateway.md). Call it from a program that declares the network; copy it to start your own.
 */
import * as pulumi from '@pulumi/pulumi';
import { NATGateway, type ExternalNetwork } from '../../constructs/pulumi';

export function declareNatGatewayExample(
  network: ExternalNetwork,
  opts: pulumi.ComponentResourceOptions = {},
): NATGateway {
  return new NATGateway(
    'crawlers',
    {
      metadata: { namespace: 'team-a' },
      externalNetwork: network,
      podSelector: { matchLabels: { app: 'crawler' } },
      requestedIP: '10.225.32.250',
      nodeSelector: { matchExpressions: [{ key: 'node-role.example.com/egress', operator: 'Exists' }] },
    },
    opts,
  );
}
