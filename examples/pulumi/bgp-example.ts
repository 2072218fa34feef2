/**
 * BGP mode (BGP-1..3) with Juneau's Pulumi components, the same objects as
 * examples/cdk8s/bgp-example.ts: a `bgp` ExternalNetwork, the router as a BGPPeer, a
 * BGPAdvertisement to it, and a LoadBalancer Service whose VIP every node with a ready backend
 * announces. Call `declareBGPExample()` from a program (examples/pulumi/index.ts declares the
 * seeds' examples); copy this file to start your own.
 */
import * as pulumi from '@pulumi/pulumi';
import { AddressPool, BGPAdvertisement, BGPPeer, ExternalNetwork, LoadBalancerService } from '../../constructs/pulumi';

export interface BGPExampleObjects {
  readonly network: ExternalNetwork;
  readonly peer: BGPPeer;
  readonly advertisement: BGPAdvertisement;
  readonly api: LoadBalancerService;
}

export function declareBGPExample(opts: pulumi.ComponentResourceOptions = {}): BGPExampleObjects {
  const pool = new AddressPool('bgp-pool', { advertiseMode: 'bgp', addresses: ['198.51.100.0/27'] }, opts);
  const network = new ExternalNetwork('ext-net-bgp', { type: 'bgp', addressPools: [pool] }, opts);
  const peer = new BGPPeer(
    'tor',
    {
      peerAddress: '10.225.32.1',
      peerASN: 65001,
      myASN: 64512,
      holdTime: 9,
      bfd: { receiveInterval: 100, transmitInterval: 100, detectMultiplier: 3 },
    },
    opts,
  );
  const advertisement = new BGPAdvertisement(
    'ext-net-bgp-to-tor',
    { externalNetworks: [network], peers: [peer], communities: ['64512:100'] },
    opts,
  );
  const api = new LoadBalancerService(
    'api',
    {
      metadata: { namespace: 'default' },
      externalNetwork: network,
      ports: [{ port: 443, targetPort: 8443 }],
      selector: { app: 'api' },
    },
    opts,
  );
  return { network, peer, advertisement, api };
}
