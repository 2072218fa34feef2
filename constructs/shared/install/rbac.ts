/**
 * The install's RBAC: least privilege for the controller and the agent, each rule naming the code
 * that needs it (the agent's own-Lease rule and policy: ./agent-lease.ts).
 */
import { GROUP, INSTALL } from '../../../api';
import { agentBgpRbac, agentBgpRules } from './agent-bgp';
import { agentLeaseRbac } from './agent-lease';
import { meta, namespacedRole, rule, type ManifestObject } from './objects';

/**
 * Least privilege: the controller reads what it decides from and writes only what it owns. Each
 * rule names the code that needs it; the cluster in a box runs the controller with this
 * ServiceAccount's token and test/shared/install-identity.ts, read by test/box/scenarios.test.ts,
 * fails on a Forbidden request or a rule no request used.
 */
export function controllerRbac(ns: string): ManifestObject[] {
  const name = INSTALL.controllerName;
  return [
    ...serviceAccountWithClusterRole(name, ns, [
      // Informers (list, watch: runtime/controller/context.ts, and the webhooks'
      // informerWebhookCaches in webhook/listers.ts). `get` only where the code reads one object by name.
      rule([GROUP], ['addresspools', 'elasticipattachments'], ['list', 'watch']),
      // BGP-7, BGP-9: peers and advertisements (the webhooks and the SLB phase), the agents' node states (bgp/).
      rule([GROUP], ['bgppeers', 'bgpadvertisements', 'bgpnodestates'], ['list', 'watch']),
      // get: the orphan-claim sweep asks whether a claim's holder still exists (claim-sweep.ts).
      rule([GROUP], ['externalnetworks'], ['get', 'list', 'watch']),
      // patch: the ElasticIP finalizer (EIP-15) is added and removed with a merge patch.
      rule([GROUP], ['elasticips'], ['list', 'watch', 'patch']),
      // NATGateways (ngw/reconcile.ts): the finalizer by merge patch; get: claim sweep.
      rule([GROUP], ['natgateways'], ['get', 'list', 'watch', 'patch']),
      // ServiceLoadBalancers by server-side apply (patch; create is authorized inside the patch
      // that creates one), deleted when their Service stops being Juneau's; get: claim sweep.
      // ARPAdvertisements (arp/claim-guard.ts): create, get, JSON patch to move, delete.
      rule(
        [GROUP],
        ['serviceloadbalancers', 'arpadvertisements'],
        ['get', 'list', 'watch', 'create', 'patch', 'delete'],
      ),
      // NetworkInterfaces of Pods (pods/reconcile-pod.ts): create, merge patch, delete.
      rule([GROUP], ['networkinterfaces'], ['list', 'watch', 'create', 'patch', 'delete']),
      // Claims (allocator/, arp/claim-guard.ts get): created to take a value, deleted to release it.
      rule([GROUP], ['allocationclaims'], ['get', 'list', 'watch', 'create', 'delete']),
      // The subnet-vni AllocationPool is created once when absent (controller.ts) and never changed.
      rule([GROUP], ['allocationpools'], ['list', 'watch', 'create']),
      // Every status is written by server-side apply (kube/apply.ts applyStatus).
      rule(
        [GROUP],
        [
          'addresspools/status',
          'externalnetworks/status',
          'elasticips/status',
          'elasticipattachments/status',
          'networkinterfaces/status',
          'serviceloadbalancers/status',
          'arpadvertisements/status',
          'bgppeers/status',
          'natgateways/status',
        ],
        ['patch'],
      ),
      rule([''], ['services', 'pods'], ['list', 'watch']),
      // The ARPAdvertisement webhook checks spec.nodeName and node addresses (ARP-5) from an
      // informer of Nodes (webhook/listers.ts informerWebhookCaches).
      rule([''], ['nodes'], ['list', 'watch']),
      // SEC-9: the Namespaces' labels, for the networks' spec.allowedNamespaces, from an informer
      // (context.ts Caches.namespaces; the ElasticIP webhook reads it too).
      rule([''], ['namespaces'], ['list', 'watch']),
      // H5: the Service ranges (spec.cidrs) are never an ElasticIP or a VIP, from an informer
      // (context.ts Caches.serviceCIDRs, clusterRangesOf; the AddressPool webhook reads it too).
      // Not started when the API server does not serve them (kube/service-cidrs.ts).
      rule(['networking.k8s.io'], ['servicecidrs'], ['list', 'watch']),
      ...metricsReviewRules(),
      // The controller learns its own identity so only it may write ServiceLoadBalancers (SLB-1).
      rule(['authentication.k8s.io'], ['selfsubjectreviews'], ['create']),
      // The Service's status.loadBalancer.ingress, by merge patch (runtime/controller/slb/reconcile.ts).
      rule([''], ['services/status'], ['patch']),
      rule(['discovery.k8s.io'], ['endpointslices'], ['list', 'watch']),
      // kube/events.ts: a new Event is created, a repeat patches its series.
      rule(['events.k8s.io'], ['events'], ['create', 'patch']),
      // webhook/registration.ts ensureCaBundle: get and replace the installed configuration only.
      rule(
        ['admissionregistration.k8s.io'],
        ['validatingwebhookconfigurations'],
        ['get', 'update'],
        [INSTALL.webhookConfigurationName],
      ),
    ]),
    ...namespacedRole(name, ns, name, [
      // kube/leader-election.ts: get, create when absent, replace to renew or take over.
      rule(['coordination.k8s.io'], ['leases'], ['create']),
      rule(['coordination.k8s.io'], ['leases'], ['get', 'update'], [INSTALL.leaseName]),
      // FO-3: the agents' Leases, read through an informer (nodes/agent-leases.ts).
      rule(['coordination.k8s.io'], ['leases'], ['list', 'watch']),
      // webhook/cert-secret.ts: get, create when absent, replace to rotate (create cannot be
      // limited by name: the name is not in the request's URL).
      rule([''], ['secrets'], ['create']),
      rule([''], ['secrets'], ['get', 'update'], [INSTALL.webhookCertSecretName]),
    ]),
  ];
}

/**
 * The agent only reads its node's ARPAdvertisements and the pools it guards, the ElasticIPs,
 * attachments and NetworkInterfaces that place NAT on it, the Nodes, ServiceCIDRs and API server
 * endpoints whose prefixes stay in the cluster (NAT-2) and the Nodes of direct ElasticIPs (EN-9) (informers: list
 * and watch), reads its own Node once for the InternalIP (EN-12), and reports Events.
 */
export function agentRbac(ns: string, bgp = false): ManifestObject[] {
  return serviceAccountWithClusterRole(INSTALL.agentName, ns, [
    // BGP mode (with bgpDaemon only): ./agent-bgp.ts.
    ...(bgp ? agentBgpRules() : []),
    // elasticips, elasticipattachments, networkinterfaces: the ElasticIP data plane (runtime/agent/nat/sync.ts),
    // which ElasticIPs this node translates or carries directly, read from their attachments' and NICs' status;
    // natgateways: the NATGateway loop (runtime/agent/ngw/loop.ts: podSelector, status.address, nodeName, phase).
    rule(
      [GROUP],
      [
        'arpadvertisements',
        'externalnetworks',
        'addresspools',
        'elasticips',
        'elasticipattachments',
        'networkinterfaces',
        'natgateways',
      ],
      ['list', 'watch'],
    ),
    // get: the NetworkInterface and ElasticIP of a pod whose sandbox juneau-cni sets up
    // (runtime/agent/cni/server.ts, CNI-1, CNI-2), read fresh rather than from a cache that may lag.
    rule([GROUP], ['elasticips', 'networkinterfaces'], ['get']),
    // get: its own Node's InternalIP (runtime/agent/main.ts ingressInterface, EN-12); list, watch:
    // every Node's spec.podCIDRs and addresses, and the ServiceCIDRs (Kubernetes 1.33+), the
    // in-cluster destinations that keep an ElasticIP pod's address (NAT-2: runtime/agent/nat/sync.ts,
    // nat/prefixes.ts), and the InternalIP of the node that holds a direct ElasticIP (EN-9).
    rule([''], ['nodes'], ['get', 'list', 'watch']),
    rule(['networking.k8s.io'], ['servicecidrs'], ['list', 'watch']),
    // H1: its own node's Pods (by field selector spec.nodeName): a NIC binds only while its Pod runs;
    // NGW-4: on a NATGateway's gateway node, the Pods of its namespace (runtime/agent/ngw/loop.ts);
    // get: the Pod whose sandbox juneau-cni sets up, for its annotations (runtime/agent/cni/server.ts).
    rule([''], ['pods'], ['get', 'list', 'watch']),
    // NAT-2: the `default/kubernetes` Service's EndpointSlices (the API servers), by label selector;
    // RBAC cannot limit list/watch to a label, and a Role in `default` would outlive an uninstall.
    rule(['discovery.k8s.io'], ['endpointslices'], ['list', 'watch']),
    rule(['events.k8s.io'], ['events'], ['create', 'patch']),
    ...metricsReviewRules(),
    // Its own DaemonSet and namespace only, watched by name: a stop while either is deleted is an
    // uninstall, which detaches the responder and removes the pins (runtime/agent/liveness/uninstall.ts).
    rule(['apps'], ['daemonsets'], ['list', 'watch'], [INSTALL.agentName]),
    rule([''], ['namespaces'], ['list', 'watch'], [ns]),
  ]).concat(agentLeaseRbac(ns), bgp ? agentBgpRbac(ns) : []);
}

/**
 * /metrics is served to callers the API server authenticates and authorizes (runtime/kube/metrics-auth.ts):
 * a TokenReview of the caller's token, a SubjectAccessReview of its user for `get /metrics`.
 */
const metricsReviewRules = () => [
  rule(['authentication.k8s.io'], ['tokenreviews'], ['create']),
  rule(['authorization.k8s.io'], ['subjectaccessreviews'], ['create']),
];

/** A ServiceAccount, a ClusterRole of `rules` and the binding between them, all named `name`. */
function serviceAccountWithClusterRole(name: string, ns: string, rules: object[]): ManifestObject[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(name, ns) },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(name), rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta(name),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
    },
  ];
}

/** The stock roles' aggregation labels (the view role's rules are in edit and admin too, as Kubernetes' own are). */
const AGGREGATE_TO = (...roles: Array<'view' | 'edit' | 'admin'>) =>
  Object.fromEntries(roles.map((r) => [`rbac.authorization.k8s.io/aggregate-to-${r}`, 'true']));

/**
 * What tenants use, aggregated into the stock namespaced roles (H2), so `edit` in a namespace is
 * enough to use Juneau there and nothing more: ElasticIPs, ElasticIPAttachments and NATGateways are theirs to
 * write; NetworkInterfaces (the controller's, from Pods) and ServiceLoadBalancers (derived from
 * Services, SLB-1) are read-only. Cluster-scoped kinds (networks, pools, ARPAdvertisements, claims)
 * are the cluster admin's and are not in either role. Status stays the controller's: the
 * controller-writes policy (./controller-writes.ts) refuses it to anyone else whatever RBAC grants.
 */
export function tenantRoles(): ManifestObject[] {
  const role = (name: string, aggregation: Record<string, string>, rules: object[]): ManifestObject => {
    const metadata = meta(name, undefined, INSTALL.controllerName);
    return {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { ...metadata, labels: { ...metadata.labels, ...aggregation } },
      rules,
    };
  };
  const read = ['get', 'list', 'watch'];
  return [
    role('juneau-view', AGGREGATE_TO('view', 'edit', 'admin'), [
      rule(
        [GROUP],
        [
          'elasticips',
          'elasticips/status',
          'elasticipattachments',
          'elasticipattachments/status',
          'networkinterfaces',
          'networkinterfaces/status',
          'serviceloadbalancers',
          'serviceloadbalancers/status',
          'natgateways',
          'natgateways/status',
        ],
        read,
      ),
    ]),
    role('juneau-edit', AGGREGATE_TO('edit', 'admin'), [
      rule(
        [GROUP],
        ['elasticips', 'elasticipattachments', 'natgateways'],
        ['create', 'update', 'patch', 'delete', 'deletecollection'],
      ),
    ]),
  ];
}
