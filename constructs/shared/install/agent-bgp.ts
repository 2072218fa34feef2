/**
 * BGP mode's part of the agent's RBAC (with `bgpDaemon` only): what the BGP loop reads
 * (runtime/agent/bgp/sync.ts) and the one object it writes, its node's BGPNodeState (BGP-7).
 * As for the Lease (./agent-lease.ts), RBAC cannot say "only its own node's": every agent shares
 * one ServiceAccount and create cannot be limited by name. A ValidatingAdmissionPolicy, evaluated
 * inside the API server, lets the agent's ServiceAccount create or update only the BGPNodeState
 * named after the node its bound token names, with that node in spec.nodeName, and never delete one.
 */
import { GROUP, INSTALL, VERSION } from '../../../api';
import { admissionPolicy, namespacedRole, rule, type ManifestObject } from './objects';

/** The user extra of a bound ServiceAccount token that names the pod's node. */
const NODE_KEY = 'authentication.kubernetes.io/node-name';
const node = `request.userInfo.extra['${NODE_KEY}'][0]`;
const hasNode = `has(request.userInfo.extra) && '${NODE_KEY}' in request.userInfo.extra`;

/** Not a delete, named for the token's node, and (on the object itself) about that node. */
const OWN_STATE_ONLY = [
  `request.operation != 'DELETE'`,
  hasNode,
  `object.metadata.name == ${node}`,
  `(!has(object.spec) || !has(object.spec.nodeName) || object.spec.nodeName == ${node})`,
].join(' && ');

/** `the agent may write only its own node's BGPNodeState (BGP-7): node n1, BGPNodeState n2`. */
const REFUSAL_MESSAGE = [
  `"the agent may write only its own node's BGPNodeState, named after the node (BGP-7): "`,
  `(${hasNode} ? 'node ' + ${node} : 'its token names no node')`,
  `', BGPNodeState '`,
  `(request.operation == 'DELETE' ? oldObject.metadata.name + ' (delete)' : object.metadata.name)`,
].join(' + ');

/** The ClusterRole rules of the BGP loop (added to the agent's ClusterRole). */
export function agentBgpRules(): object[] {
  return [
    // The informers of runtime/agent/bgp/sync.ts: peers, advertisements, and the
    // ServiceLoadBalancers whose status.advertisingNodes say which VIPs the node announces (BGP-3).
    rule([GROUP], ['bgppeers', 'bgpadvertisements', 'serviceloadbalancers'], ['list', 'watch']),
    // BGP-7: its node's BGPNodeState by server-side apply (the apply that creates it needs create
    // too, as the API server checked here), read once at start for the previous transition times;
    // the policy below limits it to its own.
    rule([GROUP], ['bgpnodestates'], ['get', 'create', 'patch']),
    rule([GROUP], ['bgpnodestates/status'], ['patch']),
  ];
}

/** BGP-1's password Secrets (read by name, runtime/agent/bgp/passwords.ts) and the own-state policy. */
export function agentBgpRbac(ns: string): ManifestObject[] {
  const name = `${INSTALL.agentName}-bgp`;
  const agentUser = `system:serviceaccount:${ns}:${INSTALL.agentName}`;
  return [
    // get only (no list or watch): a BGPPeer's spec.passwordSecretRef names the Secret; the names
    // are the administrator's choice, so resourceNames cannot list them ahead.
    ...namespacedRole(name, ns, INSTALL.agentName, [rule([''], ['secrets'], ['get'])]),
    ...admissionPolicy(name, INSTALL.agentName, {
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [GROUP],
            apiVersions: [VERSION],
            operations: ['CREATE', 'UPDATE', 'DELETE'],
            resources: ['bgpnodestates', 'bgpnodestates/status'],
          },
        ],
      },
      matchConditions: [{ name: 'the-agent', expression: `request.userInfo.username == '${agentUser}'` }],
      validations: [{ expression: OWN_STATE_ONLY, messageExpression: REFUSAL_MESSAGE, reason: 'Forbidden' }],
    }),
  ];
}
