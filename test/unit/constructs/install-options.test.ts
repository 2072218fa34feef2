// JuneauInstall's workload options: pull secrets, node selector, tolerations,
// resources, priority class, a per-workload image and extra labels, for the controller and the
// agent separately, the same in cdk8s and Pulumi (both render constructs/shared/install/). The
// default output does not change: test/box applies dist/juneau-install.k8s.yaml as is.
import * as pulumi from '@pulumi/pulumi';
import { Chart } from 'cdk8s';
import * as YAML from 'yaml';
import { JuneauInstall, type JuneauInstallProps } from '../../../constructs/cdk8s';
import { juneauInstallObjects, ManifestObject } from '../../../constructs/shared/install';
import type * as Juneau from '../../../constructs/pulumi';
import { testApp } from '../temp-dir';
import { parseAgentFlags } from '../../../runtime/agent/flags';

void pulumi.runtime.setMocks(
  { newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }), call: (args) => args.inputs },
  'juneau-test',
  'unit',
  false,
);
const juneauPulumi = require('../../../constructs/pulumi') as typeof Juneau;

type PodSpec = Record<string, unknown> & { containers: Array<Record<string, unknown>> };
const workload = (objects: ManifestObject[], kind: 'Deployment' | 'DaemonSet') =>
  objects.find((o) => o.kind === kind) as ManifestObject & {
    spec: { selector: unknown; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
  };
const pod = (objects: ManifestObject[], kind: 'Deployment' | 'DaemonSet') => workload(objects, kind).spec.template.spec;

function synth(props: JuneauInstallProps): { yaml: string; error: string } {
  const app = testApp();
  new JuneauInstall(new Chart(app, 'c'), 'juneau', props);
  try {
    return { yaml: app.synthYaml(), error: '' };
  } catch (e) {
    return { yaml: '', error: (e as Error).message };
  }
}

describe('defaults', () => {
  test('unset options and empty ones render the very objects of before (the default manifest stays byte-identical)', () => {
    const before = juneauInstallObjects({});
    expect(juneauInstallObjects({ imagePullSecrets: [], labels: {}, controller: {}, agent: {} })).toEqual(before);
    expect(YAML.stringify(juneauInstallObjects({ controller: {}, agent: {} }))).toBe(YAML.stringify(before));
    const controller = pod(before, 'Deployment');
    const agent = pod(before, 'DaemonSet');
    expect(Object.keys(controller)).toEqual(['serviceAccountName', 'securityContext', 'affinity', 'containers']);
    expect(Object.keys(agent)).toEqual([
      'serviceAccountName',
      'hostNetwork',
      'dnsPolicy',
      'priorityClassName',
      'tolerations',
      'containers',
      'volumes',
    ]);
    expect([agent.priorityClassName, agent.tolerations]).toEqual(['system-node-critical', [{ operator: 'Exists' }]]);
    expect(controller.containers[0].resources).toEqual({
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { memory: '512Mi' },
    });
    expect(agent.containers[0].resources).toEqual({
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { memory: '256Mi' },
    });
  });
});

describe('options', () => {
  const options: JuneauInstallProps = {
    imagePullSecrets: ['regcred'],
    labels: { team: 'net', 'example.com/cost-center': 'k8s' },
    controller: {
      nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
      tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
      resources: { requests: { cpu: '200m', memory: '256Mi' }, limits: { memory: '1Gi' } },
      priorityClassName: 'system-cluster-critical',
    },
    agent: {
      image: { tag: 'agent-debug' },
      nodeSelector: { 'juneau.example/edge': 'true' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'edge', effect: 'NoExecute', tolerationSeconds: 30 }],
      priorityClassName: 'edge-critical',
    },
  };
  const objects = juneauInstallObjects(options);

  test('each workload gets its own scheduling, resources and priority class; pull secrets go to both', () => {
    const controller = pod(objects, 'Deployment');
    const agent = pod(objects, 'DaemonSet');
    expect(controller).toMatchObject({
      priorityClassName: 'system-cluster-critical',
      tolerations: options.controller!.tolerations,
      nodeSelector: options.controller!.nodeSelector,
      imagePullSecrets: [{ name: 'regcred' }],
    });
    expect(controller.containers[0].resources).toEqual(options.controller!.resources);
    expect(agent).toMatchObject({
      priorityClassName: 'edge-critical',
      tolerations: options.agent!.tolerations,
      nodeSelector: { 'juneau.example/edge': 'true' },
      imagePullSecrets: [{ name: 'regcred' }],
    });
    expect(agent.containers[0].resources).toEqual({
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { memory: '256Mi' },
    });
  });

  test('a workload image is taken field by field over the install image', () => {
    const version = (require('../../../package.json') as { version: string }).version;
    expect(pod(objects, 'Deployment').containers[0].image).toBe(`ghcr.io/loutres/juneau:v${version}`);
    expect(pod(objects, 'DaemonSet').containers[0].image).toBe('ghcr.io/loutres/juneau:agent-debug');
    const moved = juneauInstallObjects({
      image: { registry: 'registry.example:5000' },
      agent: { image: { tag: 'x' } },
    });
    expect(pod(moved, 'DaemonSet').containers[0].image).toBe('registry.example:5000/loutres/juneau:x');
  });

  test("extra labels are on every object and pod template; selectors stay Juneau's own", () => {
    for (const object of objects)
      expect([object.kind, object.metadata.labels]).toEqual([object.kind, expect.objectContaining(options.labels)]);
    for (const kind of ['Deployment', 'DaemonSet'] as const) {
      expect(workload(objects, kind).spec.template.metadata.labels).toMatchObject(options.labels!);
      expect(workload(objects, kind).spec.selector).toEqual(workload(juneauInstallObjects({}), kind).spec.selector);
    }
  });

  test('cdk8s and Pulumi emit the same objects', () => {
    const install = new juneauPulumi.JuneauInstall('juneau', options);
    expect(install.toObjects()).toEqual(objects);
    const fromCdk8s = YAML.parseAllDocuments(synth(options).yaml).map((d) => d.toJSON() as ManifestObject);
    expect(fromCdk8s.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      objects.map((o) => `${o.kind}/${o.metadata.name}`),
    );
    expect(fromCdk8s.find((o) => o.kind === 'DaemonSet')).toEqual(workload(objects, 'DaemonSet'));
  });
});

describe("NAT options (NAT-2: the agent's --nat-pod-ifaces and --nat-cluster-cidrs)", () => {
  const agentArgs = (props: JuneauInstallProps) =>
    pod(juneauInstallObjects(props), 'DaemonSet').containers[0].args as string[];
  test("given, they reach the agent's command line; unset, the agent runs without them", () => {
    const args = agentArgs({
      natPodInterfaces: ['cni0', 'flannel.1'],
      natClusterCidrs: ['10.244.0.0/16', '10.96.0.0/12'],
    });
    expect(args).toEqual(
      expect.arrayContaining(['--nat-pod-ifaces=cni0,flannel.1', '--nat-cluster-cidrs=10.244.0.0/16,10.96.0.0/12']),
    );
    expect(agentArgs({}).filter((a) => a.startsWith('--nat-'))).toEqual([]);
  });

  test('SEC-7: natKernelForward sets --nat-kernel-forward, which the agent parses; unset, the agent redirects (the default)', () => {
    const args = agentArgs({ natKernelForward: true }).filter((a) => a.startsWith('--nat-'));
    expect(args).toEqual(['--nat-kernel-forward=true']);
    expect(parseAgentFlags(args, { NODE_NAME: 'n' })).toMatchObject({ flags: { natKernelForward: true } });
    expect(parseAgentFlags([], { NODE_NAME: 'n' })).toMatchObject({ flags: { natKernelForward: false } });
    expect(agentArgs({ natKernelForward: false }).filter((a) => a.startsWith('--nat-'))).toEqual([]);
  });
});

describe('webhookNetworkPolicy (M1): only the API servers reach the webhook port', () => {
  test('given prefixes, a NetworkPolicy on the controller pods opens 9443 to them only, metrics and health to all; unset, no policy', () => {
    const policies = (props: JuneauInstallProps) =>
      juneauInstallObjects(props).filter((o) => o.kind === 'NetworkPolicy');
    expect(policies({})).toEqual([]);
    const [policy] = policies({ webhookNetworkPolicy: ['192.0.2.0/28'] });
    expect(policy).toMatchObject({
      metadata: { name: 'juneau-controller-webhook', namespace: 'juneau-system' },
      spec: {
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'juneau-controller' } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ ipBlock: { cidr: '192.0.2.0/28' } }], ports: [{ protocol: 'TCP', port: 9443 }] },
          {
            ports: [
              { protocol: 'TCP', port: 8080 },
              { protocol: 'TCP', port: 8081 },
            ],
          },
        ],
      },
    });
  });
});

describe('invalid options fail synthesis and construction, naming the field', () => {
  test.each<[string, JuneauInstallProps, string]>([
    [
      'a pull secret that is not a name',
      { imagePullSecrets: ['Reg Cred'] },
      'imagePullSecrets[0]: "Reg Cred" must consist of lower case alphanumeric characters',
    ],
    [
      'an extra label replacing a selector label',
      { labels: { 'app.kubernetes.io/name': 'x' } },
      'labels[app.kubernetes.io/name]: "app.kubernetes.io/name" is set by the install itself',
    ],
    ['a label key with a space', { labels: { 'my team': 'a' } }, 'labels[my team]: "my team" is not a label key'],
    [
      'a label value too long',
      { labels: { team: 'x'.repeat(64) } },
      `labels[team]: "${'x'.repeat(64)}" is not a label value`,
    ],
    [
      'a nodeSelector value with a slash',
      { agent: { nodeSelector: { zone: 'a/b' } } },
      'agent.nodeSelector[zone]: "a/b" is not a label value',
    ],
    [
      'a toleration with Equal and no key',
      { controller: { tolerations: [{ operator: 'Equal', value: 'x' }] } },
      'controller.tolerations[0].key: is required unless operator is Exists',
    ],
    [
      'a toleration with Exists and a value',
      { agent: { tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] } },
      'agent.tolerations[0].value: "v" must be empty when operator is Exists',
    ],
    [
      'an unknown effect',
      { agent: { tolerations: [{ operator: 'Exists', effect: 'NoWay' as 'NoSchedule' }] } },
      'agent.tolerations[0].effect: "NoWay" must be NoSchedule, PreferNoSchedule or NoExecute',
    ],
    [
      'tolerationSeconds without NoExecute',
      { agent: { tolerations: [{ key: 'k', value: 'v', effect: 'NoSchedule', tolerationSeconds: 5 }] } },
      'agent.tolerations[0].tolerationSeconds: 5 must be an integer, and only with effect NoExecute',
    ],
    [
      'a quantity that is not one',
      { controller: { resources: { limits: { memory: '1 GB' } } } },
      'controller.resources.limits.memory: "1 GB" is not a Kubernetes quantity',
    ],
    [
      'a resources field that is not one',
      { controller: { resources: { request: { cpu: '1' } } as never } },
      'controller.resources.request: is not a resources field: use requests and limits',
    ],
    [
      'a priority class that is not a name',
      { controller: { priorityClassName: 'High' } },
      'controller.priorityClassName: "High" must consist of lower case alphanumeric characters',
    ],
    [
      'a workload image tag that is not one',
      { agent: { image: { tag: '-x' } } },
      'agent.image.tag: "-x" must be 1-128 letters',
    ],
    ['a workload that is not an object', { agent: 'edge' as never }, 'agent: "edge" must be an object'],
    [
      'a NAT pod interface that is not an interface name',
      { natPodInterfaces: ['cni0', 'a very long bridge name'] },
      'natPodInterfaces[1]: "a very long bridge name" is not a Linux interface name',
    ],
    [
      'a NAT cluster prefix that is an address',
      { natClusterCidrs: ['10.244.0.1'] },
      'natClusterCidrs[0]: "10.244.0.1" is not an IPv4 CIDR',
    ],
    [
      'a webhook source prefix that is an address',
      { webhookNetworkPolicy: ['192.0.2.1'] },
      'webhookNetworkPolicy[0]: "192.0.2.1" is not an IPv4 CIDR',
    ],
    [
      'a NAT cluster prefix with host bits',
      { natClusterCidrs: ['10.244.0.1/16'] },
      'natClusterCidrs[0]: "10.244.0.1/16" has host bits set',
    ],
  ])('%s', (_, props, message) => {
    expect(synth(props).error).toContain(message);
    expect(() => new juneauPulumi.JuneauInstall('bad', props)).toThrow(message);
  });
});
