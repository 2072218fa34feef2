/** `juneau-agent` command-line flags, parsed purely so `--help` and errors are testable. */
import { AGENT_FLAGS, INSTALL, XDP_MODES } from '../../api/constants';
import type { XdpModeRequest } from './bpf';
import { parseClusterCidrs } from './nat/prefixes';
import { NGW_PORT_RANGE } from './ngw/inputs';
import { orphanExpiries } from './bpf/layout/arp';
import { parseOwnerDaemonSet } from './liveness/uninstall';
import { duration, oneOf, optionalString, readFlags, METRICS_SECURE_HELP, type FlagTable } from '../kube/flags';

export interface AgentFlags {
  /** The Node this agent answers for. @default $NODE_NAME */
  readonly nodeName: string;
  /** @default undefined: the interface holding the Node's InternalIP (EN-12) */
  readonly nodeIngressIface: string | undefined;
  /** @default undefined: in-cluster, else KUBECONFIG / ~/.kube/config */
  readonly kubeconfig: string | undefined;
  readonly metricsAddr: string;
  /** HTTPS, and only callers the API server authorizes for `get /metrics` (kube/metrics-auth.ts). */
  readonly metricsSecure: boolean;
  /** tls.crt/tls.key of the metrics listener; undefined: self-signed at start. */
  readonly metricsCertDir: string | undefined;
  readonly healthAddr: string;
  readonly xdpMode: XdpModeRequest;
  /** The bpffs mount; pins live in `<bpffs>/juneau/v1` (runtime/agent/bpf/pins.ts). */
  readonly bpffs: string;
  readonly guard: boolean;
  readonly conflictDetection: boolean;
  readonly logLevel: string;
  /** json or text (runtime/kube/log.ts). */
  readonly logFormat: string;
  /** Detach the program on SIGTERM (development only: production keeps answering). */
  readonly detachOnExit: boolean;
  /** `NAMESPACE/NAME` of the agent's DaemonSet: a stop while it (or its namespace) is deleted
   * is an uninstall (runtime/agent/liveness/uninstall.ts). @default undefined: never */
  readonly ownerDaemonSet: string | undefined;
  /** How often the map's counters are read for conflicts and metrics, and the interface re-read. */
  readonly pollIntervalMs: number;
  /** Devices that route to the pods, comma-separated: tc_nat_pod on their ingress (runtime/agent/
   * nat/attach.ts). @default undefined: none, SNAT at the external interface's egress only */
  readonly natPodIfaces: string | undefined;
  /** In-cluster destination prefixes, comma-separated CIDRs, added to those the agent learns from
   * the Nodes and ServiceCIDRs (runtime/agent/nat/prefixes.ts): traffic to them keeps the pod
   * address (NAT-2). @default undefined: only what is learned */
  readonly natClusterCidrs: string | undefined;
  /** M2 of the security review: inbound ElasticIP packets, once translated, go through the kernel's
   * forwarding (netfilter, conntrack: NetworkPolicy and host firewalls apply) instead of straight
   * to the pod's device. @default false: NetworkPolicy is bypassed for ElasticIP traffic */
  readonly natKernelForward: boolean;
  /** FO-2: answers stop this long after the agent last proved its view current (a held address's,
   * SEC-11, only once the interface is orphaned). */
  readonly answerExpiryMs: number;
  /** SEC-16: this long after the agent last proved its view current, the node is taken to have
   * lost its agent for good: nothing answered, nothing guarded. 0: never. */
  readonly orphanAfterMs: number;
  /** FO-2: a watch silent this long (no event, no bookmark) is broken and relisted. */
  readonly watchIdleTimeoutMs: number;
  /** FO-3: namespace of the node's agent Lease; '' runs without one (development). */
  readonly leaseNamespace: string;
  /** FO-3: the Lease's leaseDurationSeconds: the controller moves this node's addresses when it has not seen a renewal for this long. */
  readonly leaseDurationMs: number;
  /** FO-3: how often the Lease is renewed. */
  readonly leaseRenewIntervalMs: number;
  /** SEC-4: the V8 heap limit of the NAT process, MiB. */
  readonly natMaxHeapMiB: number;
  /** SEC-4: this process is the agent's NAT child (runtime/agent/nat-process.ts). */
  readonly natChild: boolean;
  /** NGW-5: the source ports (ICMP: identifiers) a gateway node gives the flows it translates. */
  readonly ngwPortRange: { readonly min: number; readonly max: number };
  /** CNI-1: the node's CNI bin dir as the agent sees it; juneau-cni is copied there
   * (runtime/agent/cni/install.ts). @default undefined: the plugin is not installed */
  readonly cniBinDir: string | undefined;
  /** CNI-1: the node's CNI conf dir as the agent sees it; its active conflist chains juneau-cni. */
  readonly cniConfDir: string | undefined;
  /** CNI-1: the socket juneau-cni asks (`@name`: abstract, in the node's network namespace). */
  readonly cniSocket: string;
  /** BGP mode: BIRD's directory (its `bird.ctl` control socket and the `bird.conf` it was started
   * with): the agent drives BIRD there (runtime/agent/bgp/sync.ts). @default undefined: no BGP */
  readonly bgpDir: string | undefined;
}

export const DEFAULT_AGENT_FLAGS: AgentFlags = {
  nodeName: '',
  nodeIngressIface: undefined,
  kubeconfig: undefined,
  // Loopback: the agent runs in the host's network namespace, where every other address may be on
  // the external L2 network it answers on (constructs/shared/install/agent.ts AGENT_LISTEN_HOST).
  metricsAddr: `127.0.0.1:${INSTALL.ports.agentMetrics}`,
  metricsSecure: true,
  metricsCertDir: undefined,
  healthAddr: `127.0.0.1:${INSTALL.ports.agentHealth}`,
  xdpMode: 'auto',
  bpffs: INSTALL.bpffsPath,
  guard: true,
  conflictDetection: true,
  logLevel: 'info',
  logFormat: 'json',
  detachOnExit: false,
  ownerDaemonSet: undefined,
  pollIntervalMs: 5_000,
  natPodIfaces: undefined,
  natClusterCidrs: undefined,
  natKernelForward: false,
  answerExpiryMs: 10_000,
  orphanAfterMs: 3_600_000,
  watchIdleTimeoutMs: 90_000,
  leaseNamespace: INSTALL.namespace,
  // = answerExpiryMs: the node is silent from then on, so a longer Lease only delays its handover.
  leaseDurationMs: 10_000,
  leaseRenewIntervalMs: 2_000,
  natMaxHeapMiB: 96,
  natChild: false,
  ngwPortRange: NGW_PORT_RANGE,
  cniBinDir: undefined,
  cniConfDir: undefined,
  cniSocket: '@juneau-cni',
  bgpDir: undefined,
};

/**
 * FO-3: the documented profile for a node crash handed over in under 3 s end to end:
 * detection ~2 s, at 2 Lease writes a second per node (the default: ~10 s at 0.5 a second).
 */
export const FAST_FAILOVER_FLAGS: readonly string[] = [
  '--lease-duration=2s',
  '--lease-renew-interval=500ms',
  '--answer-expiry=2s',
];

export const AGENT_HELP = `Usage: juneau-agent [flags]

Runs on every node (a DaemonSet in the host network namespace). Loads the XDP ARP
responder onto the node's ingress interface and keeps the pinned eBPF map
external_arp_table equal to this node's ARPAdvertisements (ARP-10), so the node
answers ARP for exactly those addresses. Programs and maps stay pinned in
<bpffs>/juneau/v1: answering goes on while the agent restarts or upgrades, and a new
agent adopts and reconciles them. SIGTERM/SIGINT stop the agent and leave the
responder attached. No gratuitous ARP is sent (ARP-8) unless an ExternalNetwork
asks for it with spec.arp.announceOnMove (FO-1): then a node that gains one of its
addresses probes until no other host answers and sends two RFC 5227 announcements.
Answers expire with the agent (FO-2): the program stops answering (and keeps
guarding) when the agent has not proven its view current for --answer-expiry,
but for ElasticIP addresses, which no other node may take: those are
answered until the node is orphaned (--orphan-after), when the program stops
answering and guarding altogether.

Flags:
  --node-name NAME                   the Node this agent serves (default $NODE_NAME)
  --node-ingress-iface IFACE         interface to answer on (default: the interface
                                     holding the Node's InternalIP, EN-12); addresses
                                     outside its subnets are refused with an Event
  --kubeconfig PATH                  kubeconfig file (default: $KUBECONFIG if set, else
                                     the in-cluster service account, else ~/.kube/config)
  --metrics-bind-address HOST:PORT   /metrics listener, '0' to disable; ':PORT' listens on
                                     every address of the host, the external network's too
                                     (default 127.0.0.1:${INSTALL.ports.agentMetrics}). The install manifest
                                     passes [$(POD_IP)]:${INSTALL.ports.agentMetrics}, the node's address,
                                     served as --metrics-secure says. Alias: --metrics-addr
${METRICS_SECURE_HELP}
  --health-probe-bind-address HOST:PORT
                                     /healthz and /readyz listener, '0' to disable
                                     (default 127.0.0.1:${INSTALL.ports.agentHealth}). Alias: --health-addr
  --xdp-mode auto|native|generic     XDP attach mode; auto tries native, falls back to
                                     generic, and keeps the mode of a responder already
                                     attached; an explicit mode other than the attached
                                     one is refused (detach first) (default auto)
  --bpffs DIR                        bpffs mount, /sys/fs/bpf or a directory below it;
                                     pins go to DIR/juneau/v1 (default ${INSTALL.bpffsPath})
  --guard, --no-guard                drop ARP requests for addresses of arp AddressPools
                                     this node does not answer for, so a kernel holding
                                     them (kube-ipvs0) cannot answer (default on)
  --conflict-detection, --no-conflict-detection
                                     count ARP packets from another MAC claiming one of
                                     our addresses (RFC 5227 2.4); each is reported as a
                                     Warning Event and a metric (default on)
  --poll-interval DURATION           how often counters are read for conflicts and
                                     metrics, and the interface's addresses re-read,
                                     e.g. 5s or 500ms (default 5s)
  --answer-expiry DURATION           FO-2: the node stops answering ARP this long after
                                     the agent last proved its view of the API server
                                     current (synced, watches live); a restart shorter
                                     than this loses no answer. Shorter: a dead or cut-off
                                     agent's node falls silent sooner; longer: slower
                                     restarts survive. 10s covers a restart by the
                                     kubelet or a rolling update on a loaded node
                                     (default 10s). ElasticIP addresses, which FO-3
                                     never moves to another node, are answered on
                                     until --orphan-after: an API-server outage or a
                                     slow image pull during an upgrade silences only
                                     ServiceLoadBalancer VIPs, which FO-3 moves to a
                                     live node. Pre-pull the agent image before an
                                     upgrade to keep them on their node
  --orphan-after DURATION            this long without a proof (e.g. 90m), the
                                     agent is taken to be gone for good (uninstalled
                                     while the node was down, its pod force-deleted):
                                     the node answers nothing and guards nothing, as
                                     if Juneau were not installed; rounded up to whole
                                     --answer-expiry periods, more than twice it, at
                                     most 65535 of them; 0: never (default 60m)
  --watch-idle-timeout DURATION      FO-2: a watch that delivers nothing, not even a
                                     bookmark, this long is broken and is relisted; the
                                     API server sends a bookmark about once a minute
                                     (default 90s)
  --lease-namespace NAMESPACE        FO-3: where the node's Lease juneau-agent-<node>
                                     lives; '' runs without one (development only: the
                                     heartbeat then needs only current watches); the
                                     BGPPeers' password Secrets are read there too
                                     (default $POD_NAMESPACE, else ${INSTALL.namespace})
  --lease-duration DURATION          FO-3: the Lease's duration: the controller moves this
                                     node's addresses when it has not seen a renewal for
                                     this long, so a crashed node is handed over after
                                     about this long. At least --answer-expiry, so the
                                     node has stopped answering before another starts
                                     (FO-4); any longer than it only adds time in which
                                     nobody answers (default 10s, = --answer-expiry)
  --lease-renew-interval DURATION    FO-3: how often the Lease is renewed: one API write
                                     per node per interval (and one watch event to the
                                     controller). Each renewal moves the FO-2 heartbeat,
                                     so at most half of --answer-expiry (default 2s:
                                     0.5 writes/s per node, 500/s for 1000 nodes).
                                     Trade-off: a crash is detected in about
                                     --lease-duration, at 1/--lease-renew-interval API
                                     writes per node. For a crash handed over in under
                                     3 s (2 writes/s per node; a restart or an API
                                     server stall over 2 s then moves the node's
                                     addresses):
                                       ${FAST_FAILOVER_FLAGS.join(' ')}
  --detach-on-exit, --no-detach-on-exit
                                     detach the responder on SIGTERM/SIGINT; for
                                     development only: the node stops answering
                                     (default off)
  --owner-daemonset NAMESPACE/NAME   the DaemonSet running this agent: a stop while it
                                     or its namespace is being deleted (an uninstall)
                                     detaches the responder and removes the pins; a
                                     restart or a rolling update keeps them (default:
                                     none, never)
  --nat-pod-ifaces IFACE[,IFACE]     devices that route to the pods, named instead of
                                     found: ElasticIP SNAT happens as packets enter them,
                                     before netfilter (default: found from where this
                                     node's Running pods are routed, and followed)
  --nat-cluster-cidrs CIDR[,CIDR]    prefixes added to the in-cluster destinations, to
                                     which traffic from a pod with an ElasticIP keeps the
                                     pod address (NAT-2). The agent learns the rest from
                                     the API and follows it: every Node's spec.podCIDRs
                                     and InternalIP/ExternalIP, and the ServiceCIDRs
                                     (Kubernetes 1.33+). Name here a pod range the CNI
                                     does not record on the Nodes (Calico IPAM, Cilium
                                     cluster-pool) and, before 1.33, the Service range
                                     (default: none, only what is learned)
  --nat-kernel-forward, --no-nat-kernel-forward
                                     inbound ElasticIP traffic, once translated, goes
                                     through the kernel's forwarding: netfilter,
                                     conntrack, NetworkPolicy and host firewall rules
                                     apply to it. Without it the packet is sent straight
                                     to the pod's device and NetworkPolicy is bypassed
                                     (default off)
  --nat-max-heap MIB                  the ElasticIP NAT loop runs in a child process of
                                     the agent with this V8 heap limit, so that running
                                     out of memory (oversized objects in its caches)
                                     ends that process only, never ARP answering; it is
                                     restarted with backoff, and the NAT maps keep
                                     translating meanwhile. Keep it and the agent's own
                                     heap (about 60 MiB) under the container's memory
                                     limit (default 96)
  --ngw-port-range MIN-MAX           NGW-5: the source ports (ICMP: identifiers) a
                                     NATGateway's gateway node gives the flows it
                                     translates, inclusive; a new flow finds none free
                                     per destination: it is dropped (default ${NGW_PORT_RANGE.min}-${NGW_PORT_RANGE.max})
  --nat-child, --no-nat-child        internal: run as the agent's NAT process (the agent
                                     starts it so, with its own flags)
  --cni-bin-dir DIR                  CNI-1: the node's CNI bin dir (a hostPath): the
                                     agent copies juneau-cni there, and removes it on
                                     uninstall (default: none, the plugin is not
                                     installed)
  --cni-conf-dir DIR                 CNI-1: the node's CNI conf dir: the agent chains
                                     juneau-cni into its active conflist, and takes it
                                     out on uninstall; with --cni-bin-dir or not at all
  --cni-socket SOCKET                the socket juneau-cni asks; @NAME is an abstract
                                     socket in the node's network namespace (default
                                     @juneau-cni)
  --bgp-dir DIR                      BGP mode: the directory of BIRD's control socket
                                     bird.ctl and of the bird.conf it was started with;
                                     the agent configures BIRD there and reports its
                                     sessions in the node's BGPNodeState (default none:
                                     no BGP)
  --log-level LEVEL                  debug, info, warn or error (default info)
  --log-format FORMAT                json (one object a line) or text (default json)
  --version                          print the version and exit
  -h, --help                         print this help and exit

A boolean flag is also written --FLAG=true or --FLAG=false. A DURATION is a number and a unit:
500ms, 1.5s, 5m.
`;

export type ParsedAgentFlags = { readonly help: true } | { readonly help: false; readonly flags: AgentFlags };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A heap size in MiB: a whole number, at least 16 (V8 cannot start in less). */
function mebibytes(value: string, flag: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 16)
    throw new Error(`${flag} must be a whole number of MiB, at least 16, not '${value}'`);
  return n;
}

/** NGW-5: `MIN-MAX`, ports 1-65535, MIN <= MAX. */
function portRange(value: string, flag: string): { min: number; max: number } {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(value);
  const [min, max] = m ? [Number(m[1]), Number(m[2])] : [0, 0];
  if (!m || min < 1 || max > 65535 || min > max)
    throw new Error(`${flag} must be MIN-MAX, ports within 1-65535 and MIN <= MAX, not '${value}'`);
  return { min, max };
}

/** Durations the agent counts in its own loops: 10 ms is below anything a loop can keep. */
const LOOP_DURATION = duration({ min: 10 });

/** Every flag: its name, the field it sets and how its value is read. An empty string value is
 * "not given" (the default applies; parseAgentFlags says where that is an error). */
export const AGENT_FLAG_TABLE: FlagTable<AgentFlags> = {
  'node-name': { field: 'nodeName', read: optionalString },
  [AGENT_FLAGS.nodeIngressIface]: { field: 'nodeIngressIface', read: optionalString },
  kubeconfig: { field: 'kubeconfig', read: optionalString },
  [AGENT_FLAGS.metricsBindAddress]: { field: 'metricsAddr', read: optionalString },
  'metrics-secure': { field: 'metricsSecure', boolean: true },
  'metrics-cert-dir': { field: 'metricsCertDir', read: optionalString },
  [AGENT_FLAGS.healthProbeBindAddress]: { field: 'healthAddr', read: optionalString },
  [AGENT_FLAGS.xdpMode]: { field: 'xdpMode', read: oneOf(XDP_MODES) },
  [AGENT_FLAGS.bpffs]: { field: 'bpffs', read: optionalString },
  guard: { field: 'guard', boolean: true },
  'conflict-detection': { field: 'conflictDetection', boolean: true },
  'poll-interval': { field: 'pollIntervalMs', read: LOOP_DURATION },
  // FO-2: the heartbeat is checked five times per expiry (runtime/agent/liveness/heartbeat.ts); an expiry
  // below 500 ms would expire answers on a single slow event-loop turn of a loaded node.
  'answer-expiry': { field: 'answerExpiryMs', read: duration({ min: 500 }) },
  'orphan-after': { field: 'orphanAfterMs', read: duration({ min: 0 }) },
  'watch-idle-timeout': { field: 'watchIdleTimeoutMs', read: duration({ min: 1_000 }) },
  'lease-namespace': { field: 'leaseNamespace', read: optionalString },
  'lease-duration': { field: 'leaseDurationMs', read: LOOP_DURATION },
  'lease-renew-interval': { field: 'leaseRenewIntervalMs', read: LOOP_DURATION },
  'detach-on-exit': { field: 'detachOnExit', boolean: true },
  [AGENT_FLAGS.ownerDaemonSet]: { field: 'ownerDaemonSet', read: optionalString },
  [AGENT_FLAGS.natPodIfaces]: { field: 'natPodIfaces', read: optionalString },
  [AGENT_FLAGS.natClusterCidrs]: { field: 'natClusterCidrs', read: optionalString },
  [AGENT_FLAGS.natKernelForward]: { field: 'natKernelForward', boolean: true },
  [AGENT_FLAGS.logLevel]: { field: 'logLevel', read: optionalString },
  'log-format': { field: 'logFormat', read: optionalString },
  'nat-max-heap': { field: 'natMaxHeapMiB', read: mebibytes },
  'nat-child': { field: 'natChild', boolean: true },
  'ngw-port-range': { field: 'ngwPortRange', read: portRange },
  [AGENT_FLAGS.cniBinDir]: { field: 'cniBinDir', read: optionalString },
  [AGENT_FLAGS.cniConfDir]: { field: 'cniConfDir', read: optionalString },
  'cni-socket': { field: 'cniSocket', read: optionalString },
  [AGENT_FLAGS.bgpDir]: { field: 'bgpDir', read: optionalString },
};

/** The names flags had before they took controller-runtime's; still accepted. */
export const AGENT_FLAG_ALIASES: Readonly<Record<string, string>> = {
  'metrics-addr': AGENT_FLAGS.metricsBindAddress,
  'health-addr': AGENT_FLAGS.healthProbeBindAddress,
};

/** Parses the command line; an error names the flag and the bad value. */
export function parseAgentFlags(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): ParsedAgentFlags {
  // FO-3, BGP-1: the install namespace (the agent's own, by the downward API) holds its Lease and
  // the BGPPeers' password Secrets, as the controller's Lease (its --leader-election-namespace).
  const out: Mutable<AgentFlags> = {
    ...DEFAULT_AGENT_FLAGS,
    nodeName: env.NODE_NAME ?? '',
    leaseNamespace: env.POD_NAMESPACE || DEFAULT_AGENT_FLAGS.leaseNamespace,
  };
  if (readFlags(argv, AGENT_FLAG_TABLE, AGENT_FLAG_ALIASES, out)) return { help: true };
  if (!out.nodeName) throw new Error('the node name is unknown: pass --node-name or set NODE_NAME');
  if (!out.bpffs) throw new Error('--bpffs must name a directory');
  if (!out.metricsAddr) out.metricsAddr = DEFAULT_AGENT_FLAGS.metricsAddr;
  if (!out.healthAddr) out.healthAddr = DEFAULT_AGENT_FLAGS.healthAddr;
  if (!out.logLevel) out.logLevel = DEFAULT_AGENT_FLAGS.logLevel;
  if (!out.logFormat) out.logFormat = DEFAULT_AGENT_FLAGS.logFormat;
  if (out.ownerDaemonSet) parseOwnerDaemonSet(out.ownerDaemonSet);
  parseClusterCidrs(out.natClusterCidrs);
  if (!out.cniBinDir !== !out.cniConfDir)
    throw new Error('--cni-bin-dir and --cni-conf-dir go together: give both or neither');
  if (!out.cniSocket) out.cniSocket = DEFAULT_AGENT_FLAGS.cniSocket;
  if (out.leaseNamespace === undefined) out.leaseNamespace = '';
  checkExpiryFlags(out);
  return { help: false, flags: out };
}

/** FO-2/FO-4: the timings that bound each other. */
function checkExpiryFlags(flags: AgentFlags): void {
  if (flags.orphanAfterMs > 0 && flags.orphanAfterMs <= flags.answerExpiryMs * 2)
    throw new Error(
      `--orphan-after (${flags.orphanAfterMs}ms) must be 0 (never) or more than twice --answer-expiry (${flags.answerExpiryMs}ms): a node is orphaned only long after its answers expired`,
    );
  orphanExpiries(flags.orphanAfterMs, flags.answerExpiryMs);
  if (!flags.leaseNamespace) return;
  if (flags.leaseRenewIntervalMs * 2 > flags.answerExpiryMs) {
    throw new Error(
      `--lease-renew-interval (${flags.leaseRenewIntervalMs}ms) must be at most half of --answer-expiry (${flags.answerExpiryMs}ms): each renewal moves the heartbeat, and one late renewal must not expire the answers`,
    );
  }
  if (flags.answerExpiryMs > flags.leaseDurationMs) {
    throw new Error(
      `--answer-expiry (${flags.answerExpiryMs}ms) must not exceed --lease-duration (${flags.leaseDurationMs}ms): the node must stop answering before the controller gives its addresses to another (FO-4)`,
    );
  }
  if (flags.leaseDurationMs % 1000 !== 0)
    throw new Error(`--lease-duration must be whole seconds (a Lease counts seconds), not ${flags.leaseDurationMs}ms`);
}
