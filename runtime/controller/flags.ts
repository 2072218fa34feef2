/** `juneau-controller` command-line flags, parsed purely so `--help` and errors are testable. */
import { CERTIFICATE_MODES, CONTROLLER_FLAGS, type CertificateMode } from '../../api/constants';
import { validateTimings } from '../kube/leader-election';
import { duration, oneOf, readFlags, METRICS_SECURE_HELP, type FlagTable } from '../kube/flags';

export interface ControllerFlags {
  readonly kubeconfig: string | undefined;
  readonly leaderElect: boolean;
  readonly leaderElectionNamespace: string;
  readonly leaderElectionId: string;
  readonly metricsAddr: string;
  /** HTTPS, and only callers the API server authorizes for `get /metrics` (kube/metrics-auth.ts). */
  readonly metricsSecure: boolean;
  /** tls.crt/tls.key of the metrics listener; undefined: self-signed at start. */
  readonly metricsCertDir: string | undefined;
  readonly healthAddr: string;
  readonly logLevel: string;
  readonly logFormat: string;
  readonly workers: number;
  readonly webhookAddr: string | undefined;
  readonly webhookUrlBase: string | undefined;
  readonly webhookCertificates: CertificateMode;
  readonly webhookCertDir: string | undefined;
  /** Leader election (FO): the Lease's duration, the leader's renew deadline, the retry period. */
  readonly leaderElectionLeaseDurationMs: number;
  readonly leaderElectionRenewDeadlineMs: number;
  readonly leaderElectionRetryPeriodMs: number;
  /** FO-3: added to each agent Lease's own duration before its node counts as dead. */
  readonly agentLeaseGraceMs: number;
}

export const DEFAULT_FLAGS: ControllerFlags = {
  kubeconfig: undefined,
  leaderElect: true,
  leaderElectionNamespace: 'juneau-system',
  leaderElectionId: 'juneau-controller',
  // Loopback unless told otherwise: the install manifest passes the pod's own IP (downward API),
  // so nothing listens on a node's external network by default.
  metricsAddr: '127.0.0.1:8080',
  metricsSecure: true,
  metricsCertDir: undefined,
  healthAddr: '127.0.0.1:8081',
  logLevel: 'info',
  logFormat: 'json',
  workers: 4,
  webhookAddr: undefined,
  webhookUrlBase: undefined,
  webhookCertificates: 'self-managed',
  webhookCertDir: undefined,
  leaderElectionLeaseDurationMs: 15_000,
  leaderElectionRenewDeadlineMs: 10_000,
  leaderElectionRetryPeriodMs: 2_000,
  agentLeaseGraceMs: 0,
};

export const HELP = `Usage: juneau-controller [flags]

Runs the Juneau controller: allocates external IPv4 addresses (AllocationClaims) for
LoadBalancer Services of class juneau.loutres.me/load-balancer, keeps their
ServiceLoadBalancers and ARPAdvertisements, gives ExternalNetworks their networkID
from the subnet-vni AllocationPool (creating it with 4096-16777215 when absent), and
reports AddressPool size and use. Exits 0 on SIGTERM/SIGINT after releasing the Lease.

Flags:
  --kubeconfig PATH                  kubeconfig file (default: $KUBECONFIG if set, else
                                     the in-cluster service account, else ~/.kube/config)
  --leader-elect, --no-leader-elect  elect one active replica with a coordination.k8s.io
                                     Lease (default true)
  --leader-election-namespace NS     namespace of the Lease (default $POD_NAMESPACE, else
                                     juneau-system); while it does not exist the log says
                                     so once and the controller keeps trying
  --leader-election-id NAME          name of the Lease (default juneau-controller)
  --leader-election-lease-duration DURATION
                                     how long a standby waits, after it last saw the
                                     leader's Lease change, before it takes over: it
                                     watches the Lease and tries again at that instant, so
                                     a killed leader is replaced about this long after its
                                     last renewal (a stopped one releases the Lease: its
                                     standby leads within a watch event).
                                     Shorter: faster takeover; too short: a leader slowed
                                     by a loaded API server is replaced while it still
                                     works (it steps down first, so never two leaders)
                                     (default 15s)
  --leader-election-renew-deadline DURATION
                                     the leader steps down when it could not renew for this
                                     long; below the lease duration (default 10s)
  --leader-election-retry-period DURATION
                                     how often the leader renews and standbys retry (at a
                                     random point of 1-2.2 x this, sooner when the Lease
                                     expires or is released); the renew deadline must
                                     exceed 1.2 x this (default 2s)
  --agent-lease-grace DURATION       FO-3: a node counts as dead when its agent's Lease
                                     (juneau-agent-<node>) has not been seen renewed for
                                     the Lease's own duration (the agent's
                                     --lease-duration, 10s by default) plus this. Longer:
                                     fewer handovers when the API server is slow to write
                                     renewals; shorter: a dead node is replaced sooner.
                                     Never below 0, so a node is never judged dead before
                                     its answers expired (FO-4) (default 0s)
  --metrics-bind-address HOST:PORT   /metrics listener, '0' to disable; ':PORT' listens on
                                     every address (default 127.0.0.1:8080; the install
                                     manifest passes [$(POD_IP)]:8080). Alias: --metrics-addr
${METRICS_SECURE_HELP}
  --health-probe-bind-address HOST:PORT
                                     /healthz and /readyz listener, '0' to disable
                                     (default 127.0.0.1:8081; the manifest: [$(POD_IP)]:8081).
                                     Alias: --health-addr
  --log-level LEVEL                  debug, info, warn or error (default info)
  --log-format FORMAT                json (one object a line) or text (default json)
  --workers N                        concurrent ServiceLoadBalancer reconciles (default 4)
  --webhook-addr HOST:PORT           admission webhook listener (default :9443; with
                                     --webhook-url-base, that URL's host:port). Every
                                     replica serves the webhooks, not only the leader.
  --webhook-url-base URL             outside a cluster (development, tests): serve at this
                                     https://HOST:PORT and register the webhooks by URL with
                                     the controller's own CA. Outside a cluster without it, no
                                     webhooks are served or registered (the log says so).
  --webhook-certificates SOURCE      self-managed (default: a CA and serving certificate kept
                                     in Secret juneau-webhook-cert, rotated, caBundle patched)
                                     or cert-manager (read from --webhook-cert-dir)
  --webhook-cert-dir DIR             tls.crt/tls.key in cert-manager mode
                                     (default /var/run/juneau/webhook)
  --version                          print the version and exit
  -h, --help                         print this help and exit

A boolean flag is also written --FLAG=true or --FLAG=false. A DURATION is a number and a unit:
500ms, 1.5s, 5m.
`;

export type ParsedFlags = { readonly help: true } | { readonly help: false; readonly flags: ControllerFlags };

/** Leader election durations below 100 ms would renew faster than an API server answers. */
const LEADER_ELECTION = duration({ min: 100 });

/** Every flag: its name, the field it sets and how its value is read. */
export const CONTROLLER_FLAG_TABLE: FlagTable<ControllerFlags> = {
  kubeconfig: { field: 'kubeconfig' },
  [CONTROLLER_FLAGS.leaderElect]: { field: 'leaderElect', boolean: true },
  [CONTROLLER_FLAGS.leaderElectionNamespace]: { field: 'leaderElectionNamespace' },
  'leader-election-id': { field: 'leaderElectionId' },
  'leader-election-lease-duration': { field: 'leaderElectionLeaseDurationMs', read: LEADER_ELECTION },
  'leader-election-renew-deadline': { field: 'leaderElectionRenewDeadlineMs', read: LEADER_ELECTION },
  'leader-election-retry-period': { field: 'leaderElectionRetryPeriodMs', read: LEADER_ELECTION },
  // FO-3: 0s to 5m; a negative grace cannot be written, so FO-4 cannot be undone from here.
  'agent-lease-grace': { field: 'agentLeaseGraceMs', read: duration({ min: 0, max: 300_000 }) },
  [CONTROLLER_FLAGS.metricsBindAddress]: { field: 'metricsAddr' },
  'metrics-secure': { field: 'metricsSecure', boolean: true },
  'metrics-cert-dir': { field: 'metricsCertDir' },
  [CONTROLLER_FLAGS.healthProbeBindAddress]: { field: 'healthAddr' },
  [CONTROLLER_FLAGS.logLevel]: { field: 'logLevel' },
  'log-format': { field: 'logFormat' },
  workers: { field: 'workers', read: positiveInteger },
  [CONTROLLER_FLAGS.webhookAddr]: { field: 'webhookAddr' },
  'webhook-url-base': { field: 'webhookUrlBase' },
  [CONTROLLER_FLAGS.webhookCertificates]: { field: 'webhookCertificates', read: oneOf(CERTIFICATE_MODES) },
  'webhook-cert-dir': { field: 'webhookCertDir' },
};

/** The names flags had before they took controller-runtime's; still accepted. */
export const FLAG_ALIASES: Readonly<Record<string, string>> = {
  'metrics-addr': 'metrics-bind-address',
  'health-addr': 'health-probe-bind-address',
};

/** Parses the command line; an error names the flag and the bad value. */
export function parseFlags(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): ParsedFlags {
  const out: { -readonly [K in keyof ControllerFlags]: ControllerFlags[K] } = {
    ...DEFAULT_FLAGS,
    leaderElectionNamespace: env.POD_NAMESPACE || DEFAULT_FLAGS.leaderElectionNamespace,
  };
  if (readFlags(argv, CONTROLLER_FLAG_TABLE, FLAG_ALIASES, out)) return { help: true };
  try {
    validateTimings(
      out.leaderElectionLeaseDurationMs,
      out.leaderElectionRenewDeadlineMs,
      out.leaderElectionRetryPeriodMs,
    );
  } catch (err) {
    const flags = '--leader-election-lease-duration, --leader-election-renew-deadline, --leader-election-retry-period';
    throw new Error(`leader election flags: ${(err as Error).message} (${flags})`);
  }
  return { help: false, flags: out };
}

function positiveInteger(value: string, flag: string): number {
  if (!/^[1-9][0-9]*$/.test(value)) throw new Error(`${flag} must be a positive integer, not '${value}'`);
  return Number(value);
}
