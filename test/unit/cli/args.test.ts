// kubectl-juneau's command line: kubectl's standard flags anywhere, bpf's own flags passed on,
// --node only for bpf, and the exec it builds for --node (test/cluster/kubectl-juneau.test.ts runs it).
import { CLI_FLAG_TABLE, parseCommandLine } from '../../../runtime/cli/args';
import { CLI_HELP, main } from '../../../runtime/cli/main';
import { kubectlExecArgs } from '../../../runtime/cli/node-exec';
import { resolveKind } from '../../../runtime/cli/why';

describe('kubectl juneau command line', () => {
  it('kubectl flags anywhere: --kubeconfig, --context, -n/--namespace, -A', () => {
    expect(parseCommandLine(['--context=prod', 'status', '-n', 'web', '--kubeconfig', '/k'])).toEqual({
      command: 'status',
      output: 'table',
      kube: { kubeconfig: '/k', context: 'prod', namespace: 'web', allNamespaces: false },
    });
    expect(parseCommandLine(['status', '-A', '-o', 'json'])).toMatchObject({
      command: 'status',
      output: 'json',
      kube: { allNamespaces: true },
    });
    expect(parseCommandLine(['status', '-n=web', '--all-namespaces=false'])).toMatchObject({
      kube: { namespace: 'web', allNamespaces: false },
    });
    expect(parseCommandLine(['status', '-A', '--no-all-namespaces'])).toMatchObject({ kube: { allNamespaces: false } });
    expect(parseCommandLine(['why', 'eip/web', '--namespace=apps'])).toMatchObject({
      command: 'why',
      target: 'eip/web',
      kube: { namespace: 'apps' },
    });
  });

  it("bpf: --bpffs and -o go to the agent Pod's command line; --node and the kubectl flags stay out of it", () => {
    const line = parseCommandLine([
      'bpf',
      'dump',
      'external_arp_table',
      '--node',
      'n1',
      '--bpffs',
      '/sys/fs/bpf/x',
      '-o',
      'json',
      '--context',
      'c',
    ]);
    expect(line).toMatchObject({
      command: 'bpf',
      bpf: { words: 'bpf dump external_arp_table' },
      bpffs: '/sys/fs/bpf/x',
      output: 'json',
      rest: ['bpf', 'dump', 'external_arp_table', '--bpffs', '/sys/fs/bpf/x', '-o', 'json'],
      node: 'n1',
      kube: { kubeconfig: undefined, context: 'c', namespace: undefined, allNamespaces: false },
    });
    if (line.command !== 'bpf') throw new Error('bpf expected');
    // The agent Pod's kubectl-juneau reads that command line as this one does, without --node.
    expect(parseCommandLine(line.rest)).toMatchObject({ command: 'bpf', bpffs: '/sys/fs/bpf/x', output: 'json' });
    expect(parseCommandLine(['bpf', 'stats', '--node', 'n1'])).toMatchObject({ rest: ['bpf', 'stats'] });
    expect(kubectlExecArgs(line.kube, 'juneau-system', 'juneau-agent-x2', line.rest)).toEqual([
      '--context',
      'c',
      '-n',
      'juneau-system',
      'exec',
      'juneau-agent-x2',
      '-c',
      'agent',
      '--',
      'kubectl-juneau',
      'bpf',
      'dump',
      'external_arp_table',
      '--bpffs',
      '/sys/fs/bpf/x',
      '-o',
      'json',
    ]);
  });

  it('errors name the flag or the argument', () => {
    expect(() => parseCommandLine(['status', '--node', 'n1'])).toThrow(
      "--node applies to bpf commands only, not 'status'",
    );
    expect(() => parseCommandLine(['status', '-n'])).toThrow('-n needs a value');
    expect(() => parseCommandLine(['status', '--context='])).toThrow('--context needs a value');
    expect(() => parseCommandLine(['status', '-x'])).toThrow('unknown flag -x (see --help)');
    expect(() => parseCommandLine(['status', '--watch'])).toThrow('unknown flag --watch (see --help)');
    expect(() => parseCommandLine(['why', 'web'])).toThrow(
      "why takes one <kind>/<name> or one address, e.g. why elasticip/web or why 10.225.32.250 (got 'web')",
    );
    expect(() => parseCommandLine(['why', 'eip/web', '-A'])).toThrow('why explains one object: -A does not apply');
    expect(() => parseCommandLine(['frobnicate'])).toThrow("unknown command 'frobnicate'");
    expect(() => parseCommandLine(['status', '-o', 'yaml'])).toThrow("-o must be table or json, not 'yaml'");
  });

  it('why reads kinds as kubectl does: kind, singular, plural, short name; svc means its ServiceLoadBalancer', () => {
    for (const word of ['eip', 'elasticip', 'ElasticIP', 'elasticips'])
      expect(resolveKind(word)).toMatchObject({ type: { kind: 'ElasticIP', namespaced: true }, viaService: false });
    expect(resolveKind('slb').type.kind).toBe('ServiceLoadBalancer');
    expect(resolveKind('svc')).toMatchObject({ type: { kind: 'ServiceLoadBalancer' }, viaService: true });
    expect(resolveKind('ap').type).toMatchObject({ kind: 'AddressPool', namespaced: false });
    expect(() => resolveKind('pods')).toThrow("unknown kind 'pods'");
  });

  it('--help, --version and a bad flag through main; help lists every command and kubectl flag', async () => {
    let out = '';
    let err = '';
    const io = { stdout: (t: string) => (out += t), stderr: (t: string) => (err += t) };
    expect(await main(['--help'], io)).toBe(0);
    expect(out).toBe(CLI_HELP);
    for (const word of [
      'status',
      'why <kind>/<name>',
      'bpf dump external_arp_table',
      '--node NAME',
      '--kubeconfig',
      '--context',
      '-n, --namespace',
      '-A, --all-namespaces',
      '--version',
    ])
      expect(CLI_HELP).toContain(word);
    out = '';
    expect(await main(['--version'], io)).toBe(0);
    expect(out).toMatch(/^kubectl-juneau \S+\n$/);
    expect(await main(['status', '--nope'], io)).toBe(2);
    expect(err).toBe('kubectl-juneau: unknown flag --nope (see --help)\n');
  });

  it('--help has an entry for exactly the flags that parse, with their one-letter names', () => {
    const flags = CLI_HELP.slice(CLI_HELP.indexOf('\nFlags:\n'));
    const entries = [...flags.matchAll(/^ {2}(?:-([a-zA-Z]), )?--([a-z-]+)/gm)].map(([, short, name]) =>
      short ? `-${short}, --${name}` : `--${name}`,
    );
    const parses = [
      ...Object.entries(CLI_FLAG_TABLE).map(([name, spec]) => (spec.short ? `-${spec.short}, --${name}` : `--${name}`)),
      '--version',
      '-h, --help',
    ];
    expect(entries.sort()).toEqual(parses.sort());
  });
});
