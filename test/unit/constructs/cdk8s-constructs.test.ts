// The cdk8s front-end: what each construct synthesizes, and that bad input fails `cdk8s synth`
// with every problem listed, each naming the field and the value.
import { App, Chart } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import * as YAML from 'yaml';
import { ANNOTATIONS, LOAD_BALANCER_CLASS } from '../../../api';
import {
  AddressPool,
  ElasticIP,
  ElasticIPAttachment,
  ExternalNetwork,
  JuneauInstall,
  LoadBalancerService,
  type LoadBalancerServiceProps,
} from '../../../constructs/cdk8s';
import { juneauInstallObjects } from '../../../constructs/shared/install';
import { SeedExamples } from '../../../examples/cdk8s/seed-examples';
import { testApp } from '../temp-dir';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
} & Record<string, unknown>;
const synth = (app: App): Obj[] =>
  YAML.parseAllDocuments(app.synthYaml())
    .map((d) => d.toJSON() as Obj)
    .filter(Boolean);
/** A reference to a network by name; each gets its own construct id. */
let references = 0;
const byName = (scope: Chart, name: string) => ExternalNetwork.fromName(scope, `network-ref-${++references}`, name);
const byKind = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);
const synthErrors = (build: (chart: Chart) => void): string => {
  const app = testApp();
  build(new Chart(app, 'c'));
  try {
    app.synthYaml();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('synth succeeded but was expected to fail');
};

/** The example contract of the issue, as a user writes it. */
function userContract(chart: Chart) {
  const pool = new AddressPool(chart, 'arp-pool', { advertiseMode: 'arp', addresses: ['10.225.32.0/24'] });
  const net = new ExternalNetwork(chart, 'ext-net-arp', { type: 'arp', addressPools: [pool] });
  new ElasticIP(chart, 'web-eip', {
    metadata: { namespace: 'default' },
    externalNetwork: net,
    requestedIP: '10.225.32.241',
  });
  new LoadBalancerService(chart, 'web', {
    externalNetwork: net,
    ports: [{ port: 80, targetPort: 8080 }],
    selector: { app: 'web' },
  });
  return { pool, net };
}

describe('constructs synthesize', () => {
  test('the user contract: pool, network, ElasticIP and LoadBalancer Service (snapshot)', () => {
    const app = testApp();
    userContract(new Chart(app, 'c'));
    const objs = synth(app);
    expect(objs).toMatchSnapshot();
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'AddressPool/arp-pool',
      'ExternalNetwork/ext-net-arp',
      'ElasticIP/web-eip',
      'Service/web',
    ]);
  });

  test('AddressPool and ExternalNetwork are cluster-scoped even in a chart with a namespace', () => {
    const app = testApp();
    userContract(new Chart(app, 'c', { namespace: 'apps' }));
    const objs = synth(app);
    expect(byKind(objs, 'AddressPool')[0].metadata.namespace).toBeUndefined();
    expect(byKind(objs, 'ExternalNetwork')[0].metadata.namespace).toBeUndefined();
    expect(byKind(objs, 'ElasticIP')[0].metadata.namespace).toBe('default');
    expect(byKind(objs, 'Service')[0].metadata.namespace).toBe('apps');
  });

  test('SLB-1, SLB-2, SLB-10: the Service carries the class, the annotations and the only supported policies', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const { net } = userContract(chart);
    new LoadBalancerService(chart, 'dns', {
      externalNetwork: net,
      requestedIP: '10.225.32.53',
      ports: [
        { name: 'dns-udp', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53 },
      ],
      selector: { app: 'dns' },
    });
    const svc = byKind(synth(app), 'Service').find((s) => s.metadata.name === 'dns')!;
    expect(svc.metadata.annotations).toEqual({
      [ANNOTATIONS.loadBalancerExternalNetwork]: 'ext-net-arp',
      [ANNOTATIONS.loadBalancerRequestedIP]: '10.225.32.53',
    });
    expect(svc.spec).toMatchObject({
      type: 'LoadBalancer',
      loadBalancerClass: LOAD_BALANCER_CLASS,
      externalTrafficPolicy: 'Local',
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      selector: { app: 'dns' },
    });
    expect(svc.spec!.ports).toEqual([
      { name: 'dns-udp', port: 53, targetPort: 53, protocol: 'UDP' },
      { name: 'dns-tcp', port: 53, targetPort: 53, protocol: 'TCP' },
    ]);
  });

  test('LoadBalancerService takes a cdk8s-plus workload as its backends', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const deployment = new kplus.Deployment(chart, 'web-deploy', {
      containers: [{ image: 'nginx', portNumber: 8080 }],
    });
    new LoadBalancerService(chart, 'web', {
      externalNetwork: byName(chart, 'ext-net-arp'),
      ports: [{ port: 80, targetPort: 8080 }],
      workload: deployment,
    });
    const svc = byKind(synth(app), 'Service')[0];
    expect(svc.spec!.selector).toEqual(deployment.matchLabels);
    expect(Object.keys(svc.spec!.selector as object).length).toBeGreaterThan(0);
  });

  test('ElasticIPAttachment inherits the ElasticIP namespace; podAnnotation is the direct-use annotation (EIP-4)', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const eip = new ElasticIP(chart, 'nginx-eip', {
      metadata: { namespace: 'shop' },
      externalNetwork: byName(chart, 'ext'),
    });
    new ElasticIPAttachment(chart, 'nginx-eip-attach', { elasticIP: eip, networkInterface: 'nginx.eth0' });
    const att = byKind(synth(app), 'ElasticIPAttachment')[0];
    expect(att.metadata).toEqual({ name: 'nginx-eip-attach', namespace: 'shop' });
    expect(att.spec).toEqual({ elasticIP: 'nginx-eip', networkInterface: 'nginx.eth0' });
    expect(eip.podAnnotation()).toEqual({ 'juneau.loutres.me/elastic-ip': 'nginx-eip' });
  });

  test('metadata.name overrides the construct id', () => {
    const app = testApp();
    new AddressPool(new Chart(app, 'c'), 'Pool', {
      metadata: { name: 'pool-a', labels: { team: 'net' } },
      advertiseMode: 'bgp',
      addresses: ['10.0.0.0/24'],
    });
    expect(synth(app)[0].metadata).toEqual({ name: 'pool-a', labels: { team: 'net' } });
  });

  test('the seed examples: ext-net-arp, nginx-eip by NAT, web-eip direct on web.eth0, the web Service', () => {
    const app = testApp();
    new SeedExamples(app, 'examples');
    const objs = synth(app);
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        'AddressPool/arp-pool',
        'ElasticIP/nginx-eip',
        'ElasticIP/web-eip',
        'ElasticIPAttachment/nginx-eip-attach',
        'ExternalNetwork/ext-net-arp',
        'Pod/nginx',
        'Pod/web',
        'Service/web',
      ].sort(),
    );
    const web = objs.find((o) => o.kind === 'Pod' && o.metadata.name === 'web')!;
    expect(web.metadata.annotations).toMatchObject({ 'juneau.loutres.me/elastic-ip': 'web-eip' });
    const nginx = objs.find((o) => o.kind === 'Pod' && o.metadata.name === 'nginx')!;
    expect(JSON.parse(nginx.metadata.annotations!['juneau.loutres.me/networks'])).toEqual([{ interface: 'eth0' }]);
  });
});

describe('JuneauInstall', () => {
  const install = (props = {}) => {
    const app = testApp();
    new JuneauInstall(new Chart(app, 'c'), 'juneau', props);
    return synth(app);
  };
  const objs = install();
  const find = (kind: string, name?: string) =>
    objs.find((o) => o.kind === kind && (!name || o.metadata.name === name))!;

  test('emits exactly the shared install objects (one definition for cdk8s and Pulumi), CRDs included', () => {
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      juneauInstallObjects().map((o) => `${o.kind}/${o.metadata.name}`),
    );
    expect(byKind(objs, 'CustomResourceDefinition')).toHaveLength(13);
    expect(objs).toMatchSnapshot();
  });

  test('controller: 2 replicas, leader election, PodDisruptionBudget, restricted security', () => {
    const d = find('Deployment') as unknown as {
      spec: {
        replicas: number;
        template: { spec: { containers: Array<{ args: string[]; securityContext: object }> } };
      };
    };
    expect(d.spec.replicas).toBe(2);
    expect(d.spec.template.spec.containers[0].args).toContain('--leader-elect=true');
    expect(d.spec.template.spec.containers[0].securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(find('PodDisruptionBudget').spec).toMatchObject({ minAvailable: 1 });
  });

  test('agent: host network, exactly CAP_BPF, CAP_NET_ADMIN and CAP_NET_RAW (FO-1 announcements) instead of privileged, only its own bpffs directory, health on loopback, metrics on the node address (secure), NODE_NAME and POD_IP from the downward API', () => {
    const ds = find('DaemonSet') as unknown as {
      spec: {
        template: {
          spec: {
            hostNetwork: boolean;
            volumes: object[];
            containers: Array<{
              env: object[];
              args: string[];
              securityContext: { privileged: boolean; capabilities: { add: string[] } };
              ports: object[];
            }>;
          };
        };
      };
    };
    const pod = ds.spec.template.spec;
    expect(pod.hostNetwork).toBe(true);
    expect(pod.containers[0].securityContext.privileged).toBe(false);
    expect(pod.containers[0].securityContext.capabilities).toEqual({
      drop: ['ALL'],
      add: ['BPF', 'NET_ADMIN', 'NET_RAW'],
    });
    // CNI-1: beside its bpffs directory, the node's CNI bin and conf dirs (juneau-cni's install).
    expect(pod.volumes).toEqual([
      { name: 'bpffs', hostPath: { path: '/sys/fs/bpf/juneau', type: 'DirectoryOrCreate' } },
      { name: 'cni-bin', hostPath: { path: '/opt/cni/bin', type: 'DirectoryOrCreate' } },
      { name: 'cni-conf', hostPath: { path: '/etc/cni/net.d', type: 'DirectoryOrCreate' } },
    ]);
    expect(pod.containers[0].env).toEqual([
      { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ]);
    // Health on loopback; metrics on the node's address, served over HTTPS to authorized callers only.
    expect(pod.containers[0].args).toEqual(
      expect.arrayContaining(['--metrics-bind-address=[$(POD_IP)]:9201', '--health-probe-bind-address=127.0.0.1:9202']),
    );
    expect(pod.containers[0].args.filter((a) => a.startsWith('--metrics-secure'))).toEqual([]);
    expect(pod.containers[0].ports).toHaveLength(2);
  });

  test('RBAC is least privilege: the agent cannot write Juneau objects; the controller cannot write ExternalNetworks', () => {
    const agentRole = find('ClusterRole', 'juneau-agent') as unknown as {
      rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    };
    const juneauRules = agentRole.rules.filter((r) => r.apiGroups.includes('juneau.loutres.me'));
    // get: the NetworkInterface and ElasticIP of a sandbox juneau-cni sets up (CNI-1, CNI-2).
    expect(juneauRules.flatMap((r) => r.verbs).sort()).toEqual(['get', 'list', 'watch']);
    const ctrlRole = find('ClusterRole', 'juneau-controller') as unknown as typeof agentRole;
    const writesNetworks = ctrlRole.rules.some(
      (r) =>
        r.resources.includes('externalnetworks') && r.verbs.some((v) => ['create', 'update', 'delete'].includes(v)),
    );
    expect(writesNetworks).toBe(false);
  });

  test('the webhook configuration routes only cross-object checks (and SLB-1), and only Juneau pods', () => {
    const vwc = find('ValidatingWebhookConfiguration') as unknown as {
      webhooks: Array<{ name: string; failurePolicy: string; matchConditions?: Array<{ expression: string }> }>;
    };
    expect(vwc.webhooks.map((w) => w.name)).toEqual([
      'addresspools.juneau.loutres.me',
      'externalnetworks.juneau.loutres.me',
      'arpadvertisements.juneau.loutres.me',
      'bgppeers.juneau.loutres.me',
      'bgpadvertisements.juneau.loutres.me',
      'elasticips.juneau.loutres.me',
      'elasticipattachments.juneau.loutres.me',
      'serviceloadbalancers.juneau.loutres.me',
      'pods.juneau.loutres.me',
      'natgateways.juneau.loutres.me',
    ]);
    // Fail closed for Juneau's kinds, open for Pods (a controller outage never stops workloads).
    expect(vwc.webhooks.map((w) => w.failurePolicy)).toEqual([
      'Fail',
      'Fail',
      'Fail',
      'Fail',
      'Fail',
      'Fail',
      'Fail',
      'Fail',
      'Ignore',
      'Fail',
    ]);
    expect(vwc.webhooks[8].matchConditions![0].expression).toContain('juneau.loutres.me/elastic-ip');
  });

  test('options: namespace, replicas, interface, cert-manager, no CRDs', () => {
    const o = install({
      namespace: 'net',
      controllerReplicas: 3,
      nodeIngressInterface: 'bond0',
      certificates: 'cert-manager',
      includeCrds: false,
    });
    expect(o.find((x) => x.kind === 'Namespace')!.metadata.name).toBe('net');
    expect(byKind(o, 'CustomResourceDefinition')).toHaveLength(0);
    expect((o.find((x) => x.kind === 'Deployment') as unknown as { spec: { replicas: number } }).spec.replicas).toBe(3);
    expect(JSON.stringify(o.find((x) => x.kind === 'DaemonSet'))).toContain('--node-ingress-iface=bond0');
    expect(byKind(o, 'Certificate')).toHaveLength(1);
  });
});

describe('bad input fails synth, naming the field and the value', () => {
  const pool = (chart: Chart, id: string, addresses: string[], advertiseMode: 'arp' | 'bgp' = 'arp') =>
    new AddressPool(chart, id, { advertiseMode, addresses });
  /** A LoadBalancerService valid but for what `props` changes. */
  const slb = (c: Chart, props: Partial<LoadBalancerServiceProps> = {}) =>
    new LoadBalancerService(c, 's', {
      externalNetwork: byName(c, 'n'),
      ports: [{ port: 80 }],
      selector: { a: 'b' },
      ...props,
    });
  const cases: Array<[string, (c: Chart) => void, string[]]> = [
    [
      'AP-2 malformed CIDR',
      (c) => pool(c, 'p', ['10.0.0.0/33']),
      ['spec.addresses[0]: "10.0.0.0/33"', 'prefix length'],
    ],
    ['AP-2 host bits set', (c) => pool(c, 'p', ['10.0.0.5/24']), ['spec.addresses[0]: "10.0.0.5/24"', 'host bits']],
    [
      'AP-2 reversed range',
      (c) => pool(c, 'p', ['10.0.0.9-10.0.0.1']),
      ['spec.addresses[0]: "10.0.0.9-10.0.0.1"', 'reversed'],
    ],
    ['AP-2 not IPv4', (c) => pool(c, 'p', ['fd00::/64']), ['spec.addresses[0]: "fd00::/64"']],
    ['AP-2 a bare address', (c) => pool(c, 'p', ['10.0.0.1']), ['spec.addresses[0]: "10.0.0.1"', 'is not a CIDR']],
    ['AP-2 empty list', (c) => pool(c, 'p', []), ['spec.addresses', 'at least one']],
    [
      'AP-2 overlapping items',
      (c) => pool(c, 'p', ['10.0.0.0/24', '10.0.0.10-10.0.0.20']),
      ['spec.addresses[1]: "10.0.0.10-10.0.0.20" overlaps spec.addresses[0]'],
    ],
    [
      'AP-2 overlapping pools',
      (c) => {
        pool(c, 'a', ['10.0.0.0/24']);
        pool(c, 'b', ['10.0.0.128/25']);
      },
      ['spec.addresses[0]: "10.0.0.128/25" overlaps "10.0.0.0/24" of AddressPool a'],
    ],
    [
      'AP-1 unknown mode',
      (c) => new AddressPool(c, 'p', { advertiseMode: 'ospf' as 'arp', addresses: ['10.0.0.0/24'] }),
      ['spec.advertiseMode: "ospf"'],
    ],
    ['pool name', (c) => pool(c, 'Pool_A', ['10.0.0.0/24']), ['metadata.name: "Pool_A"']],
    [
      'EN-1 unknown type',
      (c) => new ExternalNetwork(c, 'n', { type: 'l3' as 'arp', addressPools: ['p'] }),
      ['spec.type: "l3"'],
    ],
    [
      'EN-2 no pools',
      (c) => new ExternalNetwork(c, 'n', { type: 'arp', addressPools: [] }),
      ['spec.addressPools', 'at least one'],
    ],
    [
      'EN-2 duplicate pools',
      (c) => new ExternalNetwork(c, 'n', { type: 'arp', addressPools: ['p', 'p'] }),
      ['spec.addressPools[1]: "p" duplicates'],
    ],
    [
      'EN-3 mode mismatch',
      (c) => {
        const p = pool(c, 'bgp-pool', ['10.0.0.0/24'], 'bgp');
        new ExternalNetwork(c, 'n', { type: 'arp', addressPools: [p] });
      },
      ['spec.addressPools[0]: "bgp-pool"', 'advertiseMode bgp', 'type arp'],
    ],
    [
      'EN-4 pool shared by two networks',
      (c) => {
        const p = pool(c, 'p', ['10.0.0.0/24']);
        new ExternalNetwork(c, 'n1', { type: 'arp', addressPools: [p] });
        new ExternalNetwork(c, 'n2', { type: 'arp', addressPools: [p] });
      },
      ['spec.addressPools[0]: "p" is already used by ExternalNetwork n1', 'is already used by ExternalNetwork n2'],
    ],
    [
      'EN-4 pool name invalid',
      (c) => new ExternalNetwork(c, 'n', { type: 'arp', addressPools: ['Bad Pool'] }),
      ['spec.addressPools[0]: "Bad Pool"'],
    ],
    [
      'EIP-3 requested outside the pools',
      (c) => {
        const n = new ExternalNetwork(c, 'n', { type: 'arp', addressPools: [pool(c, 'p', ['10.0.0.0/24'])] });
        new ElasticIP(c, 'e', { externalNetwork: n, requestedIP: '10.0.1.5' });
      },
      ['spec.requestedIP: "10.0.1.5" is not inside any arp AddressPool of ExternalNetwork n'],
    ],
    [
      'EIP-2 requested in a pool of the other mode',
      (c) => {
        const n = new ExternalNetwork(c, 'n', { type: 'arp', addressPools: [pool(c, 'p', ['10.0.0.0/24'], 'bgp')] });
        new ElasticIP(c, 'e', { externalNetwork: n, requestedIP: '10.0.0.5' });
      },
      ['spec.requestedIP: "10.0.0.5" is not inside any arp AddressPool'],
    ],
    [
      'EIP-3 requested not an address',
      (c) => new ElasticIP(c, 'e', { externalNetwork: byName(c, 'n'), requestedIP: '10.0.0.256' }),
      ['spec.requestedIP: "10.0.0.256" is not an IPv4 address'],
    ],
    [
      'ElasticIP network name invalid',
      (c) => new ElasticIP(c, 'e', { externalNetwork: byName(c, 'Ext_Net') }),
      ['spec.externalNetwork: "Ext_Net"'],
    ],
    [
      'EIPA-1 other namespace',
      (c) => {
        const e = new ElasticIP(c, 'e', { metadata: { namespace: 'a' }, externalNetwork: byName(c, 'n') });
        new ElasticIPAttachment(c, 'x', { metadata: { namespace: 'b' }, elasticIP: e, networkInterface: 'nginx.eth0' });
      },
      ['spec.elasticIP: "e" is in namespace a, but the attachment is in b'],
    ],
    [
      'EIPA-2 two attachments',
      (c) => {
        new ElasticIPAttachment(c, 'x', { elasticIP: 'e', networkInterface: 'a.eth0' });
        new ElasticIPAttachment(c, 'y', { elasticIP: 'e', networkInterface: 'b.eth0' });
      },
      ['spec.elasticIP: "e" is already used by ElasticIPAttachment x'],
    ],
    [
      'EIPA-1 interface name invalid',
      (c) => new ElasticIPAttachment(c, 'x', { elasticIP: 'e', networkInterface: 'Nginx/eth0' }),
      ['spec.networkInterface: "Nginx/eth0"'],
    ],
    [
      'SLB-10 SCTP',
      (c) => slb(c, { ports: [{ port: 80, protocol: 'SCTP' as 'TCP' }] }),
      ['spec.ports[0].protocol: "SCTP" is not supported', 'SLB-10'],
    ],
    [
      'SLB-10 no selector',
      (c) => new LoadBalancerService(c, 's', { externalNetwork: byName(c, 'n'), ports: [{ port: 80 }] }),
      ['spec.selector', 'SLB-10'],
    ],
    ['port out of range', (c) => slb(c, { ports: [{ port: 70000 }] }), ['spec.ports[0].port: 70000']],
    ['port 0 is not dropped as falsy', (c) => slb(c, { ports: [{ port: 0 }] }), ['spec.ports[0].port: 0']],
    [
      'targetPort name invalid',
      (c) => slb(c, { ports: [{ port: 80, targetPort: 'HTTP_PORT' }] }),
      ['spec.ports[0].targetPort: "HTTP_PORT"'],
    ],
    ['no ports', (c) => slb(c, { ports: [] }), ['spec.ports: must list at least one port']],
    [
      'several ports need names',
      (c) => slb(c, { ports: [{ port: 80 }, { port: 443 }] }),
      ['spec.ports[0].name: is required'],
    ],
    [
      'duplicate ports',
      (c) =>
        slb(c, {
          ports: [
            { name: 'a', port: 80 },
            { name: 'b', port: 80 },
          ],
        }),
      ['spec.ports[1].port: 80 duplicates spec.ports[0] (80/TCP)'],
    ],
    [
      'SLB-2 requested VIP outside the pools',
      (c) => {
        const n = new ExternalNetwork(c, 'n', { type: 'arp', addressPools: [pool(c, 'p', ['10.0.0.0/24'])] });
        new LoadBalancerService(c, 's', {
          externalNetwork: n,
          requestedIP: '192.168.0.1',
          ports: [{ port: 80 }],
          selector: { a: 'b' },
        });
      },
      [
        'requestedIP (metadata.annotations[juneau.loutres.me/load-balancer-requested-ip]): "192.168.0.1" is not inside any arp AddressPool',
      ],
    ],
    [
      'selector and workload both set',
      (c) => slb(c, { workload: { matchLabels: { c: 'd' } } }),
      ['selector: {"a":"b"} and workload are both set'],
    ],
    ['Service name too long', (c) => slb(c, { metadata: { name: 'x'.repeat(64) } }), ['metadata.name', 'at most 63']],
    [
      'Service namespace not a DNS label',
      (c) => slb(c, { metadata: { namespace: 'Team_A' } }),
      ['metadata.namespace: "Team_A" must consist of lower case alphanumeric characters or "-"', '[Service Team_A/'],
    ],
    [
      'ElasticIP namespace not a DNS label',
      (c) => new ElasticIP(c, 'e', { externalNetwork: byName(c, 'n'), metadata: { namespace: 'team.a' } }),
      ['metadata.namespace: "team.a" must consist of lower case alphanumeric characters or "-"'],
    ],
    [
      'ElasticIP namespace too long',
      (c) => new ElasticIP(c, 'e', { externalNetwork: byName(c, 'n'), metadata: { namespace: 'n'.repeat(64) } }),
      ['metadata.namespace:', 'must be at most 63 characters'],
    ],
    [
      'ElasticIPAttachment namespace not a DNS label',
      (c) =>
        new ElasticIPAttachment(c, 'a', {
          elasticIP: 'e',
          networkInterface: 'web.eth0',
          metadata: { namespace: 'Team-A' },
        }),
      ['metadata.namespace: "Team-A"'],
    ],
    [
      'SLB-2 requested VIP not an address names requestedIP',
      (c) =>
        new LoadBalancerService(c, 's', {
          externalNetwork: byName(c, 'n'),
          requestedIP: '10.0.0.300',
          ports: [{ port: 80 }],
          selector: { a: 'b' },
        }),
      [
        'requestedIP (metadata.annotations[juneau.loutres.me/load-balancer-requested-ip]): "10.0.0.300" is not an IPv4 address',
      ],
    ],
    [
      'JuneauInstall replicas',
      (c) => new JuneauInstall(c, 'j', { controllerReplicas: 0 }),
      ['controllerReplicas: 0 must be an integer of at least 1'],
    ],
    [
      'JuneauInstall namespace',
      (c) => new JuneauInstall(c, 'j', { namespace: 'Juneau System' }),
      ['namespace: "Juneau System"'],
    ],
    [
      'JuneauInstall interface',
      (c) => new JuneauInstall(c, 'j', { nodeIngressInterface: 'a-very-long-interface-name' }),
      ['nodeIngressInterface: "a-very-long-interface-name"'],
    ],
  ];

  test(`at least 25 cases (${cases.length})`, () => expect(cases.length).toBeGreaterThanOrEqual(25));

  test.each(cases)('%s', (_name, build, expected) => {
    const message = synthErrors(build);
    for (const part of expected) expect(message).toContain(part);
  });

  test('every error of the app is listed at once, not only the first', () => {
    const message = synthErrors((c) => {
      pool(c, 'p', ['10.0.0.0/33', '10.0.0.9-10.0.0.1']);
      new ExternalNetwork(c, 'n', { type: 'arp', addressPools: [] });
      new LoadBalancerService(c, 's', {
        externalNetwork: byName(c, 'n'),
        ports: [{ port: 80, protocol: 'SCTP' as 'TCP' }],
        selector: { a: 'b' },
      });
    });
    expect(message).toContain('spec.addresses[0]');
    expect(message).toContain('spec.addresses[1]');
    expect(message).toContain('spec.addressPools');
    expect(message).toContain('spec.ports[0].protocol');
  });
});
