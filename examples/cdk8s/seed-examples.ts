/**
 * The seeds' own examples, declared with Juneau's constructs: the `ext-net-arp` network, `nginx-eip`
 * used through NAT by `nginx.eth0`, `web-eip` held directly by `web.eth0`, and the `web`
 * LoadBalancer Service. Copy this file to start your own.
 */
import { Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import {
  AddressPool,
  ElasticIP,
  ElasticIPAttachment,
  ExternalNetwork,
  LoadBalancerService,
} from '../../constructs/cdk8s';

export class SeedExamples extends Chart {
  constructor(scope: Construct, id: string) {
    super(scope, id, { namespace: 'default' });

    // Inside the nodes' L2 subnet (EN-12), clear of node and router addresses.
    const pool = new AddressPool(this, 'arp-pool', {
      advertiseMode: 'arp',
      addresses: ['10.225.32.240-10.225.32.250'],
    });
    const net = new ExternalNetwork(this, 'ext-net-arp', { type: 'arp', addressPools: [pool] });

    // NAT: nginx sees its own pod address; the node translates 1:1 to nginx-eip (EIP-4).
    const nginxEip = new ElasticIP(this, 'nginx-eip', { metadata: { namespace: 'default' }, externalNetwork: net });
    new kplus.Pod(this, 'nginx-pod', {
      metadata: {
        name: 'nginx',
        annotations: { 'juneau.loutres.me/networks': JSON.stringify([{ interface: 'eth0' }]) },
      },
      containers: [
        {
          image: 'nginx:1.27',
          imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
          portNumber: 80,
          securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false },
        },
      ],
    });
    new ElasticIPAttachment(this, 'nginx-eip-attach', { elasticIP: nginxEip, networkInterface: 'nginx.eth0' });

    // Direct: web's eth0 holds web-eip itself (EIP-4); the pod controller creates NetworkInterface web.eth0.
    const webEip = new ElasticIP(this, 'web-eip', {
      metadata: { namespace: 'default' },
      externalNetwork: net,
      requestedIP: '10.225.32.241',
    });
    new kplus.Pod(this, 'web-pod', {
      metadata: { name: 'web', labels: { app: 'web' }, annotations: webEip.podAnnotation() },
      containers: [
        {
          image: 'nginx:1.27',
          imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
          portNumber: 8080,
          securityContext: { ensureNonRoot: false, readOnlyRootFilesystem: false },
        },
      ],
    });

    // A LoadBalancer Service: one node with a ready local backend answers ARP for its VIP (OPS-1).
    // It asks for its address too: an address one object requests and the allocator may hand to
    // another (the lowest free one) goes to whichever claims it first — a Service reconciled before
    // web-eip took 10.225.32.241 and left web-eip Pending (RequestedIPInUse) in one demo run of four.
    new LoadBalancerService(this, 'web', {
      metadata: { namespace: 'default' },
      externalNetwork: net,
      requestedIP: '10.225.32.242',
      ports: [{ port: 80, targetPort: 8080 }],
      selector: { app: 'web' },
    });
  }
}
