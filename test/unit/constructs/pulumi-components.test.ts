// The Pulumi front-end under `pulumi.runtime.setMocks`: each component registers with its type
// token, its children have the right kinds and specs, outputs come from the status the mocked
// cluster reports, and bad arguments throw one error naming every field and value.
import type * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { ANNOTATIONS, API_VERSION, LOAD_BALANCER_CLASS } from '../../../api';
import type * as Juneau from '../../../constructs/pulumi';
import type * as Declarations from '../../../constructs/pulumi/declarations';
import type * as SharedInstall from '../../../constructs/shared/install';
import { thrown as thrownError } from '../thrown';
import { mockCluster, type Registered, registrationsSettled, valueOf } from '../pulumi-rpcs';
import { sleep } from '../../sleep';

// ---- mocks (set before the code under test is loaded) -------------------------------------------

/** What the mocked cluster reports as status, by type token. */
const STATUS: Record<string, Record<string, unknown>> = {
  'kubernetes:juneau.loutres.me/v1alpha1:AddressPool': { size: 256, used: 3, externalNetwork: 'ext-net-arp' },
  'kubernetes:juneau.loutres.me/v1alpha1:ExternalNetwork': { networkID: 4242 },
  'kubernetes:juneau.loutres.me/v1alpha1:ElasticIP': {
    phase: 'Available',
    address: '10.225.32.241',
    addressPool: 'arp-pool',
  },
  'kubernetes:core/v1:Service': { loadBalancer: { ingress: [{ ip: '10.225.32.7', ipMode: 'VIP' }] } },
};

const registered = mockCluster(STATUS, 'juneau-test', 'unit');

const {
  AddressPool,
  ElasticIP,
  ElasticIPAttachment,
  ExternalNetwork,
  JuneauInstall,
  JuneauValidationError,
  LoadBalancerService,
} = require('../../../constructs/pulumi') as typeof Juneau;
const { resetDeclarations } = require('../../../constructs/pulumi/declarations') as typeof Declarations;
const { juneauInstallObjects } = require('../../../constructs/shared/install') as typeof SharedInstall;

// ---- helpers -------------------------------------------------------------------------------------

/** Registrations are asynchronous: the child named `name` of type `type`, once registered. */
async function child(type: string, name: string): Promise<Registered> {
  for (let i = 0; i < 200; i++) {
    const found = registered.find((r) => r.type === type && r.name === name);
    if (found) return found;
    await sleep(10);
  }
  throw new Error(`${type} ${name} was never registered`);
}
/** The error `fn` throws, with its problems (fails if nothing is thrown). */
const thrown = (fn: () => unknown) => thrownError<Error & { problems: readonly string[] }>(fn);
const CR = (kind: string) => `kubernetes:juneau.loutres.me/v1alpha1:${kind}`;

/** The component holds one `kind` child (its URN is under the component's) with exactly this metadata and spec. */
async function expectJuneauChild(
  component: { resource: pulumi.Resource },
  kind: string,
  metadata: Registered['inputs']['metadata'] & { name: string },
  spec: Record<string, unknown>,
): Promise<void> {
  expect(await valueOf(component.resource.urn)).toContain(`juneau:index:${kind}$${CR(kind)}::${metadata.name}`);
  expect((await child(CR(kind), metadata.name)).inputs).toEqual({ apiVersion: API_VERSION, kind, metadata, spec });
}

beforeEach(() => {
  resetDeclarations();
});

/** The issue's example contract, as a Pulumi user writes it. */
function userContract(suffix = '') {
  const pool = new AddressPool(`arp-pool${suffix}`, { advertiseMode: 'arp', addresses: ['10.225.32.0/24'] });
  const net = new ExternalNetwork(`ext-net-arp${suffix}`, { type: 'arp', addressPools: [pool] });
  return { pool, net };
}

// ---- AddressPool -------------------------------------------------------------------------------

describe('AddressPool', () => {
  test('registers juneau:index:AddressPool with one AddressPool child (its spec), parented to it', async () => {
    const pool = new AddressPool('ap-a', {
      advertiseMode: 'arp',
      addresses: ['10.1.0.0/24', '10.1.1.10-10.1.1.20'],
      metadata: { labels: { team: 'net' } },
    });
    expect(await valueOf(pool.urn)).toBe('urn:pulumi:unit::juneau-test::juneau:index:AddressPool::ap-a');
    expect(await valueOf(pool.resource.urn)).toBe(
      'urn:pulumi:unit::juneau-test::juneau:index:AddressPool$kubernetes:juneau.loutres.me/v1alpha1:AddressPool::ap-a',
    );
    const cr = await child(CR('AddressPool'), 'ap-a');
    expect(cr.inputs).toEqual({
      apiVersion: 'juneau.loutres.me/v1alpha1',
      kind: 'AddressPool',
      metadata: { name: 'ap-a', labels: { team: 'net' } },
      spec: { advertiseMode: 'arp', addresses: ['10.1.0.0/24', '10.1.1.10-10.1.1.20'] },
    });
    expect(pool.name).toBe('ap-a');
  });

  test('AP-3: size and used come from the status', async () => {
    const pool = new AddressPool('ap-status', { advertiseMode: 'arp', addresses: ['10.2.0.0/24'] });
    expect(await valueOf(pool.size)).toBe(256);
    expect(await valueOf(pool.used)).toBe(3);
  });

  test('metadata.name overrides the resource name; a namespace is dropped (cluster-scoped)', async () => {
    const pool = new AddressPool('ap-res', {
      advertiseMode: 'bgp',
      addresses: ['10.3.0.0/24'],
      metadata: { name: 'edge-pool', namespace: 'nope' },
    });
    expect(pool.name).toBe('edge-pool');
    expect((await child(CR('AddressPool'), 'ap-res')).inputs.metadata).toEqual({ name: 'edge-pool' });
  });

  test('AP-1, AP-2: every problem in one error, each naming the field and the value', async () => {
    await registrationsSettled();
    const count = registered.length;
    const err = thrown(
      () =>
        new AddressPool('ap-bad', {
          advertiseMode: 'static' as 'arp',
          addresses: ['10.0.0.0/33', '10.0.0.20-10.0.0.10', '10.0.0.1/24'],
        }),
    );
    expect(err).toBeInstanceOf(JuneauValidationError);
    expect(pulumi.RunError.isInstance(err)).toBe(true);
    expect(err.problems).toHaveLength(4);
    expect(err.message).toContain('AddressPool ap-bad is invalid (4 problems)');
    expect(err.message).toContain('spec.advertiseMode: "static" must be "bgp" or "arp" (AP-1)');
    expect(err.message).toMatch(/spec\.addresses\[0\]: "10\.0\.0\.0\/33" .*prefix length/);
    expect(err.message).toMatch(/spec\.addresses\[1\]: "10\.0\.0\.20-10\.0\.0\.10" .*/);
    expect(err.message).toMatch(/spec\.addresses\[2\]: "10\.0\.0\.1\/24" .*host bits/);
    await registrationsSettled(); // a registration the constructor started would land only now
    expect(registered.length).toBe(count); // nothing registered for an invalid component
  });

  test('AP-2 across pools: a pool overlapping one declared earlier names it', () => {
    new AddressPool('ap-first', { advertiseMode: 'arp', addresses: ['10.4.0.0/24'] });
    const err = thrown(
      () => new AddressPool('ap-second', { advertiseMode: 'arp', addresses: ['10.4.0.128-10.4.1.5'] }),
    );
    expect(err.message).toMatch(/spec\.addresses\[0\]: "10\.4\.0\.128-10\.4\.1\.5" .*ap-first/);
  });

  test('an invalid object name is refused', () => {
    expect(
      thrown(
        () =>
          new AddressPool('ap-name', {
            advertiseMode: 'arp',
            addresses: ['10.5.0.0/24'],
            metadata: { name: 'Bad_Name' },
          }),
      ).message,
    ).toContain('metadata.name: "Bad_Name" must consist of lower case');
  });
});

// ---- ExternalNetwork ---------------------------------------------------------------------------

describe('ExternalNetwork', () => {
  test('takes pool components and names; registers an ExternalNetwork child; networkID from status', async () => {
    const pool = new AddressPool('en-pool', { advertiseMode: 'arp', addresses: ['10.10.0.0/24'] });
    const net = new ExternalNetwork('en-a', { type: 'arp', addressPools: [pool, 'pool-elsewhere'] });
    await expectJuneauChild(
      net,
      'ExternalNetwork',
      { name: 'en-a' },
      { type: 'arp', addressPools: ['en-pool', 'pool-elsewhere'] },
    );
    expect(await valueOf(net.networkID)).toBe(4242);
    expect([...net.knownPools().keys()]).toEqual(['en-pool']);
  });

  test('EN-3: a pool of another advertise mode, given as a component or by a declared name', () => {
    const bgp = new AddressPool('en-bgp', { advertiseMode: 'bgp', addresses: ['10.11.0.0/24'] });
    new AddressPool('en-bgp-2', { advertiseMode: 'bgp', addresses: ['10.11.1.0/24'] });
    const err = thrown(() => new ExternalNetwork('en-mixed', { type: 'arp', addressPools: [bgp, 'en-bgp-2'] }));
    expect(err.problems).toHaveLength(2);
    expect(err.message).toMatch(/spec\.addressPools\[0\]: "en-bgp" .*EN-3/);
    expect(err.message).toMatch(/spec\.addressPools\[1\]: "en-bgp-2" .*EN-3/);
  });

  test('EN-4: a pool already listed by another declared network', () => {
    const pool = new AddressPool('en-shared', { advertiseMode: 'arp', addresses: ['10.12.0.0/24'] });
    new ExternalNetwork('en-owner', { type: 'arp', addressPools: [pool] });
    const err = thrown(() => new ExternalNetwork('en-thief', { type: 'arp', addressPools: [pool] }));
    expect(err.message).toContain(
      'spec.addressPools[0]: "en-shared" is already used by ExternalNetwork en-owner; a pool belongs to one network only (EN-4)',
    );
  });

  test('EN-1, EN-2: type, empty and duplicate pool lists', () => {
    expect(thrown(() => new ExternalNetwork('en-empty', { type: 'arp', addressPools: [] })).message).toMatch(
      /spec\.addressPools: .*EN-2/,
    );
    expect(thrown(() => new ExternalNetwork('en-dup', { type: 'arp', addressPools: ['p1', 'p1'] })).message).toMatch(
      /spec\.addressPools\[1\]: "p1" .*EN-2/,
    );
    expect(
      thrown(() => new ExternalNetwork('en-type', { type: 'vxlan' as 'arp', addressPools: ['p2'] })).message,
    ).toMatch(/spec\.type: "vxlan" .*EN-1/);
  });
});

// ---- ElasticIP ---------------------------------------------------------------------------------

describe('ElasticIP', () => {
  test('an ElasticIP child in its namespace; address and phase from status', async () => {
    const { net } = userContract('-eip');
    const eip = new ElasticIP('web-eip', {
      metadata: { namespace: 'default' },
      externalNetwork: net,
      requestedIP: '10.225.32.241',
    });
    await expectJuneauChild(
      eip,
      'ElasticIP',
      { name: 'web-eip', namespace: 'default' },
      { externalNetwork: 'ext-net-arp-eip', requestedIP: '10.225.32.241' },
    );
    expect(await valueOf(eip.address)).toBe('10.225.32.241');
    expect(await valueOf(eip.phase)).toBe('Available');
    expect(eip.podAnnotation()).toEqual({ [ANNOTATIONS.elasticIP]: 'web-eip' });
  });

  test("waitForAddress adds the provider's waitFor annotation on status.address", async () => {
    new ElasticIP('eip-wait', {
      externalNetwork: ExternalNetwork.fromName('somewhere'),
      waitForAddress: true,
      metadata: { annotations: { owner: 'me' } },
    });
    expect((await child(CR('ElasticIP'), 'eip-wait')).inputs.metadata?.annotations).toEqual({
      owner: 'me',
      'pulumi.com/waitFor': 'jsonpath={.status.address}',
    });
  });

  test("EIP-3: a requested address outside the network's pools, with the network as a component or a declared name", () => {
    const { net } = userContract('-eip3');
    const outside =
      'spec.requestedIP: "10.9.9.9" is not inside any arp AddressPool of ExternalNetwork ext-net-arp-eip3: arp-pool-eip3 (10.225.32.0/24)';
    expect(thrown(() => new ElasticIP('eip-out', { externalNetwork: net, requestedIP: '10.9.9.9' })).message).toContain(
      outside,
    );
    expect(
      thrown(
        () =>
          new ElasticIP('eip-out-by-name', {
            externalNetwork: ExternalNetwork.fromName('ext-net-arp-eip3'),
            requestedIP: '10.9.9.9',
          }),
      ).message,
    ).toContain(outside);
    expect(() => new ElasticIP('eip-in', { externalNetwork: net, requestedIP: '10.225.32.9' })).not.toThrow();
  });

  test('EIP-3: with a network not declared here, only the address format is checked', () => {
    expect(
      () =>
        new ElasticIP('eip-unknown-net', {
          externalNetwork: ExternalNetwork.fromName('declared-elsewhere'),
          requestedIP: '192.0.2.1',
        }),
    ).not.toThrow();
    expect(
      thrown(
        () =>
          new ElasticIP('eip-not-ipv4', {
            externalNetwork: ExternalNetwork.fromName('declared-elsewhere'),
            requestedIP: '10.0.0.256',
          }),
      ).message,
    ).toContain('spec.requestedIP: "10.0.0.256" is not an IPv4 address');
  });

  test('bad names: all problems at once', () => {
    const err = thrown(
      () =>
        new ElasticIP('eip-names', {
          externalNetwork: ExternalNetwork.fromName('Not A Name'),
          metadata: { name: '-eip' },
        }),
    );
    expect(err.problems).toHaveLength(2);
    expect(err.message).toContain('metadata.name: "-eip"');
    expect(err.message).toContain('spec.externalNetwork: "Not A Name"');
  });
});

// ---- ElasticIPAttachment -----------------------------------------------------------------------

describe('ElasticIPAttachment', () => {
  test('takes the ElasticIP component; defaults to its namespace', async () => {
    const eip = new ElasticIP('nginx-eip', {
      metadata: { namespace: 'shop' },
      externalNetwork: ExternalNetwork.fromName('ext'),
    });
    const att = new ElasticIPAttachment('nginx-eip-attach', { elasticIP: eip, networkInterface: 'nginx.eth0' });
    await expectJuneauChild(
      att,
      'ElasticIPAttachment',
      { name: 'nginx-eip-attach', namespace: 'shop' },
      { elasticIP: 'nginx-eip', networkInterface: 'nginx.eth0' },
    );
  });

  test('EIPA-1: an attachment in another namespace than its ElasticIP', () => {
    const eip = new ElasticIP('eipa1-eip', {
      metadata: { namespace: 'a' },
      externalNetwork: ExternalNetwork.fromName('ext'),
    });
    expect(
      thrown(
        () =>
          new ElasticIPAttachment('eipa1', {
            elasticIP: eip,
            networkInterface: 'x.eth0',
            metadata: { namespace: 'b' },
          }),
      ).message,
    ).toContain(
      'spec.elasticIP: "eipa1-eip" is in namespace a, but the attachment is in b; both must be in one namespace (EIPA-1)',
    );
  });

  test('EIPA-2: a second attachment of the same ElasticIP names the first', () => {
    new ElasticIPAttachment('eipa2-first', { elasticIP: 'shared-eip', networkInterface: 'a.eth0' });
    expect(
      thrown(() => new ElasticIPAttachment('eipa2-second', { elasticIP: 'shared-eip', networkInterface: 'b.eth0' }))
        .message,
    ).toContain(
      'spec.elasticIP: "shared-eip" is already used by ElasticIPAttachment eipa2-first; one ElasticIP has at most one attachment (EIPA-2)',
    );
  });

  test('bad NIC and ElasticIP names', () => {
    const err = thrown(() => new ElasticIPAttachment('eipa-names', { elasticIP: 'UPPER', networkInterface: '' }));
    expect(err.problems).toHaveLength(2);
    expect(err.message).toContain('spec.elasticIP: "UPPER"');
    expect(err.message).toContain('spec.networkInterface: "" must be a non-empty name');
  });
});

// ---- LoadBalancerService -----------------------------------------------------------------------

describe('LoadBalancerService', () => {
  test("SLB-1/SLB-2/SLB-10: a Service child of type LoadBalancer with Juneau's class, annotations and policies; vip from status", async () => {
    const { net } = userContract('-slb');
    const web = new LoadBalancerService('web', {
      externalNetwork: net,
      requestedIP: '10.225.32.7',
      ports: [{ port: 80, targetPort: 8080 }],
      selector: { app: 'web' },
    });
    expect(await valueOf(web.service.urn)).toBe(
      'urn:pulumi:unit::juneau-test::juneau:index:LoadBalancerService$kubernetes:core/v1:Service::web',
    );
    const svc = await child('kubernetes:core/v1:Service', 'web');
    expect(svc.inputs.metadata).toEqual({
      name: 'web',
      annotations: {
        [ANNOTATIONS.loadBalancerExternalNetwork]: 'ext-net-arp-slb',
        [ANNOTATIONS.loadBalancerRequestedIP]: '10.225.32.7',
      },
    });
    expect(svc.inputs.spec).toEqual({
      type: 'LoadBalancer',
      loadBalancerClass: LOAD_BALANCER_CLASS,
      externalTrafficPolicy: 'Local',
      ipFamilyPolicy: 'SingleStack',
      ipFamilies: ['IPv4'],
      selector: { app: 'web' },
      ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }],
    });
    expect(await valueOf(web.vip)).toBe('10.225.32.7');
  });

  test("a workload's matchLabels become the selector (an Output, resolved at deployment)", async () => {
    const spec = pulumi.output({ selector: { matchLabels: { app: 'shop', tier: 'front' } } });
    new LoadBalancerService('slb-workload', {
      externalNetwork: ExternalNetwork.fromName('ext'),
      ports: [{ port: 443 }],
      workload: { spec },
      skipAwait: true,
    });
    const svc = await child('kubernetes:core/v1:Service', 'slb-workload');
    expect(svc.inputs.spec?.selector).toEqual({ app: 'shop', tier: 'front' });
    expect(svc.inputs.metadata?.annotations?.['pulumi.com/skipAwait']).toBe('true');
  });

  test('a k8s.apps.v1.Deployment is a workload: its selector is used', async () => {
    const { apps } = require('@pulumi/kubernetes') as typeof k8s;
    const labels = { app: 'api' };
    const deployment = new apps.v1.Deployment('api', {
      spec: {
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'api', image: 'api:1' }] } },
      },
    });
    const workload: Juneau.LabelSelectedWorkload = deployment; // the type fits, checked by tsc
    new LoadBalancerService('slb-deploy', {
      externalNetwork: ExternalNetwork.fromName('ext'),
      ports: [{ port: 80 }],
      workload,
    });
    expect((await child('kubernetes:core/v1:Service', 'slb-deploy')).inputs.spec?.selector).toEqual(labels);
  });

  test('SLB-10 and Kubernetes port rules: every problem at once', () => {
    const err = thrown(
      () =>
        new LoadBalancerService('slb-ports', {
          externalNetwork: ExternalNetwork.fromName('ext'),
          ports: [
            { port: 0, protocol: 'SCTP' as 'TCP' },
            { port: 53, protocol: 'UDP', targetPort: 'Not_A_Port' },
          ],
          selector: { app: 'dns' },
        }),
    );
    expect(err.message).toContain('spec.ports[0].port: 0 must be an integer from 1 to 65535');
    expect(err.message).toContain(
      'spec.ports[0].protocol: "SCTP" is not supported: Juneau serves TCP and UDP only (SLB-10)',
    );
    expect(err.message).toContain('spec.ports[0].name: is required when a Service has more than one port');
    expect(err.message).toContain('spec.ports[1].targetPort: "Not_A_Port"');
    expect(err.problems.length).toBeGreaterThanOrEqual(5);
  });

  test("SLB-2: a requested VIP outside the network's pools", () => {
    const { net } = userContract('-slb2');
    expect(
      thrown(
        () =>
          new LoadBalancerService('slb-vip', {
            externalNetwork: net,
            requestedIP: '10.225.33.1',
            ports: [{ port: 80 }],
            selector: { app: 'x' },
          }),
      ).message,
    ).toContain(`requestedIP (metadata.annotations[${ANNOTATIONS.loadBalancerRequestedIP}]): "10.225.33.1"`);
  });

  test('SLB-10: no selector, or both selector and workload', () => {
    expect(
      thrown(
        () =>
          new LoadBalancerService('slb-nosel', {
            externalNetwork: ExternalNetwork.fromName('ext'),
            ports: [{ port: 80 }],
          }),
      ).message,
    ).toMatch(/spec\.selector: \{\} must select the backend pods/);
    const workload = { spec: pulumi.output({ selector: { matchLabels: { app: 'a' } } }) };
    expect(
      thrown(
        () =>
          new LoadBalancerService('slb-both', {
            externalNetwork: ExternalNetwork.fromName('ext'),
            ports: [{ port: 80 }],
            selector: { app: 'a' },
            workload,
          }),
      ).message,
    ).toContain('selector: {"app":"a"} and workload are both set on Service slb-both: give one of them');
  });
});

// ---- JuneauInstall -----------------------------------------------------------------------------

describe('JuneauInstall', () => {
  const TOKENS: Record<string, string> = {
    'v1/Namespace': 'kubernetes:core/v1:Namespace',
    'apiextensions.k8s.io/v1/CustomResourceDefinition': 'kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition',
    'v1/ServiceAccount': 'kubernetes:core/v1:ServiceAccount',
    'v1/Service': 'kubernetes:core/v1:Service',
    'rbac.authorization.k8s.io/v1/ClusterRole': 'kubernetes:rbac.authorization.k8s.io/v1:ClusterRole',
    'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding',
    'rbac.authorization.k8s.io/v1/Role': 'kubernetes:rbac.authorization.k8s.io/v1:Role',
    'rbac.authorization.k8s.io/v1/RoleBinding': 'kubernetes:rbac.authorization.k8s.io/v1:RoleBinding',
    'apps/v1/Deployment': 'kubernetes:apps/v1:Deployment',
    'apps/v1/DaemonSet': 'kubernetes:apps/v1:DaemonSet',
    'policy/v1/PodDisruptionBudget': 'kubernetes:policy/v1:PodDisruptionBudget',
    'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration':
      'kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration',
    'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy':
      'kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy',
    'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding':
      'kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding',
    'cert-manager.io/v1/Issuer': 'kubernetes:cert-manager.io/v1:Issuer',
    'cert-manager.io/v1/Certificate': 'kubernetes:cert-manager.io/v1:Certificate',
  };

  async function installChildren(install: Juneau.JuneauInstall) {
    const urns = await Promise.all(install.resources.map((r) => valueOf(r.urn)));
    await registrationsSettled();
    return urns.map((urn) => {
      const [, typeChain, name] = /::([^:]+(?::[^:]+)*)::([^:]+)$/.exec(
        urn.replace(/^urn:pulumi:unit::juneau-test/, ''),
      )!;
      const type = typeChain.split('$').pop()!;
      return { urn, type, name, record: registered.find((r) => r.type === type && r.name === name)! };
    });
  }

  test('emits exactly juneauInstallObjects(): same count, kinds, names and content, each a child of the component', async () => {
    const install = new JuneauInstall('juneau', {});
    const expected = juneauInstallObjects({});
    const children = await installChildren(install);
    expect(children).toHaveLength(expected.length);
    children.forEach((c, i) => {
      const o = expected[i];
      expect(c.urn).toContain(`::juneau:index:JuneauInstall$${TOKENS[`${o.apiVersion}/${o.kind}`]}::`);
      expect(c.name).toBe(`juneau-${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
      expect(c.record.inputs).toEqual(JSON.parse(JSON.stringify(o)));
    });
    const kinds = expected.map((o) => o.kind);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'Namespace',
        'CustomResourceDefinition',
        'Deployment',
        'DaemonSet',
        'ValidatingWebhookConfiguration',
        'PodDisruptionBudget',
      ]),
    );
    expect(install.namespace).toBe('juneau-system');
    expect(install.toObjects()).toEqual(expected);
  });

  test('options pass through the same definition (cert-manager objects as CustomResources, no CRDs)', async () => {
    const args = {
      namespace: 'lb-system',
      certificates: 'cert-manager',
      includeCrds: false,
      controllerReplicas: 3,
    } as const;
    const install = new JuneauInstall('juneau-cm', args);
    const expected = juneauInstallObjects(args);
    const children = await installChildren(install);
    expect(
      children.map((c) => `${c.type} ${c.record.inputs.metadata?.namespace ?? ''}/${c.record.inputs.metadata?.name}`),
    ).toEqual(
      expected.map((o) => `${TOKENS[`${o.apiVersion}/${o.kind}`]} ${o.metadata.namespace ?? ''}/${o.metadata.name}`),
    );
    expect(children.some((c) => c.type === 'kubernetes:cert-manager.io/v1:Certificate')).toBe(true);
    expect(children.some((c) => c.type.endsWith(':CustomResourceDefinition'))).toBe(false);
  });

  test('invalid options: one error listing each', () => {
    const err = thrown(
      () =>
        new JuneauInstall('juneau-bad', {
          namespace: 'Juneau System',
          controllerReplicas: 0,
          image: { registry: 'has space' },
          nodeIngressInterface: 'this-name-is-too-long',
        }),
    );
    expect(err).toBeInstanceOf(JuneauValidationError);
    expect(err.problems).toHaveLength(4);
    expect(err.message).toContain('namespace: "Juneau System"');
    expect(err.message).toContain('controllerReplicas: 0 must be an integer of at least 1');
    expect(err.message).toContain('image.registry: "has space" must be a registry host[:port]');
    expect(err.message).toContain('nodeIngressInterface: "this-name-is-too-long" is not a Linux interface name');
  });
});

describe('type tokens', () => {
  test('are stable: juneau:index:<Component>', () => {
    expect(
      [AddressPool, ExternalNetwork, ElasticIP, ElasticIPAttachment, LoadBalancerService, JuneauInstall].map(
        (c) => c.TYPE,
      ),
    ).toEqual([
      'juneau:index:AddressPool',
      'juneau:index:ExternalNetwork',
      'juneau:index:ElasticIP',
      'juneau:index:ElasticIPAttachment',
      'juneau:index:LoadBalancerService',
      'juneau:index:JuneauInstall',
    ]);
  });
});
