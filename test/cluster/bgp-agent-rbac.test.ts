// BGP-7 RBAC on the real API server: with bgpDaemon, the install's agent ClusterRole and
// ValidatingAdmissionPolicy let the agent's ServiceAccount write only its own node's BGPNodeState
// (by server-side apply, as runtime/agent/bgp/node-state-writer.ts does), and read what the BGP
// loop watches. The agent is impersonated with its bound token's node (./as-agent.ts).
import * as YAML from 'yaml';
import { GROUP, INSTALL, VERSION } from '../../api';
import { juneauInstallObjects } from '../../constructs/shared/install';
import { asAgent } from './as-agent';
import { kubectl, waitFor } from './fixture';

const suffix = Math.random().toString(36).slice(2, 7);
const [a, b, c] = ['a', 'b', 'c'].map((n) => `${n}${suffix}`);
const base = `/apis/${GROUP}/${VERSION}/bgpnodestates`;
const APPLY = 'application/apply-patch+yaml';
const applyPath = (name: string, sub = '') => `${base}/${name}${sub}?fieldManager=juneau-agent&force=true`;
const state = (name: string, nodeName = name) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'BGPNodeState',
  metadata: { name },
  spec: { nodeName },
});
const status = (name: string) => ({
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'BGPNodeState',
  metadata: { name },
  status: { peers: [{ peer: 'tor', state: 'Established', prefixesSent: 1 }], announced: { count: 0, addresses: [] } },
});

const agentName = INSTALL.agentName;
const objects = juneauInstallObjects({ bgpDaemon: true }).filter(
  (o) =>
    (o.metadata?.name === agentName && ['ClusterRole', 'ClusterRoleBinding'].includes(o.kind)) ||
    o.metadata?.name === `${agentName}-bgp`,
);
const manifest = objects.map((o) => YAML.stringify(o)).join('---\n');

beforeAll(async () => {
  expect(objects.map((o) => o.kind).sort()).toEqual([
    'ClusterRole',
    'ClusterRoleBinding',
    'Role',
    'RoleBinding',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
  ]);
  await kubectl(['apply', '-f', '-'], { input: manifest });
});

afterAll(async () => {
  await kubectl(['delete', '-f', '-', '--ignore-not-found'], { input: manifest, allowFailure: true });
  await kubectl(['delete', 'bgpnodestates', a, '--ignore-not-found'], { allowFailure: true });
});

describe('BGP-7 the agent writes only its own node BGPNodeState (RBAC + ValidatingAdmissionPolicy)', () => {
  test("BGP-7: its own node's BGPNodeState and status are applied; another node's, one naming another node, one with no node in the token, and a delete are refused", async () => {
    // The policy takes effect once the API server has loaded it (RBAC alone would let b write a's).
    await waitFor(
      async () => {
        const r = await asAgent(b, 'PATCH', applyPath(`x${suffix}`), state(`x${suffix}`), APPLY);
        if (r.code < 300) throw new Error(`created before the policy was in force: ${r.code}`);
        if (!r.message.includes('may write only its own')) throw new Error(`${r.code} ${r.message}`);
        return true;
      },
      { what: 'the policy in force', timeoutMs: 20_000 },
    );
    expect(await asAgent(a, 'PATCH', applyPath(a), state(a), APPLY)).toMatchObject({ code: 201 });
    expect(await asAgent(a, 'PATCH', applyPath(a, '/status'), status(a), APPLY)).toMatchObject({ code: 200 });
    const other = await asAgent(b, 'PATCH', applyPath(a, '/status'), status(a), APPLY);
    console.log(`BGP-7 another node's agent: ${other.code} ${other.message}`);
    expect(other.code).toBe(403);
    expect(other.message).toContain(
      `the agent may write only its own node's BGPNodeState, named after the node (BGP-7): node ${b}, BGPNodeState ${a}`,
    );
    const otherSpec = await asAgent(c, 'PATCH', applyPath(c), state(c, b), APPLY);
    expect(otherSpec.code).toBe(403);
    expect(otherSpec.message).toContain(`node ${c}, BGPNodeState ${c}`);
    const noNode = await asAgent(undefined, 'PATCH', applyPath(c), state(c), APPLY);
    expect(noNode.code).toBe(403);
    expect(noNode.message).toContain('its token names no node');
    // RBAC: no delete verb.
    expect(await asAgent(a, 'DELETE', `${base}/${a}`)).toMatchObject({ code: 403 });
    const stored = await kubectl(['get', 'bgpnodestate', a, '-o', 'jsonpath={.status.peers[0].state}']);
    expect(stored.stdout).toBe('Established');
  });

  test('BGP-1, BGP-3: the agent reads BGPPeers, BGPAdvertisements and ServiceLoadBalancers, and writes none of them', async () => {
    for (const plural of ['bgppeers', 'bgpadvertisements', 'serviceloadbalancers'])
      expect(await asAgent(a, 'GET', `/apis/${GROUP}/${VERSION}/${plural}`)).toMatchObject({ code: 200 });
    const peer = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'BGPPeer',
      metadata: { name: `p${suffix}` },
      spec: { peerAddress: '192.0.2.1', peerASN: 65000, myASN: 64512 },
    };
    expect(await asAgent(a, 'POST', `/apis/${GROUP}/${VERSION}/bgppeers`, peer)).toMatchObject({ code: 403 });
    // Secrets by name only (a BGPPeer's passwordSecretRef): no list.
    expect(await asAgent(a, 'GET', `/api/v1/namespaces/${INSTALL.namespace}/secrets`)).toMatchObject({ code: 403 });
  });
});
