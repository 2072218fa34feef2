/**
 * The install's options: what a user may choose, the defaults filled in once
 * (resolveInstallOptions), and every problem collected at synth time (validateInstallOptions).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { INSTALL, XDP_MODES, type CertificateMode } from '../../../api';
import { issue, ValidationIssue, checkLabelName, parseAddressItem } from '../../../api/validation';
import { JuneauImageOptions, resolveImage, validateImage } from '../image';
import {
  checkImagePullSecrets,
  checkLabels,
  JuneauWorkloadOptions,
  RESERVED_LABELS,
  validateWorkloadOptions,
} from './pods';
import { validateMonitoringOptions, type JuneauMonitoringOptions } from './monitoring';

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
  readonly certificates?: CertificateMode;
  /**
   * The interface agents answer ARP on; empty means the interface holding the Node's InternalIP (EN-12).
   * @default the InternalIP's interface
   */
  readonly nodeIngressInterface?: string;
  /**
   * XDP attach mode of the agents.
   * @default 'auto' (native, falling back to generic)
   */
  readonly xdpMode?: (typeof XDP_MODES)[number];
  /**
   * Devices through which each node routes to its pods, named instead of found: the agent rewrites
   * an ElasticIP pod's source address as packets enter them, before netfilter (no CNI masquerade
   * wins, NAT-2; no conntrack entry, NAT-4; the agent's `--nat-pod-ifaces`). When set, exactly
   * these devices are used on every node.
   * @default none: each agent finds the devices its Running pods' addresses are routed through (a
   * CNI bridge such as `cni0`, or one veth per pod) and follows them; set it where it reports pods
   * it cannot find a device for (`juneau_agent_nat_pods_undetected`: pods routed through a gateway
   * or the ingress interface)
   * @see docs/elastic-ip-attachment.md "The Pod side"
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
   * The source prefixes of the API servers' calls to the webhooks (M1): with any, a NetworkPolicy
   * lets only them reach the controller pods' webhook port (9443), and keeps the metrics and health
   * ports open to all. Kubernetes has no selector for the API server, so name its addresses as the
   * CNI sees them (the control-plane nodes' addresses, or a konnectivity agent's pod range);
   * policies are enforced only by a CNI that implements them. Give the prefixes of every API
   * server: a call from another source is dropped, and the webhooks fail closed.
   * @default none (no NetworkPolicy: any pod can reach 9443)
   */
  readonly webhookNetworkPolicy?: readonly string[];
  /**
   * Send inbound ElasticIP traffic, once translated, through each node's kernel forwarding, so
   * that netfilter sees it: NetworkPolicy (an iptables- or nftables-based CNI policy such as
   * Calico's, kube-router's), host firewall rules and conntrack apply to the pods' ElasticIP
   * traffic (the agent's `--nat-kernel-forward`). Without it the agent sends each packet straight
   * to the pod's device, which is faster, and NetworkPolicy is bypassed for ElasticIP traffic.
   * @default false
   */
  readonly natKernelForward?: boolean;
  /**
   * Run BIRD 2, BGP mode's daemon (docs/bgp.md), in its own container of every agent Pod, with an
   * init container writing its starting configuration (no peers, nothing exported) into
   * `/run/juneau/bgp` on the node; the agent configures it there (`--bgp-dir`, runtime/agent/bgp)
   * and gets the RBAC for it (constructs/shared/install/agent-bgp.ts). Off by default: even with no
   * BGPPeer it costs every node an idle BIRD and its requests, five more watches per agent, and
   * every agent `get` on the install namespace's Secrets (docs/bgp.md "Turning it on").
   * @default false
   */
  readonly bgpDaemon?: boolean;
  /**
   * Install the chained CNI plugin `juneau-cni` on every node (CNI-1..CNI-3, docs/cni.md): the
   * agent copies it into `cniBinDir` and appends it to the active conflist of `cniConfDir`, and
   * removes both on uninstall. Without it a pod that holds an ElasticIP directly gets no address
   * inside it, and is not held back while its NetworkInterface waits (EIP-13).
   * @default true
   */
  readonly cniPlugin?: boolean;
  /**
   * The nodes' CNI bin dir (the container runtime's `bin_dir`), absolute.
   * @default '/opt/cni/bin'
   */
  readonly cniBinDir?: string;
  /**
   * The nodes' CNI conf dir (the container runtime's `conf_dir`), absolute.
   * @default '/etc/cni/net.d'
   */
  readonly cniConfDir?: string;
  /**
   * Scraping by a cluster's Prometheus (docs/metrics.md): ServiceMonitors, a PrometheusRule with
   * Juneau's alerts, and ServiceAccounts bound to the shipped `juneau-metrics-reader` ClusterRole.
   * The metrics Services and the role are always installed.
   * @default none of the Prometheus Operator objects
   */
  readonly monitoring?: JuneauMonitoringOptions;
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
export const PACKAGE_VERSION = packageVersion();
export const commonLabels = { 'app.kubernetes.io/part-of': 'juneau', 'app.kubernetes.io/version': PACKAGE_VERSION };

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
    webhookNetworkPolicy: o.webhookNetworkPolicy ?? [],
    natKernelForward: o.natKernelForward ?? false,
    bgpDaemon: o.bgpDaemon ?? false,
    cniPlugin: o.cniPlugin ?? true,
    cniBinDir: o.cniBinDir ?? '/opt/cni/bin',
    cniConfDir: o.cniConfDir ?? '/etc/cni/net.d',
    monitoring: o.monitoring ?? {},
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
  if (!(XDP_MODES as readonly string[]).includes(r.xdpMode))
    issues.push(issue('xdpMode', r.xdpMode, `must be ${orList(XDP_MODES)}`));
  r.natPodInterfaces.forEach((name, i) => {
    if (!INTERFACE_NAME.test(name))
      issues.push(issue(`natPodInterfaces[${i}]`, name, 'is not a Linux interface name (1-15 characters)'));
  });
  for (const field of ['natClusterCidrs', 'webhookNetworkPolicy'] as const)
    r[field].forEach((cidr, i) => {
      const parsed = cidr.includes('/')
        ? parseAddressItem(cidr)
        : { ok: false as const, reason: 'is not an IPv4 CIDR (a.b.c.d/n)' };
      if (!parsed.ok) issues.push(issue(`${field}[${i}]`, cidr, parsed.reason));
    });
  for (const field of ['cniBinDir', 'cniConfDir'] as const)
    if (!/^\/[^\0]*$/.test(r[field]) || r[field].split('/').includes('..'))
      issues.push(issue(field, r[field], 'must be an absolute path without ".."'));
  issues.push(...validateMonitoringOptions(o.monitoring));
  issues.push(...checkImagePullSecrets(o.imagePullSecrets), ...checkLabels('labels', o.labels, RESERVED_LABELS));
  const image = (field: string, i: JuneauImageOptions | undefined) =>
    validateImage(i === undefined ? undefined : { ...o.image, ...i }, PACKAGE_VERSION, field);
  issues.push(
    ...validateWorkloadOptions('controller', o.controller, image),
    ...validateWorkloadOptions('agent', o.agent, image),
  );
  return issues;
}

/** `a, b or c`. */
const orList = (words: readonly string[]) => `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
