/**
 * H2: the data plane takes a NetworkInterface's spec and the status of ElasticIPs, attachments and
 * NetworkInterfaces as truth (runtime/agent/nat/), so only the controller may write them. RBAC cannot
 * say so: an admin who lets tenants "use Juneau" grants `juneau.loutres.me` `resources: ["*"]`, and
 * `*` covers subresources. A ValidatingAdmissionPolicy, evaluated inside the API server (no webhook
 * whose outage would stop the controller's own writes), refuses every CREATE or UPDATE of
 * `networkinterfaces` and of those `*` `/status` (and NATGateways', NGW-3) by anyone but the controller's ServiceAccount.
 * Two exceptions, as SLB-1's, keep an object from being stuck and change nothing it says: anyone may
 * remove finalizers from an object being deleted, and anyone may remove ownerReferences (the garbage
 * collector does). Deletes are not matched.
 *
 * `system:masters` is exempt: it is the break-glass group RBAC cannot restrict either, no tenant is
 * in it, and repairs by hand (or test harnesses that run a controller with an admin identity) go
 * through it. An admin of the cluster-admin ClusterRole outside that group is refused like anyone.
 */
import { GROUP, INSTALL, VERSION } from '../../../api';
import { admissionPolicy, type ManifestObject } from './objects';

/** What the policy guards: a NetworkInterface itself, and the four statuses the data plane reads. */
export const CONTROLLER_ONLY_RESOURCES = [
  'networkinterfaces',
  'networkinterfaces/status',
  'elasticips/status',
  'elasticipattachments/status',
  // NGW-3: a node's agent takes status.nodeName and status.address as where to translate.
  'natgateways/status',
] as const;

/** `has(o.f) == has(p.f) && (!has(o.f) || o.f == p.f)`: field `f` unchanged, present or not. */
const unchanged = (path: string) =>
  `(has(object.${path}) == has(oldObject.${path}) && (!has(object.${path}) || object.${path} == oldObject.${path}))`;

/** The request's subresource, '' for the object itself (the field is absent then, not empty). */
const SUBRESOURCE = `(has(request.subResource) ? request.subResource : '')`;

const size = (path: string) => `(has(object.${path}) ? size(object.${path}) : 0)`;
const oldSize = (path: string) => `(has(oldObject.${path}) ? size(oldObject.${path}) : 0)`;

/**
 * Only finalizers removed from an object being deleted, or only ownerReferences removed; nothing
 * added, nothing else changed (a no-op write stays refused): onlyRemovesReferences of SLB-1 in CEL.
 */
const ONLY_REMOVES_REFERENCES = [
  `request.operation == 'UPDATE'`,
  `${SUBRESOURCE} == ''`,
  unchanged('spec'),
  unchanged('status'),
  unchanged('metadata.labels'),
  unchanged('metadata.annotations'),
  `(!has(object.metadata.finalizers) || object.metadata.finalizers.all(f, has(oldObject.metadata.finalizers) && f in oldObject.metadata.finalizers))`,
  `(!has(object.metadata.ownerReferences) || object.metadata.ownerReferences.all(o, has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(p, p.uid == o.uid)))`,
  `((${size('metadata.finalizers')} < ${oldSize('metadata.finalizers')} && has(oldObject.metadata.deletionTimestamp)) || ${size('metadata.ownerReferences')} < ${oldSize('metadata.ownerReferences')})`,
].join(' && ');

/** `networkinterfaces/status of aaa/f.eth0 is written by the Juneau controller only (H2): … (request by alice)`. */
const REFUSAL_MESSAGE = [
  `request.resource.resource + (${SUBRESOURCE} != '' ? '/' + ${SUBRESOURCE} : '')`,
  `' of ' + (request.namespace != '' ? request.namespace + '/' : '') + request.name`,
  `' is written by the Juneau controller only (H2): the data plane takes it as truth; create Pods with the ElasticIP annotation and ElasticIPAttachments instead (request by ' + request.userInfo.username + ')'`,
].join(' + ');

export function controllerWritesPolicy(ns: string): ManifestObject[] {
  const name = `${INSTALL.controllerName}-writes`;
  const controllerUser = `system:serviceaccount:${ns}:${INSTALL.controllerName}`;
  return admissionPolicy(name, INSTALL.controllerName, {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: [GROUP],
          apiVersions: [VERSION],
          operations: ['CREATE', 'UPDATE'],
          resources: [...CONTROLLER_ONLY_RESOURCES],
        },
      ],
    },
    matchConditions: [
      { name: 'not-the-controller', expression: `request.userInfo.username != '${controllerUser}'` },
      {
        name: 'not-system-masters',
        expression: `!(has(request.userInfo.groups) && 'system:masters' in request.userInfo.groups)`,
      },
    ],
    validations: [{ expression: ONLY_REMOVES_REFERENCES, messageExpression: REFUSAL_MESSAGE, reason: 'Forbidden' }],
  });
}
