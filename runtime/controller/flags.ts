/** `juneau-controller` command-line flags, parsed purely so `--help` and errors are testable. */
import { validateTimings } from '../kube/leader-election';
import { flagArgs } from '../kube/flags';

export interface ControllerFlags {
  readonly kubeconfig: string | undefined;
  readonly leaderElect: boolean;
  readonly leaderElectionNamespace: string;
  readonly leaderElectionId: string;
  readonly metricsAddr: string;
  readonly healthAddr: string;
  readonly logLevel: string;
  readonly logFormat: string;
  readonly workers: number;
  readonly webhookAddr: string | undefined;
  readonly webhookUrlBase: string | undefined;
  readonly webhookCertificates: 'self-managed' | 'cert-manager';
  readonly webhookCertDir: string | undefined;
  /** Leader election (FO, issue 15 item 4): the Lease's duration, the leader's renew deadline, the retry period. */
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
  --leader-elect[=true|false]        elect one active replica with a coordination.k8s.io
                                     Lease (default true)
  --leader-election-namespace NS     namespace of the Lease (default $POD_NAMESPACE, else
                                     juneau-system); while it does not exist the log says
                                     so once and the controller keeps trying
  --leader-election-id NAME          name of the Lease (default juneau-controller)
  --leader-election-lease-duration DURATION
                                     how long a standby waits, after it last saw the
                                     leader's Lease change, before it takes over: a killed
                                     leader is replaced after about this plus up to 2.2 x
                                     the retry period (15s gives the measured 16-19 s).
                                     Shorter: faster takeover; too short: a leader slowed
                                     by a loaded API server is replaced while it still
                                     works (it steps down first, so never two leaders)
                                     (default 15s)
  --leader-election-renew-deadline DURATION
                                     the leader steps down when it could not renew for this
                                     long; below the lease duration (default 10s)
  --leader-election-retry-period DURATION
                                     how often the leader renews and standbys retry; the
                                     renew deadline must exceed 1.2 x this (default 2s)
  --agent-lease-grace DURATION       FO-3: a node counts as dead when its agent's Lease
                                     (juneau-agent-<node>) has not been seen renewed for
                                     the Lease's own duration (the agent's
                                     --lease-duration, 15s by default) plus this. Longer:
                                     fewer handovers when the API server is slow to write
                                     renewals; shorter: a dead node is replaced sooner.
                                     Never below 0, so a node is never judged dead before
                                     its answers expired (FO-4) (default 0s)
  --metrics-bind-address HOST:PORT   /metrics listener, '0' to disable; ':PORT' listens on
                                     every address (default 127.0.0.1:8080; the install
                                     manifest passes [$(POD_IP)]:8080). Alias: --metrics-addr
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
`;

export type ParsedFlags = { readonly help: true } | { readonly help: false; readonly flags: ControllerFlags };

const STRING_FLAGS: Record<string, keyof ControllerFlags> = {
  kubeconfig: 'kubeconfig',
  'leader-election-namespace': 'leaderElectionNamespace',
  'leader-election-id': 'leaderElectionId',
  'metrics-bind-address': 'metricsAddr',
  'health-probe-bind-address': 'healthAddr',
  'log-level': 'logLevel',
  'log-format': 'logFormat',
  workers: 'workers',
  'webhook-addr': 'webhookAddr',
  'webhook-url-base': 'webhookUrlBase',
  'webhook-certificates': 'webhookCertificates',
  'webhook-cert-dir': 'webhookCertDir',
};

/** The names flags had before they took controller-runtime's; still accepted. */
export const FLAG_ALIASES: Readonly<Record<string, string>> = {
  'metrics-addr': 'metrics-bind-address',
  'health-addr': 'health-probe-bind-address',
};

/** Parses `--flag value` and `--flag=value`; an error names the flag and the bad value. */
export function parseFlags(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): ParsedFlags {
  const out: { -readonly [K in keyof ControllerFlags]: ControllerFlags[K] } = {
    ...DEFAULT_FLAGS,
    leaderElectionNamespace: env.POD_NAMESPACE || DEFAULT_FLAGS.leaderElectionNamespace,
  };
  for (const flag of flagArgs(argv, FLAG_ALIASES)) {
    if (flag === 'help') return { help: true };
    const { given, name, inline } = flag;
    if (name === 'leader-elect') {
      if (inline !== undefined && inline !== 'true' && inline !== 'false')
        throw new Error(`--leader-elect must be true or false, not '${inline}'`);
      out.leaderElect = inline !== 'false';
      continue;
    }
    const duration = DURATION_FLAGS[name];
    if (duration) {
      const value = flag.value();
      if (value === undefined) throw new Error(`--${name} needs a value`);
      out[duration] = duration === 'agentLeaseGraceMs' ? parseGrace(value) : parseDuration(value, `--${name}`);
      continue;
    }
    const key = STRING_FLAGS[name];
    if (!key) throw new Error(`unknown flag --${given} (see --help)`);
    const value = flag.value();
    if (value === undefined) throw new Error(`--${given} needs a value`);
    if (key === 'workers') {
      if (!/^[1-9][0-9]*$/.test(value)) throw new Error(`--workers must be a positive integer, not '${value}'`);
      out.workers = Number(value);
    } else if (key === 'webhookCertificates') {
      if (value !== 'self-managed' && value !== 'cert-manager')
        throw new Error(`--webhook-certificates must be self-managed or cert-manager, not '${value}'`);
      out.webhookCertificates = value;
    } else {
      (out as Record<string, unknown>)[key] = value;
    }
  }
  try {
    validateTimings(
      out.leaderElectionLeaseDurationMs,
      out.leaderElectionRenewDeadlineMs,
      out.leaderElectionRetryPeriodMs,
    );
  } catch (err) {
    throw new Error(
      `leader election flags: ${(err as Error).message} (--leader-election-lease-duration, --leader-election-renew-deadline, --leader-election-retry-period)`,
    );
  }
  return { help: false, flags: out };
}

const DURATION_FLAGS: Record<
  string,
  | 'leaderElectionLeaseDurationMs'
  | 'leaderElectionRenewDeadlineMs'
  | 'leaderElectionRetryPeriodMs'
  | 'agentLeaseGraceMs'
> = {
  'agent-lease-grace': 'agentLeaseGraceMs',
  'leader-election-lease-duration': 'leaderElectionLeaseDurationMs',
  'leader-election-renew-deadline': 'leaderElectionRenewDeadlineMs',
  'leader-election-retry-period': 'leaderElectionRetryPeriodMs',
};

/** FO-3: `0s` to `5m`; a negative grace cannot be written, so FO-4 cannot be undone from here. */
function parseGrace(value: string): number {
  const ms = value === '0' ? 0 : /^0(ms|s|m)$/.test(value) ? 0 : parseDuration(value, '--agent-lease-grace');
  if (ms > 300_000) throw new Error(`--agent-lease-grace must be at most 5m, not '${value}'`);
  return ms;
}

/** `500ms`, `5s`, `1m` -> milliseconds (at least 100 ms). */
function parseDuration(value: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(value);
  const ms = match ? Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] as 'ms' | 's' | 'm'] : NaN;
  if (!(ms >= 100))
    throw new Error(`${flag} must be a duration of at least 100ms such as 500ms, 5s or 1m, not '${value}'`);
  return Math.round(ms);
}
