// FO-3 RBAC on the real API server: the install's agent Role and ValidatingAdmissionPolicy let the
// agent's ServiceAccount write only its own node's Lease. The agent is impersonated with the user
// extra a pod's bound token carries (`authentication.kubernetes.io/node-name`), as the kubelet's
// token for a pod on that node would.
import * as YAML from 'yaml';
import { INSTALL } from '../../api';
import { juneauInstallObjects } from '../../constructs/shared/install';
import { asAgent as asAgentOn } from './as-agent';
import { kubectl, waitFor } from './fixture';

const suffix = Math.random().toString(36).slice(2, 7);
const lease = (name: string) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name, namespace: INSTALL.namespace },
  spec: { holderIdentity: 'x', leaseDurationSeconds: 15 },
});

/** One request as the agent of `node` on the Leases of the install namespace. */
const leases = `/apis/coordination.k8s.io/v1/namespaces/${INSTALL.namespace}/leases`;
const asAgent = (node: string | undefined, method: string, name: string, body?: object, contentType?: string) =>
  asAgentOn(node, method, method === 'POST' ? leases : `${leases}/${name}`, body, contentType);

const policyObjects = juneauInstallObjects().filter((o) => o.metadata?.name === `${INSTALL.agentName}-lease`);

beforeAll(async () => {
  expect(policyObjects.map((o) => o.kind).sort()).toEqual([
    'Role',
    'RoleBinding',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
  ]);
  await kubectl(['apply', '-f', '-'], { input: policyObjects.map((o) => YAML.stringify(o)).join('---\n') });
});

afterAll(async () => {
  await kubectl(['delete', '-f', '-', '--ignore-not-found'], {
    input: policyObjects.map((o) => YAML.stringify(o)).join('---\n'),
    allowFailure: true,
  });
  await kubectl(['delete', 'lease', '-n', INSTALL.namespace, `juneau-agent-a${suffix}`, '--ignore-not-found'], {
    allowFailure: true,
  });
});

describe('FO-3 the agent writes only its own Lease (RBAC + ValidatingAdmissionPolicy)', () => {
  test("FO-3: creating and renewing its own node's Lease is allowed; another node's, or with no node in the token, is forbidden naming both", async () => {
    const own = `juneau-agent-a${suffix}`;
    // The policy takes effect once the API server has loaded it.
    let tries = 0;
    await waitFor(
      async () => {
        const r = await asAgent(`b${suffix}`, 'POST', '', lease(`juneau-agent-a${suffix}-${tries++}`));
        if (r.code < 300) throw new Error('created before the policy was in force');
        return r.message.includes('may write only its own');
      },
      { what: 'the policy in force', timeoutMs: 20_000 },
    );
    expect(await asAgent(`a${suffix}`, 'POST', '', lease(own))).toMatchObject({ code: 201 });
    const renew = { spec: { renewTime: '2026-01-01T00:00:00.000000Z' } };
    expect(await asAgent(`a${suffix}`, 'PATCH', own, renew, 'application/merge-patch+json')).toMatchObject({
      code: 200,
    });
    const other = await asAgent(`b${suffix}`, 'PATCH', own, renew, 'application/merge-patch+json');
    expect(other.code).toBe(403);
    expect(other.message).toContain(
      `the agent may write only its own node's Lease juneau-agent-<node> (FO-3): node b${suffix}, Lease ${own}`,
    );
    const noNode = await asAgent(undefined, 'POST', '', lease(`juneau-agent-c${suffix}`));
    expect(noNode.code).toBe(403);
    expect(noNode.message).toContain('its token names no node');
    // RBAC: the agent never deletes a Lease.
    expect(await asAgent(`a${suffix}`, 'DELETE', own)).toMatchObject({ code: 403 });
  });
});
