// juneau-agent flags: the install manifest's command line parses, defaults are the documented ones,
// errors name the flag and the bad value, and --help tells the truth about the defaults.
import { AGENT_HELP, DEFAULT_AGENT_FLAGS, parseAgentFlags } from '../../../runtime/agent/flags';
import { INSTALL } from '../../../api/constants';

const env = { NODE_NAME: 'node-a' };

describe('juneau-agent flags', () => {
  test('the install manifest command line (constructs/shared/install/agent.ts) parses', () => {
    const parsed = parseAgentFlags(
      [
        '--metrics-addr=127.0.0.1:9201',
        '--health-addr=127.0.0.1:9202',
        '--xdp-mode=auto',
        '--bpffs=/sys/fs/bpf',
        '--log-level=info',
        '--node-ingress-iface=bond0',
      ],
      env,
    );
    expect(parsed).toEqual({
      help: false,
      flags: { ...DEFAULT_AGENT_FLAGS, nodeName: 'node-a', nodeIngressIface: 'bond0' },
    });
  });

  test('defaults: ports and bpffs of the install manifest, protections on, no detach, 5 s poll', () => {
    // The documented defaults, spelled out on the command line, change nothing.
    const documented = [
      `--metrics-bind-address=127.0.0.1:${INSTALL.ports.agentMetrics}`,
      `--health-probe-bind-address=127.0.0.1:${INSTALL.ports.agentHealth}`,
      '--xdp-mode=auto',
      `--bpffs=${INSTALL.bpffsPath}`,
      '--guard',
      '--conflict-detection',
      '--detach-on-exit=false',
      '--poll-interval=5s',
      // Empty is none: in-cluster, and the interface holding the Node's InternalIP.
      '--kubeconfig=',
      '--node-ingress-iface=',
    ];
    expect(parseAgentFlags([], env)).toEqual(parseAgentFlags(documented, env));
    expect(parseAgentFlags([], env)).toMatchObject({ flags: { nodeName: 'node-a', kubeconfig: undefined } });
  });

  test('--node-name wins over NODE_NAME; space-separated values work', () => {
    const parsed = parseAgentFlags(['--node-name', 'node-b', '--kubeconfig', '/k', '--xdp-mode', 'generic'], env);
    expect(parsed).toMatchObject({ help: false, flags: { nodeName: 'node-b', kubeconfig: '/k', xdpMode: 'generic' } });
  });

  test.each([
    [['--no-guard'], { guard: false }],
    [['--guard=false'], { guard: false }],
    [['--no-guard', '--guard'], { guard: true }],
    [['--no-conflict-detection'], { conflictDetection: false }],
    [['--conflict-detection=true'], { conflictDetection: true }],
    [['--detach-on-exit'], { detachOnExit: true }],
    [['--detach-on-exit', '--no-detach-on-exit'], { detachOnExit: false }],
    [['--poll-interval=250ms'], { pollIntervalMs: 250 }],
    [['--poll-interval', '2s'], { pollIntervalMs: 2000 }],
  ])('boolean and duration flags: %j', (argv, expected) => {
    expect(parseAgentFlags(argv, env)).toMatchObject({ help: false, flags: expected });
  });

  test.each([
    [['--xdp-mode=offload'], "--xdp-mode must be auto, native or generic, not 'offload'"],
    [['--guard=maybe'], "--guard must be true or false, not 'maybe'"],
    [['--no-guard=true'], "--no-guard takes no value, got 'true'"],
    [['--bpffs'], '--bpffs needs a value'],
    [['--frobnicate'], 'unknown flag --frobnicate'],
    [['positional'], "unexpected argument 'positional'"],
    [['--poll-interval=5'], "--poll-interval must be a duration such as 500ms, 5s or 1m, not '5'"],
    [['--poll-interval=5ms'], "--poll-interval must be at least 10ms, not '5ms'"],
    [['--answer-expiry=200ms'], "--answer-expiry must be at least 500ms, not '200ms'"],
    [['--watch-idle-timeout=0.5s'], "--watch-idle-timeout must be at least 1s, not '0.5s'"],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseAgentFlags(argv, env)).toThrow(message);
  });

  test('without --node-name or NODE_NAME the agent cannot know its node', () => {
    expect(() => parseAgentFlags([], {})).toThrow('pass --node-name or set NODE_NAME');
  });

  test('--help wins, even without a node name', () => {
    expect(parseAgentFlags(['--no-guard', '--help'], {})).toEqual({ help: true });
    expect(parseAgentFlags(['-h'], {})).toEqual({ help: true });
  });

  test('--help names every flag the parser accepts and the real defaults', () => {
    for (const flag of [
      '--node-name',
      '--node-ingress-iface',
      '--kubeconfig',
      '--metrics-addr',
      '--health-addr',
      '--xdp-mode',
      '--bpffs',
      '--guard',
      '--no-guard',
      '--conflict-detection',
      '--no-conflict-detection',
      '--poll-interval',
      '--detach-on-exit',
      '--log-level',
    ]) {
      expect(AGENT_HELP).toContain(flag);
    }
    expect(AGENT_HELP).toContain(`(default 127.0.0.1:${INSTALL.ports.agentMetrics})`);
    expect(AGENT_HELP).toContain(`(default 127.0.0.1:${INSTALL.ports.agentHealth})`);
    expect(AGENT_HELP).toContain(`(default ${INSTALL.bpffsPath})`);
    expect(AGENT_HELP).toContain('(default 5s)');
  });

  test('NGW-5: --ngw-port-range is MIN-MAX within 1-65535; the help says its default', () => {
    expect(parseAgentFlags(['--ngw-port-range=40000-40001'], env)).toMatchObject({
      flags: { ngwPortRange: { min: 40000, max: 40001 } },
    });
    for (const bad of ['5-4', '0-10', '1-65536', '100', 'a-b'])
      expect(() => parseAgentFlags([`--ngw-port-range=${bad}`], env)).toThrow(
        `--ngw-port-range must be MIN-MAX, ports within 1-65535 and MIN <= MAX, not '${bad}'`,
      );
    expect(AGENT_HELP).toContain('--ngw-port-range MIN-MAX');
    expect(AGENT_HELP).toContain('(default 1024-65535)');
    expect(DEFAULT_AGENT_FLAGS.ngwPortRange).toEqual({ min: 1024, max: 65535 });
  });

  test('durations: the one syntax (runtime/kube/flags.ts parseDuration)', () => {
    expect(parseAgentFlags(['--poll-interval=1m'], env)).toMatchObject({ flags: { pollIntervalMs: 60_000 } });
    expect(parseAgentFlags(['--poll-interval=1.5s'], env)).toMatchObject({ flags: { pollIntervalMs: 1500 } });
  });

  test('FO-3, BGP-1: the Lease and the BGP password Secrets are in $POD_NAMESPACE (the install sets it), --lease-namespace wins', () => {
    expect(parseAgentFlags([], { ...env, POD_NAMESPACE: 'kube-juneau' })).toMatchObject({
      flags: { leaseNamespace: 'kube-juneau' },
    });
    expect(parseAgentFlags(['--lease-namespace=other'], { ...env, POD_NAMESPACE: 'kube-juneau' })).toMatchObject({
      flags: { leaseNamespace: 'other' },
    });
    expect(parseAgentFlags([], env)).toMatchObject({ flags: { leaseNamespace: INSTALL.namespace } });
  });
});
