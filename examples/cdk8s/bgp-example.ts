/**
 * BGP mode (BGP-1..3): a `bgp` ExternalNetwork, the top-of-rack router as a BGPPeer (eBGP, BFD on),
 * a BGPAdvertisement that announces the network to it with a community, and a LoadBalancer
 * Service on the network: every node with a ready backend announces its VIP, so the router
 * spreads connections over them (ECMP). `npx tsx examples/cdk8s/bgp-main.ts` writes it out.
 * Copy this file to start your own.
 */
import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { AddressPool, BGPAdvertisement, BGPPeer, ExternalNetwork, LoadBalancerService } from '../../constructs/cdk8s';

export class BGPExample extends Chart {
  constructor(scope: Construct, id: string) {
    super(scope, id, { namespace: 'default' });

    // Routed addresses: they need not be in the nodes' subnet, the router learns them over BGP.
    const pool = new AddressPool(this, 'bgp-pool', { advertiseMode: 'bgp', addresses: ['198.51.100.0/27'] });
    const net = new ExternalNetwork(this, 'ext-net-bgp', { type: 'bgp', addressPools: [pool] });

    // The router on the nodes' segment, outside every pool (BGP-9). BFD sees a node crash in
    // 3 x 100 ms instead of the 9 s hold time (BGP-6).
    const tor = new BGPPeer(this, 'tor', {
      peerAddress: '10.225.32.1',
      peerASN: 65001,
      myASN: 64512,
      holdTime: 9,
      bfd: { receiveInterval: 100, transmitInterval: 100, detectMultiplier: 3 },
    });

    // Without a BGPAdvertisement the network's addresses are allocated but announced by nobody (BGP-2).
    new BGPAdvertisement(this, 'ext-net-bgp-to-tor', {
      externalNetworks: [net],
      peers: [tor],
      communities: ['64512:100'],
    });

    new LoadBalancerService(this, 'api', {
      metadata: { namespace: 'default' },
      externalNetwork: net,
      ports: [{ port: 443, targetPort: 8443 }],
      selector: { app: 'api' },
    });
  }
}
