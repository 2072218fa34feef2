/** `juneau-controller` command-line flags, parsed purely so `--help` and errors are testable. */

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
export function parseFlags(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): ParsedFlags {
  const out: { -readonly [K in keyof ControllerFlags]: ControllerFlags[K] } = { ...DEFAULT_FLAGS, leaderElectionNamespace: env.POD_NAMESPACE || DEFAULT_FLAGS.leaderElectionNamespace };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') return { help: true };
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`unexpected argument '${arg}' (see --help)`);
    const [, given, inline] = match;
    const name = FLAG_ALIASES[given] ?? given;
    if (name === 'leader-elect') {
      if (inline !== undefined && inline !== 'true' && inline !== 'false') throw new Error(`--leader-elect must be true or false, not '${inline}'`);
      out.leaderElect = inline !== 'false';
      continue;
    }
    const key = STRING_FLAGS[name];
    if (!key) throw new Error(`unknown flag --${given} (see --help)`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`--${given} needs a value`);
    if (key === 'workers') {
      if (!/^[1-9][0-9]*$/.test(value)) throw new Error(`--workers must be a positive integer, not '${value}'`);
      out.workers = Number(value);
    } else if (key === 'webhookCertificates') {
      if (value !== 'self-managed' && value !== 'cert-manager') throw new Error(`--webhook-certificates must be self-managed or cert-manager, not '${value}'`);
      out.webhookCertificates = value;
    } else {
      (out as Record<string, unknown>)[key] = value;
    }
  }
  return { help: false, flags: out };
}
