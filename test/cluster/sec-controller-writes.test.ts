// H2 on the real API server: the install's controller-writes ValidatingAdmissionPolicy and its
// tenant ClusterRoles. A tenant bound to a Role with `juneau.loutres.me` `*` `*` in its namespace
// (what an admin grants to let tenants "use Juneau") can write ElasticIPs and attachments, but cannot
// forge a NetworkInterface or the statuses the data plane takes as truth; deleting, and removing
// finalizers from an object being deleted, stay open. The stock `edit` role gets Juneau's tenant
// verbs through the `juneau-edit` aggregation (kube-controller-manager's aggregation controller).
import * as YAML from 'yaml';
import { API_VERSION, GROUP, INSTALL } from '../../api';
import { juneauInstallObjects } from '../../constructs/shared/install';
import { kubectl, useNamespace, waitFor } from './fixture';

const suffix = Math.random().toString(36).slice(2, 7);
const TENANT = `tenant-${suffix}`;
const EDITOR = `editor-${suffix}`;
const POLICY = `${INSTALL.controllerName}-writes`;
const CONTROLLER = `system:serviceaccount:${INSTALL.namespace}:${INSTALL.controllerName}`;

const installed = juneauInstallObjects().filter(
  (o) => o.metadata.name === POLICY || o.metadata.name === 'juneau-edit' || o.metadata.name === 'juneau-view',
);
const yaml = (objects: object[]) => objects.map((o) => YAML.stringify(o)).join('---\n');

const nic = (namespace: string, name: string, address: string) => ({
  apiVersion: API_VERSION,
  kind: 'NetworkInterface',
  metadata: { name, namespace },
  spec: { podName: name.split('.')[0], interface: 'eth0', nodeName: 'node-a', address },
});

/** `kubectl patch` of `kind`/`name`'s status subresource with a merge patch. */
const statusPatch = (kind: string, name: string, patch: string) => [
  'patch',
  kind,
  name,
  '--subresource=status',
  '--type=merge',
  '-p',
  patch,
];

/** kubectl as `user` (groups: system:authenticated only, as a tenant's token would have). */
const as = (user: string, namespace: string, args: string[], input?: string) =>
  kubectl([`--as=${user}`, ...args], { namespace, input, allowFailure: true });

beforeAll(async () => {
  expect(installed.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
    'ClusterRole/juneau-edit',
    'ClusterRole/juneau-view',
    `ValidatingAdmissionPolicy/${POLICY}`,
    `ValidatingAdmissionPolicyBinding/${POLICY}`,
  ]);
  await kubectl(['apply', '-f', '-'], { input: yaml(installed) });
});

afterAll(async () => {
  await kubectl(['delete', '-f', '-', '--ignore-not-found'], { input: yaml(installed), allowFailure: true });
});

describe('SEC-2 only the controller writes NetworkInterfaces and the statuses the data plane reads', () => {
  const ns = useNamespace();

  it('SEC-2: a tenant with juneau.loutres.me * cannot create or change a NIC, nor patch ElasticIP or attachment status; it can create ElasticIPs and attachments, delete NICs and remove finalizers of a deleted one', async () => {
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'juneau-everything', namespace: ns() },
      rules: [{ apiGroups: [GROUP], resources: ['*'], verbs: ['*'] }],
    };
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'juneau-everything', namespace: ns() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'juneau-everything' },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: TENANT },
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: CONTROLLER },
      ],
    };
    await kubectl(['apply', '-f', '-'], { input: yaml([role, binding]) });

    // The policy takes effect once the API server has loaded it: until then the forged NIC is created.
    let tries = 0;
    const forged = await waitFor(
      async () => {
        const r = await as(
          TENANT,
          ns(),
          ['create', '-f', '-'],
          JSON.stringify(nic(ns(), `f${tries++}.eth0`, '10.244.1.9')),
        );
        if (r.code === 0) return false;
        return r.stderr.includes('written by the Juneau controller only') ? r : false;
      },
      { what: 'the controller-writes policy in force', timeoutMs: 20_000 },
    );
    expect(forged.stderr).toContain(
      `networkinterfaces of ${ns()}/f${tries - 1}.eth0 is written by the Juneau controller only (H2): the data plane takes it as truth; create Pods with the ElasticIP annotation and ElasticIPAttachments instead (request by ${TENANT})`,
    );

    // The controller's ServiceAccount, with the very same RBAC, creates it: the policy is about who writes.
    const byController = await as(
      CONTROLLER,
      ns(),
      ['create', '-f', '-'],
      JSON.stringify(nic(ns(), 'web.eth0', '10.244.1.10')),
    );
    expect(byController).toMatchObject({ code: 0 });

    // What the tenant is for: ElasticIPs and attachments.
    const eip = {
      apiVersion: API_VERSION,
      kind: 'ElasticIP',
      metadata: { name: 'web' },
      spec: { externalNetwork: 'x' },
    };
    const attachment = {
      apiVersion: API_VERSION,
      kind: 'ElasticIPAttachment',
      metadata: { name: 'web' },
      spec: { elasticIP: 'web', networkInterface: 'web.eth0' },
    };
    expect(await as(TENANT, ns(), ['create', '-f', '-'], JSON.stringify(eip))).toMatchObject({ code: 0 });
    expect(await as(TENANT, ns(), ['create', '-f', '-'], JSON.stringify(attachment))).toMatchObject({ code: 0 });

    // The statuses the agent takes as truth, and the NIC's address and node: refused, each naming itself.
    const refusals = {
      'elasticips/status': await as(
        TENANT,
        ns(),
        statusPatch('elasticip', 'web', '{"status":{"address":"198.51.100.30"}}'),
      ),
      'elasticipattachments/status': await as(
        TENANT,
        ns(),
        statusPatch('elasticipattachment', 'web', '{"status":{"phase":"Attached","nodeName":"node-a"}}'),
      ),
      'networkinterfaces/status': await as(
        TENANT,
        ns(),
        statusPatch('networkinterface', 'web.eth0', '{"status":{"phase":"Ready"}}'),
      ),
      networkinterfaces: await as(TENANT, ns(), [
        'patch',
        'networkinterface',
        'web.eth0',
        '--type=merge',
        '-p',
        '{"spec":{"address":"192.0.2.11"}}',
      ]),
    };
    for (const [resource, r] of Object.entries(refusals)) {
      expect({ resource, code: r.code }).toEqual({ resource, code: 1 });
      const name = resource.startsWith('networkinterfaces') ? 'web.eth0' : 'web';
      expect(r.stderr).toContain(`${resource} of ${ns()}/${name} is written by the Juneau controller only (H2)`);
    }
    // The admin (system:masters, exempt) still can, and what the tenant tried never landed.
    await kubectl(statusPatch('elasticip', 'web', '{"status":{"address":"198.51.100.31"}}'), {
      namespace: ns(),
    });
    const stored = await kubectl(['get', 'elasticip', 'web', '-o', 'jsonpath={.status.address}'], { namespace: ns() });
    expect(stored.stdout).toBe('198.51.100.31');

    // Deleting stays open; so does removing the finalizer of a NIC being deleted (nothing else changes).
    await kubectl(
      [
        'patch',
        'networkinterface',
        'web.eth0',
        '--type=merge',
        '-p',
        '{"metadata":{"finalizers":["example.com/hold"]}}',
      ],
      {
        namespace: ns(),
      },
    );
    expect(await as(TENANT, ns(), ['delete', 'networkinterface', 'web.eth0', '--wait=false'])).toMatchObject({
      code: 0,
    });
    // Removing the finalizer while also moving the address is not only a removal: refused.
    const sneaks = await as(TENANT, ns(), [
      'patch',
      'networkinterface',
      'web.eth0',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers/0"},{"op":"replace","path":"/spec/address","value":"192.0.2.11"}]',
    ]);
    expect(sneaks.stderr).toContain(
      `networkinterfaces of ${ns()}/web.eth0 is written by the Juneau controller only (H2)`,
    );
    const release = await as(TENANT, ns(), [
      'patch',
      'networkinterface',
      'web.eth0',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers/0"}]',
    ]);
    expect(release).toMatchObject({ code: 0 });
    const gone = await kubectl(['get', 'networkinterface', 'web.eth0', '--ignore-not-found', '-o', 'name'], {
      namespace: ns(),
    });
    expect(gone.stdout.trim()).toBe('');
  });

  it('SEC-2: the stock edit role, through juneau-edit and juneau-view, may write ElasticIPs and attachments and read NICs and ServiceLoadBalancers, not write them or any status', async () => {
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'edit', namespace: ns() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: EDITOR }],
    };
    await kubectl(['apply', '-f', '-'], { input: yaml([binding]) });
    const can = async (verb: string, resource: string) => {
      const [plural, subresource] = resource.split('/');
      const args = [
        'auth',
        'can-i',
        verb,
        `${plural}.${GROUP}`,
        ...(subresource ? [`--subresource=${subresource}`] : []),
      ];
      return (await as(EDITOR, ns(), args)).stdout.trim();
    };
    // The aggregation controller copies juneau-edit's rules into edit: wait for the first of them.
    await waitFor(async () => (await can('create', 'elasticips')) === 'yes', {
      what: 'juneau-edit aggregated into edit',
      timeoutMs: 20_000,
    });
    const asked: Record<string, string> = {};
    for (const [verb, resource] of [
      ['create', 'elasticips'],
      ['delete', 'elasticips'],
      ['patch', 'elasticipattachments'],
      ['get', 'networkinterfaces'],
      ['list', 'serviceloadbalancers'],
      ['create', 'networkinterfaces'],
      ['patch', 'networkinterfaces'],
      ['patch', 'elasticips/status'],
      ['patch', 'elasticipattachments/status'],
      ['create', 'serviceloadbalancers'],
    ])
      asked[`${verb} ${resource}`] = await can(verb, resource);
    expect(asked).toEqual({
      'create elasticips': 'yes',
      'delete elasticips': 'yes',
      'patch elasticipattachments': 'yes',
      'get networkinterfaces': 'yes',
      'list serviceloadbalancers': 'yes',
      'create networkinterfaces': 'no',
      'patch networkinterfaces': 'no',
      'patch elasticips/status': 'no',
      'patch elasticipattachments/status': 'no',
      'create serviceloadbalancers': 'no',
    });
  });
});
