// The Pulumi example program (examples/pulumi, run by Pulumi.yaml) under mocks: it registers
// Juneau's install and the seeds' examples — the same objects as the cdk8s example — and its stack
// outputs come from the status the mocked cluster reports.
import type * as SharedInstall from '../../../constructs/shared/install';
import type * as Program from '../../../examples/pulumi/index';
import { mockCluster, type Registered, registrationsSettled, valueOf } from '../pulumi-rpcs';

const STATUS: Record<string, Record<string, unknown>> = {
  'kubernetes:juneau.loutres.me/v1alpha1:ElasticIP': { phase: 'Attached', address: '10.225.32.241' },
  'kubernetes:core/v1:Service': { loadBalancer: { ingress: [{ ip: '10.225.32.1' }] } },
};

const registered = mockCluster(STATUS, 'juneau-examples', 'dev');

const { juneauInstallObjects } = require('../../../constructs/shared/install') as typeof SharedInstall;
const install = juneauInstallObjects({});

// Juneau objects and pods of the seeds' examples, as `type name`, plus the components that hold them.
const EXAMPLE_RESOURCES = [
  'juneau:index:AddressPool arp-pool',
  'kubernetes:juneau.loutres.me/v1alpha1:AddressPool arp-pool',
  'juneau:index:ExternalNetwork ext-net-arp',
  'kubernetes:juneau.loutres.me/v1alpha1:ExternalNetwork ext-net-arp',
  'juneau:index:ElasticIP nginx-eip',
  'kubernetes:juneau.loutres.me/v1alpha1:ElasticIP nginx-eip',
  'kubernetes:core/v1:Pod nginx',
  'juneau:index:ElasticIPAttachment nginx-eip-attach',
  'kubernetes:juneau.loutres.me/v1alpha1:ElasticIPAttachment nginx-eip-attach',
  'juneau:index:ElasticIP web-eip',
  'kubernetes:juneau.loutres.me/v1alpha1:ElasticIP web-eip',
  'kubernetes:core/v1:Pod web',
  'juneau:index:LoadBalancerService web',
  'kubernetes:core/v1:Service web',
];

let program: typeof Program;
let all: Registered[];

beforeAll(async () => {
  program = require('../../../examples/pulumi/index') as typeof Program;
  // Every registration the program started, finished: the list is complete, extras included.
  await registrationsSettled();
  all = [...registered];
});

test("registers the install (exactly juneauInstallObjects()) and the seeds' examples, nothing else", () => {
  // pulumi-kubernetes type tokens: the core group is spelled `core`.
  const token = (apiVersion: string, kind: string) =>
    `kubernetes:${apiVersion.includes('/') ? apiVersion : `core/${apiVersion}`}:${kind}`;
  const installResources = install.map(
    (o) =>
      `${token(o.apiVersion, o.kind)} juneau-${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`,
  );
  const expected = ['juneau:index:JuneauInstall juneau', ...installResources, ...EXAMPLE_RESOURCES];
  expect(all.map((r) => `${r.type} ${r.name}`).sort()).toEqual(expected.sort());
});

test('the same objects as the cdk8s example: network by ARP, nginx-eip by NAT on nginx.eth0, web-eip direct on web, the web Service', () => {
  const input = (type: string, name: string) => all.find((r) => r.type === type && r.name === name)!.inputs;
  const cr = (kind: string, name: string) => input(`kubernetes:juneau.loutres.me/v1alpha1:${kind}`, name);
  expect(cr('AddressPool', 'arp-pool').spec).toEqual({
    advertiseMode: 'arp',
    addresses: ['10.225.32.240-10.225.32.250'],
  });
  expect(cr('ExternalNetwork', 'ext-net-arp').spec).toEqual({ type: 'arp', addressPools: ['arp-pool'] });
  expect(cr('ElasticIP', 'nginx-eip')).toMatchObject({
    metadata: { name: 'nginx-eip', namespace: 'default' },
    spec: { externalNetwork: 'ext-net-arp' },
  });
  expect(cr('ElasticIPAttachment', 'nginx-eip-attach')).toMatchObject({
    metadata: { namespace: 'default' },
    spec: { elasticIP: 'nginx-eip', networkInterface: 'nginx.eth0' },
  });
  expect(cr('ElasticIP', 'web-eip')).toMatchObject({
    metadata: { namespace: 'default' },
    spec: { externalNetwork: 'ext-net-arp', requestedIP: '10.225.32.241' },
  });
  expect(input('kubernetes:core/v1:Pod', 'web').metadata).toMatchObject({
    labels: { app: 'web' },
    annotations: { 'juneau.loutres.me/elastic-ip': 'web-eip' },
  });
  expect(input('kubernetes:core/v1:Pod', 'nginx').metadata?.annotations).toEqual({
    'juneau.loutres.me/networks': '[{"interface":"eth0"}]',
  });
  expect(input('kubernetes:core/v1:Service', 'web')).toMatchObject({
    metadata: {
      namespace: 'default',
      annotations: { 'juneau.loutres.me/load-balancer-external-network': 'ext-net-arp' },
    },
    spec: {
      type: 'LoadBalancer',
      loadBalancerClass: 'juneau.loutres.me/load-balancer',
      selector: { app: 'web' },
      ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }],
    },
  });
});

test('stack outputs are read back from status', async () => {
  expect(await valueOf(program.webEipAddress)).toBe('10.225.32.241');
  expect(await valueOf(program.webVip)).toBe('10.225.32.1');
});
