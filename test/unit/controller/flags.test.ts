import { DEFAULT_FLAGS, HELP, parseFlags, type ControllerFlags } from '../../../runtime/controller/flags';
import { main } from '../../../runtime/controller/main';

describe('juneau-controller flags', () => {
  it('defaults: in-cluster, leader election on, :8080 metrics, :8081 health', () => {
    expect(parseFlags([])).toEqual({ help: false, flags: DEFAULT_FLAGS });
    expect(parseFlags([], { POD_NAMESPACE: 'kube-juneau' })).toMatchObject({
      flags: { leaderElectionNamespace: 'kube-juneau' },
    });
  });

  it('parses --flag value and --flag=value, and --leader-elect=false or --no-leader-elect', () => {
    // One row a flag: its arguments and the field they set; given together, they set all of them.
    const given: Array<[string[], Partial<ControllerFlags>]> = [
      [['--kubeconfig', '/k'], { kubeconfig: '/k' }],
      [['--leader-elect=false'], { leaderElect: false }],
      [['--metrics-addr=:9090'], { metricsAddr: ':9090' }],
      [['--health-addr', '127.0.0.1:9091'], { healthAddr: '127.0.0.1:9091' }],
      [['--leader-election-namespace=x'], { leaderElectionNamespace: 'x' }],
      [['--workers=8'], { workers: 8 }],
    ];
    expect(parseFlags(given.flatMap(([argv]) => argv))).toEqual({
      help: false,
      flags: Object.assign({ ...DEFAULT_FLAGS }, ...given.map(([, set]) => set)),
    });
    expect(parseFlags(['--no-leader-elect'])).toEqual(parseFlags(['--leader-elect=false']));
    expect(parseFlags(['--leader-elect'])).toEqual(parseFlags([]));
  });

  it('errors name the flag and the value', () => {
    expect(() => parseFlags(['--leader-elect=maybe'])).toThrow("--leader-elect must be true or false, not 'maybe'");
    expect(() => parseFlags(['--nope'])).toThrow('unknown flag --nope');
    expect(() => parseFlags(['--kubeconfig'])).toThrow('--kubeconfig needs a value');
    expect(() => parseFlags(['--workers=0'])).toThrow("--workers must be a positive integer, not '0'");
    expect(() => parseFlags(['--webhook-certificates=vault'])).toThrow(
      "--webhook-certificates must be self-managed or cert-manager, not 'vault'",
    );
    expect(() => parseFlags(['--no-leader-elect=true'])).toThrow("--no-leader-elect takes no value, got 'true'");
  });

  it('--help tells the truth: every flag the parser accepts is documented, with its default', () => {
    expect(parseFlags(['--help'])).toEqual({ help: true });
    for (const flag of [
      '--kubeconfig',
      '--leader-elect',
      '--leader-election-namespace',
      '--leader-election-id',
      '--metrics-addr',
      '--health-addr',
      '--log-level',
      '--workers',
    ]) {
      expect(HELP).toContain(flag);
      if (flag !== '--leader-elect')
        expect(() => parseFlags([`${flag}=x`.replace('=x', flag === '--workers' ? '=1' : '=x')])).not.toThrow();
    }
    expect(HELP).toContain('(default 127.0.0.1:8080;');
    expect(HELP).toContain('(default 127.0.0.1:8081;');
    expect(HELP).toContain('4096-16777215');
  });

  it('main(--help) prints the help and exits 0; a bad flag exits 2 with the message', async () => {
    let out = '';
    let err = '';
    const io = {
      stdout: (t: string) => (out += t),
      stderr: (t: string) => (err += t),
      env: {},
      stopSignal: new Promise<string>(() => undefined),
    };
    expect(await main(['--help'], io)).toBe(0);
    expect(out).toBe(HELP);
    expect(await main(['--log-level=loud'], io)).toBe(2);
    expect(err).toContain("log level 'loud' is not one of");
  });
});
