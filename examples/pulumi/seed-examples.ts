/**
 * The seeds' own examples, declared with Juneau's Pulumi components — the same objects as
 * examples/cdk8s/seed-examples.ts: the `ext-net-arp` network, `nginx-eip` used through NAT by
 * `nginx.eth0`, `web-eip` held directly by `web.eth0`, and the `web` LoadBalancer Service.
 * Copy this file to start your own.
 */
import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { ANNOTATIONS } from '../../api';
import {
  AddressPool,
  ElasticIP,
  ElasticIPAttachment,
  ExternalNetwork,
  LoadBalancerService,
} from '../../constructs/pulumi';

export interface SeedExamples {
  readonly pool: AddressPool;
  readonly network: ExternalNetwork;
  readonly nginxEip: ElasticIP;
  readonly nginxAttachment: ElasticIPAttachment;
  readonly webEip: ElasticIP;
  readonly web: LoadBalancerService;
  readonly pods: readonly k8s.core.v1.Pod[];
}

/** What a stack may change in the examples (stack config, read by index.ts). */
export interface SeedExampleSettings {
  /**
   * The address web-eip reserves; it must lie in arp-pool (EIP-3), checked when the program runs.
   * @default '10.225.32.241'
   */
  readonly webEipAddress?: string;
  /**
   * The port the `web` Service's VIP serves.
   * @default 80
   */
  readonly webPort?: number;
}

/**
 * Declares the examples. `opts` applies to every top-level resource, e.g. `{ dependsOn: [install] }`
 * so the objects are created after Juneau's CRDs and controller.
 */
export function declareSeedExamples(
  opts: pulumi.ComponentResourceOptions = {},
  settings: SeedExampleSettings = {},
): SeedExamples {
  const namespace = 'default';
  const pool = new AddressPool('arp-pool', { advertiseMode: 'arp', addresses: ['10.225.32.240-10.225.32.250'] }, opts);
  const network = new ExternalNetwork('ext-net-arp', { type: 'arp', addressPools: [pool] }, opts);

  // NAT: nginx sees its own pod address; the node translates 1:1 to nginx-eip (EIP-4).
  const nginxEip = new ElasticIP(
    'nginx-eip',
    { metadata: { namespace }, externalNetwork: network, waitForAddress: true },
    opts,
  );
  const nginx = new k8s.core.v1.Pod(
    'nginx',
    {
      metadata: {
        name: 'nginx',
        namespace,
        annotations: { [ANNOTATIONS.networks]: JSON.stringify([{ interface: 'eth0' }]) },
      },
      spec: { containers: [{ name: 'main', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] },
    },
    opts,
  );
  const nginxAttachment = new ElasticIPAttachment(
    'nginx-eip-attach',
    { elasticIP: nginxEip, networkInterface: 'nginx.eth0' },
    opts,
  );

  // Direct: web's eth0 holds web-eip itself (EIP-4); the pod controller creates NetworkInterface web.eth0.
  const webEip = new ElasticIP(
    'web-eip',
    {
      metadata: { namespace },
      externalNetwork: network,
      requestedIP: settings.webEipAddress ?? '10.225.32.241',
      waitForAddress: true,
    },
    opts,
  );
  // Ordered after web-eip, which the pod names (EIP-4), so its NIC never waits for a missing ElasticIP.
  const webPod = new k8s.core.v1.Pod(
    'web',
    {
      metadata: { name: 'web', namespace, labels: { app: 'web' }, annotations: webEip.podAnnotation() },
      spec: { containers: [{ name: 'main', image: 'nginx:1.27', ports: [{ containerPort: 8080 }] }] },
    },
    pulumi.mergeOptions(opts, { dependsOn: [webEip] }),
  );

  // A LoadBalancer Service: one node with a ready local backend answers ARP for its VIP (OPS-1).
  // Its VIP is requested, as in the cdk8s example: "any free address" is allocated as soon as the
  // Service exists and could take 10.225.32.241 before web-eip has reserved it.
  const web = new LoadBalancerService(
    'web',
    {
      metadata: { namespace },
      externalNetwork: network,
      requestedIP: '10.225.32.242',
      ports: [{ port: settings.webPort ?? 80, targetPort: 8080 }],
      selector: { app: 'web' },
    },
    opts,
  );

  return { pool, network, nginxEip, nginxAttachment, webEip, web, pods: [nginx, webPod] };
}
