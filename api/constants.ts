/** API group of every Juneau kind. */
export const GROUP = 'juneau.loutres.me';
/** No seed names a version; v1alpha1 until the shapes settle (SPEC preamble). */
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** `spec.loadBalancerClass` of the Services Juneau serves (SLB-1). */
export const LOAD_BALANCER_CLASS = `${GROUP}/load-balancer`;

/** Annotations users write (EIP-4, SLB-2, NIC-1). */
export const ANNOTATIONS = {
  /** On a Service: the ExternalNetwork its VIP comes from (SLB-2). */
  loadBalancerExternalNetwork: `${GROUP}/load-balancer-external-network`,
  /** On a Service: the VIP it asks for; must lie in one of the network's pools (SLB-2). */
  loadBalancerRequestedIP: `${GROUP}/load-balancer-requested-ip`,
  /** On a Pod: the ElasticIP its `eth0` holds directly (EIP-4 shorthand). */
  elasticIP: `${GROUP}/elastic-ip`,
  /** On a Pod: JSON list of `{interface, elasticIP?}` (NIC-1, EIP-4). */
  networks: `${GROUP}/networks`,
} as const;

/**
 * Labels on ARPAdvertisements saying which object keeps them, so a change maps back to it
 * (written and read by runtime/controller/arp/names.ts; the agent reads `kind` for an address's
 * expiry class, SEC-11). `name` is absent when the name is longer than a label value may be; `id`
 * (a hash of kind/namespace/name) always selects the owner's objects.
 */
export const OWNER_LABELS = {
  kind: `${GROUP}/owner-kind`,
  namespace: `${GROUP}/owner-namespace`,
  name: `${GROUP}/owner-name`,
  id: `${GROUP}/owner-id`,
} as const;

/** Finalizers the controller puts on objects whose deletion must release something (ARP-6, EIP-15). */
export const FINALIZERS = {
  elasticIP: `${GROUP}/elastic-ip`,
  serviceLoadBalancer: `${GROUP}/service-load-balancer`,
  natGateway: `${GROUP}/nat-gateway`,
} as const;

/** One server-side-apply field manager per component, so managedFields show who owns what
 * (runtime/kube/apply.ts FieldManagers). */
export const FIELD_MANAGERS = {
  controller: 'juneau-controller',
  agent: 'juneau-agent',
} as const;

/**
 * FO-3: the Lease each agent renews for its node, `<namePrefix><node>`, labelled so the controller
 * watches only these: the agent writes it (runtime/agent/liveness/lease.ts), the controller reads it
 * (runtime/controller/nodes/agent-leases.ts), and the install's ValidatingAdmissionPolicy lets an
 * agent write its own node's only (constructs/shared/install/rbac.ts).
 */
export const AGENT_LEASE = {
  namePrefix: 'juneau-agent-',
  label: { key: `${GROUP}/agent-lease`, value: 'true' },
} as const;

/** The agent's `--xdp-mode` values and the install's `xdpMode`: auto tries native, then generic. */
export const XDP_MODES = ['auto', 'native', 'generic'] as const;

/** Who issues the webhook's serving certificate: the controller's `--webhook-certificates` and the
 * install's `certificates`. */
export const CERTIFICATE_MODES = ['self-managed', 'cert-manager'] as const;
export type CertificateMode = (typeof CERTIFICATE_MODES)[number];

/** The agent flags the install manifest passes (runtime/agent/flags.ts parses them). */
export const AGENT_FLAGS = {
  nodeIngressIface: 'node-ingress-iface',
  metricsBindAddress: 'metrics-bind-address',
  healthProbeBindAddress: 'health-probe-bind-address',
  xdpMode: 'xdp-mode',
  bpffs: 'bpffs',
  logLevel: 'log-level',
  ownerDaemonSet: 'owner-daemonset',
  natPodIfaces: 'nat-pod-ifaces',
  natClusterCidrs: 'nat-cluster-cidrs',
  natKernelForward: 'nat-kernel-forward',
  cniBinDir: 'cni-bin-dir',
  cniConfDir: 'cni-conf-dir',
  bgpDir: 'bgp-dir',
} as const;

/** The controller flags the install manifest passes (runtime/controller/flags.ts parses them). */
export const CONTROLLER_FLAGS = {
  leaderElect: 'leader-elect',
  leaderElectionNamespace: 'leader-election-namespace',
  metricsBindAddress: 'metrics-bind-address',
  healthProbeBindAddress: 'health-probe-bind-address',
  webhookAddr: 'webhook-addr',
  webhookCertificates: 'webhook-certificates',
  logLevel: 'log-level',
} as const;

/** The AllocationPool that ExternalNetwork VNIs come from (EN-7). */
export const SUBNET_VNI_POOL = 'subnet-vni';

/** Upper bounds shared by schemas and validation, so both say the same thing. */
export const LIMITS = {
  /** A DNS-1123 subdomain (object names). */
  nameLength: 253,
  /** An IPv4 address, a CIDR, or an `a-b` range: 15 + 1 + 15. */
  addressItemLength: 31,
  addressesPerPool: 64,
  poolsPerNetwork: 64,
  conditions: 16,
  ports: 128,
  nodes: 5000,
  messageLength: 32768,
  reasonLength: 1024,
} as const;

/** Names and ports the install manifest and the binaries agree on. */
export const INSTALL = {
  namespace: 'juneau-system',
  controllerName: 'juneau-controller',
  agentName: 'juneau-agent',
  webhookServiceName: 'juneau-webhook',
  webhookConfigurationName: 'juneau',
  webhookCertSecretName: 'juneau-webhook-cert',
  leaseName: 'juneau-controller',
  ports: { webhook: 9443, controllerMetrics: 8080, controllerHealth: 8081, agentMetrics: 9201, agentHealth: 9202 },
  bpffsPath: '/sys/fs/bpf',
} as const;

/** The admission webhook paths (cross-object rules only; per-field rules live in the CRDs' CEL). */
export const WEBHOOK_PATHS = {
  addressPool: '/validate/addresspool',
  externalNetwork: '/validate/externalnetwork',
  arpAdvertisement: '/validate/arpadvertisement',
  elasticIP: '/validate/elasticip',
  elasticIPAttachment: '/validate/elasticipattachment',
  pod: '/validate/pod',
  serviceLoadBalancer: '/validate/serviceloadbalancer',
  bgpPeer: '/validate/bgppeer',
  bgpAdvertisement: '/validate/bgpadvertisement',
  natGateway: '/validate/natgateway',
} as const;
