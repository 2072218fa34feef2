/**
 * FO-3: each agent renews its node's Lease `juneau-agent-<node>` (runtime/agent/liveness/lease.ts): merge
 * patch to renew, create when the patch finds none. RBAC cannot say "only its own": every agent
 * shares one ServiceAccount, and resourceNames cannot restrict create (the name is not in the URL).
 * The node is in the request, though: a pod's bound ServiceAccount token carries the node it runs
 * on (user extra `authentication.kubernetes.io/node-name`), and a ValidatingAdmissionPolicy,
 * evaluated inside the API server (no webhook whose outage would stop every renewal and with it
 * every node's answers, FO-2), lets the agent's ServiceAccount write only the Lease of that node.
 * The agent never deletes a Lease (an uninstall removes the namespace).
 */
import { AGENT_LEASE, INSTALL } from '../../../api';
import { admissionPolicy, namespacedRole, rule, type ManifestObject } from './objects';

/** The user extra of a bound ServiceAccount token that names the pod's node. */
const NODE_KEY = 'authentication.kubernetes.io/node-name';

/**
 * The policy's CEL, one named part a line: the request's node and Lease, the condition that the
 * Lease is the node's own, and the message that says which node asked for which Lease.
 */
const node = `request.userInfo.extra['${NODE_KEY}'][0]`;
const cel = {
  hasNode: `has(request.userInfo.extra) && '${NODE_KEY}' in request.userInfo.extra`,
  node,
  ownLeaseName: `'${AGENT_LEASE.namePrefix}' + ${node}`,
  leaseAsked: `(request.operation == 'DELETE' ? oldObject.metadata.name + ' (delete)' : object.metadata.name)`,
};

/** Not a delete, and the Lease is named for the node the agent's token names. */
const OWN_LEASE_ONLY = [
  `request.operation != 'DELETE'`,
  cel.hasNode,
  `object.metadata.name == ${cel.ownLeaseName}`,
].join(' && ');

/** `the agent may write only its own node's Lease juneau-agent-<node> (FO-3): node n1, Lease x`. */
const REFUSAL_MESSAGE = [
  `"the agent may write only its own node's Lease ${AGENT_LEASE.namePrefix}<node> (FO-3): "`,
  `(${cel.hasNode} ? 'node ' + ${cel.node} : 'its token names no node')`,
  `', Lease '`,
  cel.leaseAsked,
].join(' + ');

export function agentLeaseRbac(ns: string): ManifestObject[] {
  const name = `${INSTALL.agentName}-lease`;
  const agentUser = `system:serviceaccount:${ns}:${INSTALL.agentName}`;
  return [
    ...namespacedRole(name, ns, INSTALL.agentName, [rule(['coordination.k8s.io'], ['leases'], ['create', 'patch'])]),
    ...admissionPolicy(name, INSTALL.agentName, {
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['coordination.k8s.io'],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE', 'DELETE'],
            resources: ['leases'],
          },
        ],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      },
      matchConditions: [{ name: 'the-agent', expression: `request.userInfo.username == '${agentUser}'` }],
      validations: [{ expression: OWN_LEASE_ONLY, messageExpression: REFUSAL_MESSAGE, reason: 'Forbidden' }],
    }),
  ];
}
