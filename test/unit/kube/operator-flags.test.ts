// Operator ergonomics of juneau-controller and juneau-agent: controller-runtime's flag names with
// the old ones kept as aliases, --help truthful about both (it names exactly the flags that parse),
// --log-format json|text through the one logger, --version, and the install manifest passing the
// new names.
import {
  AGENT_FLAG_ALIASES,
  AGENT_FLAG_TABLE,
  AGENT_HELP,
  DEFAULT_AGENT_FLAGS,
  parseAgentFlags,
} from '../../../runtime/agent/flags';
import {
  CONTROLLER_FLAG_TABLE,
  DEFAULT_FLAGS,
  FLAG_ALIASES,
  HELP,
  parseFlags,
} from '../../../runtime/controller/flags';
import type { FlagTable } from '../../../runtime/kube/flags';
import { AGENT_FLAGS, CONTROLLER_FLAGS } from '../../../api/constants';
import { leaseProblem } from '../../../runtime/controller/lease-report';
import { main as controllerMain } from '../../../runtime/controller/main';
import { createLogger, parseLogFormat } from '../../../runtime/kube/log';
import { KubeApiError } from '../../../runtime/kube/rest';
import { describeStartupError } from '../../../runtime/kube/startup-errors';
import { UNBUNDLED_VERSION, packageVersion, wantsVersion } from '../../../runtime/kube/version';
import { juneauInstallObjects } from '../../../constructs/shared/install';

const clock = () => new Date('2026-01-02T03:04:05.000Z');

describe('controller-runtime flag names, old names as aliases', () => {
  it('controller: --metrics-bind-address and --health-probe-bind-address, and --metrics-addr/--health-addr mean the same', () => {
    const canonical = parseFlags(['--metrics-bind-address=:9090', '--health-probe-bind-address', '127.0.0.1:9091']);
    const old = parseFlags(['--metrics-addr=:9090', '--health-addr', '127.0.0.1:9091']);
    expect(canonical).toEqual({
      help: false,
      flags: { ...DEFAULT_FLAGS, metricsAddr: ':9090', healthAddr: '127.0.0.1:9091' },
    });
    expect(old).toEqual(canonical);
    expect(() => parseFlags(['--metrics-addr'])).toThrow('--metrics-addr needs a value');
  });

  it('agent: the same names and aliases', () => {
    const env = { NODE_NAME: 'n' };
    const canonical = parseAgentFlags(
      ['--metrics-bind-address=127.0.0.1:1', '--health-probe-bind-address=127.0.0.1:2'],
      env,
    );
    expect(canonical).toEqual({
      help: false,
      flags: { ...DEFAULT_AGENT_FLAGS, nodeName: 'n', metricsAddr: '127.0.0.1:1', healthAddr: '127.0.0.1:2' },
    });
    expect(parseAgentFlags(['--metrics-addr=127.0.0.1:1', '--health-addr=127.0.0.1:2'], env)).toEqual(canonical);
  });

  it('--help names every new flag and says which old name is its alias', () => {
    for (const [help, aliases] of [
      [HELP, FLAG_ALIASES],
      [AGENT_HELP, AGENT_FLAG_ALIASES],
    ] as const) {
      for (const [alias, name] of Object.entries(aliases)) {
        const entry = help.slice(
          help.indexOf(`  --${name} `),
          help.indexOf(`Alias: --${alias}`) + `Alias: --${alias}`.length,
        );
        // The alias is written inside the entry of its flag, not under another one.
        expect(entry.startsWith(`  --${name} `)).toBe(true);
        expect(entry.split('\n  --').length).toBe(1);
      }
      expect(help).toContain('--log-format FORMAT');
      expect(help).toContain('--version');
    }
  });

  // Each binary's help against its flag table: every entry and every flag a description mentions
  // parses, and every flag that parses (its --no- form, its alias) has an entry.
  describe.each([
    [
      'juneau-controller',
      HELP,
      CONTROLLER_FLAG_TABLE as FlagTable<never>,
      FLAG_ALIASES,
      (argv: string[]) => parseFlags(argv),
      // --agent-lease-grace explains itself by the agent's flag.
      { 'lease-duration': AGENT_FLAG_TABLE },
    ],
    [
      'juneau-agent',
      AGENT_HELP,
      AGENT_FLAG_TABLE as FlagTable<never>,
      AGENT_FLAG_ALIASES,
      (argv: string[]) => parseAgentFlags(argv, { NODE_NAME: 'n' }),
      {},
    ],
  ])('%s --help', (_binary, help, table: FlagTable<never>, aliases, parse, otherBinary: Record<string, object>) => {
    const entries = [
      ...help.matchAll(/^ {2}(?:-h, )?--([a-z-]+)(?:, --([a-z-]+))?/gm),
      ...help.matchAll(/Alias: --([a-z-]+)/g),
    ].flatMap((m) => m.slice(1).filter((name): name is string => name !== undefined));
    const parses = [
      ...Object.entries(table).flatMap(([name, spec]) => (spec.boolean ? [name, `no-${name}`] : [name])),
      ...Object.keys(aliases),
      'help',
      'version',
    ];

    it('has an entry for exactly the flags that parse', () => {
      expect([...entries].sort()).toEqual([...parses].sort());
    });

    it('mentions no flag that does not parse', () => {
      const mentioned = new Set([...help.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]));
      for (const name of mentioned) {
        if (otherBinary[name]) expect(otherBinary[name]).toHaveProperty([name]);
        else expect(parses).toContain(name);
      }
    });

    it('each entry is a flag the parser knows (whatever its value)', () => {
      for (const name of entries.filter((n) => n !== 'version')) {
        let message = '';
        try {
          parse([`--${name}=1s`]);
        } catch (err) {
          message = (err as Error).message;
        }
        expect(message).not.toMatch(/unknown flag/);
      }
    });
  });

  it("the flag names the install renders (api/constants.ts) are the binaries' own", () => {
    for (const name of Object.values(AGENT_FLAGS)) expect(AGENT_FLAG_TABLE).toHaveProperty([name]);
    for (const name of Object.values(CONTROLLER_FLAGS)) expect(CONTROLLER_FLAG_TABLE).toHaveProperty([name]);
  });

  it('the install manifest passes the new names, and both binaries parse its command lines', () => {
    const containers = juneauInstallObjects().flatMap(
      (o) =>
        (o.spec as { template?: { spec?: { containers?: Array<{ name: string; args?: string[] }> } } } | undefined)
          ?.template?.spec?.containers ?? [],
    );
    // Juneau's two daemons; the agent Pod's bird container runs BIRD, which has flags of its own.
    const args = Object.fromEntries(containers.filter((c) => c.name !== 'bird').map((c) => [c.name, c.args ?? []]));
    for (const list of Object.values(args)) {
      expect(list.some((a) => a.startsWith('--metrics-bind-address='))).toBe(true);
      expect(list.some((a) => a.startsWith('--health-probe-bind-address='))).toBe(true);
      expect(list.some((a) => /^--(metrics|health)-addr=/.test(a))).toBe(false);
    }
    expect(() => parseAgentFlags(args.agent, { NODE_NAME: 'n' })).not.toThrow();
    expect(() => parseFlags(args.controller)).not.toThrow();
  });
});

describe('--log-format', () => {
  it('parses json and text; a bad value names itself and the allowed ones', () => {
    expect(parseLogFormat('json')).toBe('json');
    expect(parseLogFormat('text')).toBe('text');
    expect(() => parseLogFormat('yaml')).toThrow("log format 'yaml' is not one of json, text");
    expect(parseFlags(['--log-format=text'])).toMatchObject({ flags: { logFormat: 'text' } });
    expect(parseAgentFlags(['--log-format', 'text'], { NODE_NAME: 'n' })).toMatchObject({
      flags: { logFormat: 'text' },
    });
  });

  it('text: one line, level and component first, fields as key=value, newlines escaped; json unchanged', () => {
    const lines: string[] = [];
    const text = createLogger({ component: 'controller', format: 'text', clock, sink: (l) => lines.push(l) });
    text.child({ key: 'ns/a' }).error('cannot start:\nsecond line', { count: 2, why: 'two words', msg: 'forged' });
    const json = createLogger({ component: 'controller', clock, sink: (l) => lines.push(l) });
    json.info('started', { n: 1 });
    expect(lines).toEqual([
      '2026-01-02T03:04:05.000Z ERROR controller: cannot start:\\nsecond line key=ns/a count=2 why="two words"',
      '{"ts":"2026-01-02T03:04:05.000Z","level":"info","component":"controller","msg":"started","n":1}',
    ]);
  });

  it('main refuses a bad --log-format with exit 2 and one line', async () => {
    let err = '';
    const io = {
      stdout: () => undefined,
      stderr: (t: string) => (err += t),
      env: {},
      stopSignal: new Promise<string>(() => undefined),
    };
    expect(await controllerMain(['--log-format=xml'], io)).toBe(2);
    expect(err).toBe("juneau-controller: log format 'xml' is not one of json, text\n");
  });
});

describe('--version', () => {
  // The bundled binaries print the package's (test/cluster/operator-startup.test.ts runs them).
  it('unbundled, says so; asked for anywhere before --', () => {
    expect(packageVersion()).toBe(UNBUNDLED_VERSION);
    expect(wantsVersion(['--log-level=debug', '--version'])).toBe(true);
    expect(wantsVersion(['--', '--version'])).toBe(false);
    expect(wantsVersion([])).toBe(false);
  });
});

describe('startup errors are one line naming the problem', () => {
  const server = 'https://127.0.0.1:6443';
  const sysError = (code: string, extra: Record<string, unknown> = {}) =>
    Object.assign(new Error(`${code} raw`), { code, ...extra });

  it('network, TLS, files and API answers', () => {
    expect(describeStartupError(sysError('ECONNREFUSED'), server)).toBe(
      `cannot reach the API server at ${server}: connection refused`,
    );
    expect(describeStartupError(sysError('ENOTFOUND', { hostname: 'api.example' }), 'https://api.example:6443')).toBe(
      'cannot reach the API server at https://api.example:6443: host name not found (api.example)',
    );
    expect(describeStartupError(sysError('ENOENT', { path: '/etc/k/ca.crt' }), server)).toBe(
      'file not found: /etc/k/ca.crt',
    );
    expect(describeStartupError(new Error('outer', { cause: sysError('ECONNREFUSED') }), server)).toBe(
      `cannot reach the API server at ${server}: connection refused`,
    );
    expect(
      describeStartupError(new KubeApiError(401, 'Unauthorized', 'POST /x: 401 Unauthorized', {}), server),
    ).toContain('refused the credentials (401 Unauthorized)');
    expect(describeStartupError(sysError('DEPTH_ZERO_SELF_SIGNED_CERT'), server)).toContain(
      "TLS: DEPTH_ZERO_SELF_SIGNED_CERT raw (check the kubeconfig's certificate-authority)",
    );
    expect(describeStartupError(new Error('a\nb'))).toBe('a b');
  });

  it('a Lease in a namespace that does not exist says which namespace and what to do', () => {
    const lease = { namespace: 'juneau-system', name: 'juneau-controller', server };
    const notFound = new KubeApiError(
      404,
      'NotFound',
      'POST /apis/coordination.k8s.io/v1/namespaces/juneau-system/leases: 404 NotFound namespaces "juneau-system" not found',
      {},
    );
    expect(leaseProblem(notFound, lease)).toBe(
      'cannot take the Lease: namespace "juneau-system" does not exist; create it (the install manifest does) or pass --leader-election-namespace; reconciling nothing until then, retrying',
    );
    expect(leaseProblem(sysError('ECONNREFUSED'), lease)).toBe(
      `cannot take the Lease juneau-system/juneau-controller: cannot reach the API server at ${server}: connection refused; retrying`,
    );
  });
});
