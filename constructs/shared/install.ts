/**
 * The install manifest: one definition of every object Juneau needs on a cluster, rendered as
 * plain Kubernetes objects. The cdk8s JuneauInstall and the Pulumi JuneauInstall both emit exactly
 * these objects (one definition, two front-ends).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { allCustomResourceDefinitions, GROUP, INSTALL } from '../../api';
import { juneauWebhooks } from '../../api/webhooks';
import { issue, ValidationIssue, checkLabelName, parseAddressItem } from '../../api/validation';
import { imageReference, JuneauImageOptions, resolveImage, validateImage } from './image';
import {
  checkImagePullSecrets,
  checkLabels,
  Component,
  containerResources,
  JuneauWorkloadOptions,
  podScheduling,
  RESERVED_LABELS,
  validateWorkloadOptions,
  withExtraLabels,
} from './install-pods';

export type { JuneauResources, JuneauToleration, JuneauWorkloadOptions } from './install-pods';

export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
} & Record<string, unknown>;

export interface JuneauInstallOptions {
  /**
   * Namespace of the controller and the agents.
   * @default 'juneau-system'
   */
  readonly namespace?: string;
  /**
   * The image holding `juneau-controller`, `juneau-agent` and `kubectl-juneau` (`npm run images`
   * builds it): set `registry` after pushing the archive to your own registry.
   * @default { registry: 'ghcr.io', repository: 'loutres/juneau', tag: 'v' + the package version, pullPolicy: 'IfNotPresent' }
   */
  readonly image?: JuneauImageOptions;
  /**
   * Controller replicas; one leads (Lease), every replica serves the webhooks.
   * @default 2
   */
  readonly controllerReplicas?: number;
  /**
   * Who issues the webhook's serving certificate: the controller itself (it keeps a CA and a
   * certificate in a Secret and patches caBundle), or cert-manager (an Issuer + Certificate are
   * added and cert-manager's CA injector fills caBundle).
   * @default 'self-managed'
   */
  readonly certificates?: 'self-managed' | 'cert-manager';
  /**
   * The interface agents answer ARP on; empty means the interface holding the Node's InternalIP (EN-12).
   * @default the InternalIP's interface
   */
  readonly nodeIngressInterface?: string;
  /**
   * XDP attach mode of the agents.
   * @default 'auto' (native, falling back to generic)
   */
  readonly xdpMode?: 'auto' | 'native' | 'generic';
  /**
   * Devices through which each node routes to its pods (a CNI bridge such as `cni0`): the agent
   * rewrites an ElasticIP pod's source address as packets enter them, before a CNI masquerade
   * rule can (NAT-2; the agent's `--nat-pod-ifaces`). Without them the source is rewritten at the
   * ingress interface's egress, after netfilter: a CNI that masquerades there wins.
   * @default none
   */
  readonly natPodInterfaces?: readonly string[];
  /**
   * In-cluster prefixes the agents cannot learn, added to what they learn from the API (every
   * Node's `spec.podCIDRs` and InternalIP/ExternalIP, the ServiceCIDRs of Kubernetes 1.33+):
   * traffic from an ElasticIP pod to them keeps the pod address (NAT-2; the agent's
   * `--nat-cluster-cidrs`). Name the pod range of a CNI that does not record it on the Nodes
   * (Calico IPAM, Cilium cluster-pool), and the Service range before Kubernetes 1.33.
   * @default none (what the agents learn)
   */
  readonly natClusterCidrs?: readonly string[];
  /**
   * Include the CustomResourceDefinitions (turn off when CRDs are managed separately).
   * @default true
   */
  readonly includeCrds?: boolean;
  /**
   * Log level of both binaries.
   * @default 'info'
   */
  readonly logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /**
   * Secrets (`kubernetes.io/dockerconfigjson`, in the install's namespace) the kubelet uses to pull
   * the image, for a private registry; given to the controller and the agent pods.
   * @default none
   */
  readonly imagePullSecrets?: readonly string[];
  /**
   * Labels added to every object of the install and to the pods (for example a team or cost
   * label). The install's own keys (`app.kubernetes.io/name`, `part-of`, `version`, the
   * namespace's pod-security label) cannot be replaced.
   * @default none
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The controller Deployment's image, node selector, tolerations, resources and priority class.
   * @default see JuneauWorkloadOptions
   */
  readonly controller?: JuneauWorkloadOptions;
  /**
   * The agent DaemonSet's image, node selector, tolerations, resources and priority class. The
   * agent must run on every node that may answer ARP for a Juneau address.
   * @default see JuneauWorkloadOptions
   */
  readonly agent?: JuneauWorkloadOptions;
}

/**
 * This package's version, from its package.json wherever this file runs (sources, build/lib,
 * node_modules, a bundle next to the package); 'unknown' where there is none. Only the constructs
 * load this file: the binaries take the webhook list from api/webhooks.ts and never read
 * package.json (test/unit/layers.test.ts).
 */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'juneau' && pkg.version) return pkg.version;
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}
const PACKAGE_VERSION = packageVersion();
const commonLabels = { 'app.kubernetes.io/part-of': 'juneau', 'app.kubernetes.io/version': PACKAGE_VERSION };

/** What the kernel accepts as an interface name (IFNAMSIZ - 1 characters). */
const INTERFACE_NAME = /^[A-Za-z0-9_.:@-]{1,15}$/;

export function resolveInstallOptions(o: JuneauInstallOptions = {}): Required<JuneauInstallOptions> {
  return {
    namespace: o.namespace ?? INSTALL.namespace,
    image: resolveImage(o.image, PACKAGE_VERSION),
    controllerReplicas: o.controllerReplicas ?? 2,
    certificates: o.certificates ?? 'self-managed',
    nodeIngressInterface: o.nodeIngressInterface ?? '',
    xdpMode: o.xdpMode ?? 'auto',
    natPodInterfaces: o.natPodInterfaces ?? [],
    natClusterCidrs: o.natClusterCidrs ?? [],
    includeCrds: o.includeCrds ?? true,
    logLevel: o.logLevel ?? 'info',
    imagePullSecrets: o.imagePullSecrets ?? [],
    labels: o.labels ?? {},
    controller: o.controller ?? {},
    agent: o.agent ?? {},
  };
}

export function validateInstallOptions(o: JuneauInstallOptions): ValidationIssue[] {
  const r = resolveInstallOptions(o);
  const issues = [...checkLabelName('namespace', r.namespace)];
  if (!Number.isInteger(r.controllerReplicas) || r.controllerReplicas < 1)
    issues.push(issue('controllerReplicas', r.controllerReplicas, 'must be an integer of at least 1'));
  issues.push(...validateImage(o.image, PACKAGE_VERSION));
  if (r.nodeIngressInterface && !INTERFACE_NAME.test(r.nodeIngressInterface))
    issues.push(
      issue('nodeIngressInterface', r.nodeIngressInterface, 'is not a Linux interface name (1-15 characters)'),
    );
  if (!['auto', 'native', 'generic'].includes(r.xdpMode))
    issues.push(issue('xdpMode', r.xdpMode, 'must be auto, native or generic'));
  r.natPodInterfaces.forEach((name, i) => {
    if (!INTERFACE_NAME.test(name))
      issues.push(issue(`natPodInterfaces[${i}]`, name, 'is not a Linux interface name (1-15 characters)'));
  });
  r.natClusterCidrs.forEach((cidr, i) => {
    const parsed = cidr.includes('/')
      ? parseAddressItem(cidr)
      : { ok: false as const, reason: 'is not an IPv4 CIDR (a.b.c.d/n)' };
    if (!parsed.ok) issues.push(issue(`natClusterCidrs[${i}]`, cidr, parsed.reason));
  });
  issues.push(...checkImagePullSecrets(o.imagePullSecrets), ...checkLabels('labels', o.labels, RESERVED_LABELS));
  const image = (field: string, i: JuneauImageOptions | undefined) =>
    validateImage(i === undefined ? undefined : { ...o.image, ...i }, PACKAGE_VERSION, field);
  issues.push(
    ...validateWorkloadOptions('controller', o.controller, image),
    ...validateWorkloadOptions('agent', o.agent, image),
  );
  return issues;
}

const labels = (component: string) => ({ ...commonLabels, 'app.kubernetes.io/name': component });
const selector = (component: string) => ({
  'app.kubernetes.io/name': component,
  'app.kubernetes.io/part-of': 'juneau',
});
const meta = (name: string, namespace?: string, component = name) => ({
  name,
  ...(namespace ? { namespace } : {}),
  labels: labels(component),
});
const rule = (apiGroups: string[], resources: string[], verbs: string[], resourceNames?: string[]) => ({
  apiGroups,
  resources,
  verbs,
  ...(resourceNames ? { resourceNames } : {}),
});

/**
 * Least privilege: the controller reads what it decides from and writes only what it owns. Each
 * rule names the code that needs it; the e2e rig runs the controller with this ServiceAccount's
 * token and test/e2e/rbac-audit.ts fails on a Forbidden request or a rule no request used.
 */
function controllerRbac(ns: string): KubeObject[] {
  const name = INSTALL.controllerName;
  return [
    ...serviceAccountWithClusterRole(name, ns, [
      // Informers (list, watch: runtime/controller/controller.ts, eip/caches.ts, and the webhooks'
      // informerWebhookCaches in webhook/listers.ts). `get` only where the code reads one object by name.
      rule([GROUP], ['addresspools', 'elasticipattachments'], ['list', 'watch']),
      // get: the orphan-claim sweep asks whether a claim's holder still exists (claim-sweep.ts).
      rule([GROUP], ['externalnetworks'], ['get', 'list', 'watch']),
      // patch: the ElasticIP finalizer (EIP-15) is added and removed with a merge patch.
      rule([GROUP], ['elasticips'], ['list', 'watch', 'patch']),
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
        ],
        ['patch'],
      ),
      rule([''], ['services', 'pods'], ['list', 'watch']),
      // The ARPAdvertisement webhook checks spec.nodeName and node addresses (ARP-5) from an
      // informer of Nodes (webhook/listers.ts informerWebhookCaches).
      rule([''], ['nodes'], ['list', 'watch']),
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
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(name, ns),
      rules: [
        // kube/leader-election.ts: get, create when absent, replace to renew or take over.
        rule(['coordination.k8s.io'], ['leases'], ['create']),
        rule(['coordination.k8s.io'], ['leases'], ['get', 'update'], [INSTALL.leaseName]),
        // FO-3: the agents' Leases, read through an informer (nodes/agent-leases.ts).
        rule(['coordination.k8s.io'], ['leases'], ['list', 'watch']),
        // webhook/cert-secret.ts: get, create when absent, replace to rotate (create cannot be
        // limited by name: the name is not in the request's URL).
        rule([''], ['secrets'], ['create']),
        rule([''], ['secrets'], ['get', 'update'], [INSTALL.webhookCertSecretName]),
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(name, ns),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
    },
  ];
}

/**
 * The agent only reads its node's ARPAdvertisements and the pools it guards, the ElasticIPs,
 * attachments and NetworkInterfaces that place NAT on it, the Nodes, ServiceCIDRs and API server
 * endpoints whose prefixes stay in the cluster (NAT-2) and the Nodes of direct ElasticIPs (EN-9) (informers: list
 * and watch), reads its own Node once for the InternalIP (EN-12), and reports Events.
 */
function agentRbac(ns: string): KubeObject[] {
  return serviceAccountWithClusterRole(INSTALL.agentName, ns, [
    // The last three: the ElasticIP data plane (runtime/agent/nat.ts), which ElasticIPs this node
    // translates or carries directly, read from their attachments' and NICs' status.
    rule(
      [GROUP],
      [
        'arpadvertisements',
        'externalnetworks',
        'addresspools',
        'elasticips',
        'elasticipattachments',
        'networkinterfaces',
      ],
      ['list', 'watch'],
    ),
    // get: its own Node's InternalIP (runtime/agent/main.ts ingressInterface, EN-12); list, watch:
    // every Node's spec.podCIDRs and addresses, and the ServiceCIDRs (Kubernetes 1.33+), the
    // in-cluster destinations that keep an ElasticIP pod's address (NAT-2: runtime/agent/nat.ts,
    // cluster-prefixes.ts), and the InternalIP of the node that holds a direct ElasticIP (EN-9).
    rule([''], ['nodes'], ['get', 'list', 'watch']),
    rule(['networking.k8s.io'], ['servicecidrs'], ['list', 'watch']),
    // NAT-2: the `default/kubernetes` Service's EndpointSlices (the API servers), by label selector;
    // RBAC cannot limit list/watch to a label, and a Role in `default` would outlive an uninstall.
    rule(['discovery.k8s.io'], ['endpointslices'], ['list', 'watch']),
    rule(['events.k8s.io'], ['events'], ['create', 'patch']),
    // Its own DaemonSet and namespace only, watched by name: a stop while either is deleted is an
    // uninstall, which detaches the responder and removes the pins (runtime/agent/uninstall.ts).
    rule(['apps'], ['daemonsets'], ['list', 'watch'], [INSTALL.agentName]),
    rule([''], ['namespaces'], ['list', 'watch'], [ns]),
  ]).concat(agentLeaseRbac(ns));
}

/**
 * FO-3: each agent renews its node's Lease `juneau-agent-<node>` (runtime/agent/lease.ts): merge
 * patch to renew, create when the patch finds none. RBAC cannot say "only its own": every agent shares one
 * ServiceAccount, and resourceNames cannot restrict create (the name is not in the URL). The
 * node is in the request, though: a pod's bound ServiceAccount token carries the node it runs on
 * (user extra `authentication.kubernetes.io/node-name`), and a ValidatingAdmissionPolicy,
 * evaluated inside the API server (no webhook whose outage would stop every renewal and with it
 * every node's answers, FO-2), lets the agent's ServiceAccount write only the Lease of that node.
 * The agent never deletes a Lease (an uninstall removes the namespace).
 */
function agentLeaseRbac(ns: string): KubeObject[] {
  const name = `${INSTALL.agentName}-lease`;
  const agentUser = `system:serviceaccount:${ns}:${INSTALL.agentName}`;
  const nodeKey = 'authentication.kubernetes.io/node-name';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(name, ns, INSTALL.agentName),
      rules: [rule(['coordination.k8s.io'], ['leases'], ['create', 'patch'])],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(name, ns, INSTALL.agentName),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name: INSTALL.agentName, namespace: ns }],
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: meta(name, undefined, INSTALL.agentName),
      spec: {
        failurePolicy: 'Fail',
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
        validations: [
          {
            expression: `request.operation != 'DELETE' && has(request.userInfo.extra) && '${nodeKey}' in request.userInfo.extra && object.metadata.name == '${AGENT_LEASE_NAME_PREFIX}' + request.userInfo.extra['${nodeKey}'][0]`,
            messageExpression: `"the agent may write only its own node's Lease ${AGENT_LEASE_NAME_PREFIX}<node> (FO-3): " + (has(request.userInfo.extra) && '${nodeKey}' in request.userInfo.extra ? 'node ' + request.userInfo.extra['${nodeKey}'][0] : 'its token names no node') + ', Lease ' + (request.operation == 'DELETE' ? oldObject.metadata.name + ' (delete)' : object.metadata.name)`,
            reason: 'Forbidden',
          },
        ],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: meta(name, undefined, INSTALL.agentName),
      spec: { policyName: name, validationActions: ['Deny'] },
    },
  ];
}

/** runtime/agent/lease.ts agentLeaseName(): the one Lease each agent may write (FO-3). */
export const AGENT_LEASE_NAME_PREFIX = 'juneau-agent-';

/** A ServiceAccount, a ClusterRole of `rules` and the binding between them, all named `name`. */
function serviceAccountWithClusterRole(name: string, ns: string, rules: object[]): KubeObject[] {
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

const containerImage = (o: Required<JuneauInstallOptions>, component: Component) => {
  const image = resolveImage({ ...o.image, ...o[component].image }, PACKAGE_VERSION);
  return { image: imageReference(image), imagePullPolicy: image.pullPolicy };
};
const restrictedContainerSecurity = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};
const httpProbe = (path: string, port: string, host?: string) => ({
  httpGet: { path, port, ...(host ? { host } : {}) },
  periodSeconds: 10,
  failureThreshold: 3,
});

/**
 * The host's bpffs directory given to the agent: only its own, never all of /sys/fs/bpf (other
 * programs' pins stay out of reach). The kubelet creates it (DirectoryOrCreate) — which works only
 * where the host has bpffs mounted on /sys/fs/bpf (systemd does at boot; elsewhere
 * `mount -t bpf bpf /sys/fs/bpf`): /sys itself is sysfs, where mkdir fails, and the agent cannot
 * mount bpffs without CAP_SYS_ADMIN. The container sees it at /sys/fs/bpf (a sysfs directory that
 * always exists, so the runtime can mount onto it under a read-only /sys), and the agent keeps its
 * pins in `<bpffs>/juneau` as everywhere: on the host, /sys/fs/bpf/juneau/juneau.
 */
export const AGENT_HOST_BPFFS_DIR = '/sys/fs/bpf/juneau';

/**
 * The agent's capabilities, each used (checked on Linux 6.18 by running the agent with exactly
 * these in the e2e rig, test/e2e/processes.ts):
 * - BPF: create the maps, load the program, pin and open pins (bpf(2)).
 * - NET_ADMIN: load an XDP program (a networking program type needs CAP_NET_ADMIN beside
 *   CAP_BPF) and attach it to the interface over netlink.
 * Not PERFMON: the verifier accepts the responder without it (it only relaxes pointer-leak and
 * Spectre checks the program does not trip). Not SYS_RESOURCE: since Linux 5.11 BPF memory is
 * charged to the memory cgroup, not RLIMIT_MEMLOCK, and libbpf then leaves the rlimit alone; many
 * runtimes cannot grant it anyway. Not SYS_ADMIN: the agent finds its attached program through its
 * pin, not by id (runtime/agent/bpf/responder.ts attachedProgram).
 * - NET_RAW: the AF_PACKET socket of FO-1's probes and announcements
 *   (runtime/agent/announce/packet-socket.ts); opened only for a network with
 *   `spec.arp.announceOnMove`, so with the default nothing uses it.
 */
export const AGENT_CAPABILITIES = ['BPF', 'NET_ADMIN', 'NET_RAW'] as const;

/**
 * Where the agent's metrics and health listen: loopback. The agent shares the host's network
 * namespace, and the node's InternalIP (the pod IP of a hostNetwork pod) is on the external L2
 * network Juneau answers on (EN-12), so binding it or all addresses would expose them there. The
 * kubelet probes from the host's namespace, so `host: 127.0.0.1` in the probes reaches them.
 */
const AGENT_LISTEN_HOST = '127.0.0.1';

function controller(o: Required<JuneauInstallOptions>): KubeObject[] {
  const name = INSTALL.controllerName;
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(name, o.namespace),
      spec: {
        replicas: o.controllerReplicas,
        selector: { matchLabels: selector(name) },
        template: {
          metadata: { labels: labels(name) },
          spec: {
            serviceAccountName: name,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  {
                    weight: 100,
                    podAffinityTerm: {
                      topologyKey: 'kubernetes.io/hostname',
                      labelSelector: { matchLabels: selector(name) },
                    },
                  },
                ],
              },
            },
            ...podScheduling('controller', o.controller, o.imagePullSecrets),
            containers: [controllerContainer(o)],
            ...(o.certificates === 'cert-manager'
              ? { volumes: [{ name: 'webhook-cert', secret: { secretName: INSTALL.webhookCertSecretName } }] }
              : {}),
          },
        },
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(name, o.namespace),
      spec: { minAvailable: 1, selector: { matchLabels: selector(name) } },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(INSTALL.webhookServiceName, o.namespace, name),
      spec: {
        selector: selector(name),
        ports: [{ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }],
      },
    },
  ];
}

/** The controller's container: leader election, the webhook server, metrics and health on the pod's own address. */
function controllerContainer(o: Required<JuneauInstallOptions>): Record<string, unknown> {
  const p = INSTALL.ports;
  return {
    name: 'controller',
    ...containerImage(o, 'controller'),
    command: ['juneau-controller'],
    args: [
      '--leader-elect=true',
      `--leader-election-namespace=${o.namespace}`,
      // The pod's own address (downward API): the kubelet probes it and a scraper reaches it
      // on the pod network, never on a node's external L2 network. Brackets keep IPv6 valid.
      `--metrics-bind-address=[$(POD_IP)]:${p.controllerMetrics}`,
      `--health-probe-bind-address=[$(POD_IP)]:${p.controllerHealth}`,
      `--webhook-addr=:${p.webhook}`,
      `--webhook-certificates=${o.certificates}`,
      `--log-level=${o.logLevel}`,
    ],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ],
    ports: [
      { name: 'webhook', containerPort: p.webhook, protocol: 'TCP' },
      { name: 'metrics', containerPort: p.controllerMetrics, protocol: 'TCP' },
      { name: 'health', containerPort: p.controllerHealth, protocol: 'TCP' },
    ],
    livenessProbe: httpProbe('/healthz', 'health'),
    readinessProbe: httpProbe('/readyz', 'health'),
    resources: containerResources('controller', o.controller),
    securityContext: restrictedContainerSecurity,
    ...(o.certificates === 'cert-manager'
      ? { volumeMounts: [{ name: 'webhook-cert', mountPath: '/var/run/juneau/webhook', readOnly: true }] }
      : {}),
  };
}

/**
 * The ValidatingWebhookConfiguration of api/webhooks.ts (the controller registers the same list
 * outside a cluster), plus, with cert-manager, the Issuer and Certificate of its serving certificate.
 */
function webhookConfiguration(o: Required<JuneauInstallOptions>): KubeObject[] {
  const annotations =
    o.certificates === 'cert-manager'
      ? { 'cert-manager.io/inject-ca-from': `${o.namespace}/${INSTALL.webhookCertSecretName}` }
      : undefined;
  const objects: KubeObject[] = [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: {
        ...meta(INSTALL.webhookConfigurationName, undefined, INSTALL.controllerName),
        ...(annotations ? { annotations } : {}),
      },
      webhooks: juneauWebhooks(o.namespace),
    },
  ];
  if (o.certificates === 'cert-manager') {
    objects.push(
      {
        apiVersion: 'cert-manager.io/v1',
        kind: 'Issuer',
        metadata: meta('juneau-selfsigned', o.namespace, INSTALL.controllerName),
        spec: { selfSigned: {} },
      },
      {
        apiVersion: 'cert-manager.io/v1',
        kind: 'Certificate',
        metadata: meta(INSTALL.webhookCertSecretName, o.namespace, INSTALL.controllerName),
        spec: {
          secretName: INSTALL.webhookCertSecretName,
          dnsNames: [
            `${INSTALL.webhookServiceName}.${o.namespace}.svc`,
            `${INSTALL.webhookServiceName}.${o.namespace}.svc.cluster.local`,
          ],
          issuerRef: { name: 'juneau-selfsigned', kind: 'Issuer' },
        },
      },
    );
  }
  return objects;
}

function agent(o: Required<JuneauInstallOptions>): KubeObject {
  const name = INSTALL.agentName;
  const p = INSTALL.ports;
  const args = [
    `--metrics-bind-address=${AGENT_LISTEN_HOST}:${p.agentMetrics}`,
    `--health-probe-bind-address=${AGENT_LISTEN_HOST}:${p.agentHealth}`,
    `--xdp-mode=${o.xdpMode}`,
    `--bpffs=${INSTALL.bpffsPath}`,
    `--log-level=${o.logLevel}`,
    `--owner-daemonset=${o.namespace}/${name}`,
  ];
  if (o.nodeIngressInterface) args.push(`--node-ingress-iface=${o.nodeIngressInterface}`);
  if (o.natPodInterfaces.length > 0) args.push(`--nat-pod-ifaces=${o.natPodInterfaces.join(',')}`);
  if (o.natClusterCidrs.length > 0) args.push(`--nat-cluster-cidrs=${o.natClusterCidrs.join(',')}`);
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: meta(name, o.namespace),
    spec: {
      selector: { matchLabels: selector(name) },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: labels(name) },
        spec: {
          serviceAccountName: name,
          // The agent attaches XDP to the node's own interface, so it lives in the host network namespace.
          hostNetwork: true,
          dnsPolicy: 'ClusterFirstWithHostNet',
          ...podScheduling('agent', o.agent, o.imagePullSecrets),
          containers: [
            {
              name: 'agent',
              ...containerImage(o, 'agent'),
              command: ['juneau-agent'],
              args,
              env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
              ports: [
                { name: 'metrics', containerPort: p.agentMetrics, protocol: 'TCP' },
                { name: 'health', containerPort: p.agentHealth, protocol: 'TCP' },
              ],
              livenessProbe: httpProbe('/healthz', 'health', AGENT_LISTEN_HOST),
              readinessProbe: httpProbe('/readyz', 'health', AGENT_LISTEN_HOST),
              resources: containerResources('agent', o.agent),
              // Not privileged: exactly the capabilities loading XDP and writing maps need (AGENT_CAPABILITIES).
              securityContext: {
                privileged: false,
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsUser: 0,
                capabilities: { drop: ['ALL'], add: [...AGENT_CAPABILITIES] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              // Programs and maps stay pinned in the host's bpffs, so answering survives agent restarts;
              // only the agent's own directory of it (AGENT_HOST_BPFFS_DIR).
              volumeMounts: [{ name: 'bpffs', mountPath: INSTALL.bpffsPath }],
            },
          ],
          volumes: [{ name: 'bpffs', hostPath: { path: AGENT_HOST_BPFFS_DIR, type: 'DirectoryOrCreate' } }],
        },
      },
    },
  };
}

/** Every object of a Juneau installation, in apply order (namespace and CRDs first). */
export function juneauInstallObjects(options: JuneauInstallOptions = {}): KubeObject[] {
  const o = resolveInstallOptions(options);
  const namespace: KubeObject = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: o.namespace, labels: { ...commonLabels, 'pod-security.kubernetes.io/enforce': 'privileged' } },
  };
  return [
    namespace,
    ...(o.includeCrds ? (allCustomResourceDefinitions() as KubeObject[]) : []),
    ...controllerRbac(o.namespace),
    ...agentRbac(o.namespace),
    ...controller(o),
    ...webhookConfiguration(o),
    agent(o),
  ].map((object) => withExtraLabels(object, o.labels));
}
