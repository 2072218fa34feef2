// The one command-line tokenizer (runtime/kube/flags.ts) and how both binaries' parsers consume it.
// It replaced a loop each parser had: these pin what that loop did, so a change to the tokenizer
// (a value taken too eagerly, a boolean eating the next argument, help found inside a value) shows
// up here in both binaries at once, not as a controller or agent started with the wrong settings.
import { parseAgentFlags } from '../../runtime/agent/flags';
import { parseFlags } from '../../runtime/controller/flags';
import { flagArgs, type FlagArg } from '../../runtime/kube/flags';

/** The flags as the parser sees them, each taking its value when `takes` names it. */
function tokens(argv: readonly string[], takes: readonly string[] = []): Array<string | object> {
  const out: Array<string | object> = [];
  for (const flag of flagArgs(argv, { old: 'new' })) {
    if (flag === 'help') out.push('help');
    else {
      const { given, name, inline }: FlagArg = flag;
      out.push({ given, name, inline, value: takes.includes(name) ? flag.value() : 'not asked' });
    }
  }
  return out;
}

describe('flagArgs', () => {
  it('--flag=value is inline; --flag value consumes the next argument only when the parser asks', () => {
    expect(tokens(['--a=1', '--b', '2'], ['a', 'b'])).toEqual([
      { given: 'a', name: 'a', inline: '1', value: '1' },
      { given: 'b', name: 'b', inline: undefined, value: '2' },
    ]);
    // A boolean (never asked) leaves the next argument to be read on its own.
    expect(() => tokens(['--b', '2'])).toThrow("unexpected argument '2' (see --help)");
  });

  it('a value is taken as it is, even one that looks like a flag or like --help', () => {
    expect(tokens(['--a', '--help', '--b', '-h'], ['a', 'b'])).toEqual([
      { given: 'a', name: 'a', inline: undefined, value: '--help' },
      { given: 'b', name: 'b', inline: undefined, value: '-h' },
    ]);
  });

  it('an empty inline value is a value; a missing one is undefined', () => {
    expect(tokens(['--a=', '--b'], ['a', 'b'])).toEqual([
      { given: 'a', name: 'a', inline: '', value: '' },
      { given: 'b', name: 'b', inline: undefined, value: undefined },
    ]);
  });

  it('aliases: the old name as given, the new one as the name', () => {
    expect(tokens(['--old=x'], ['new'])).toEqual([{ given: 'old', name: 'new', inline: 'x', value: 'x' }]);
  });

  it('-h/--help ends the flags where it stands; what comes before is still read', () => {
    expect(tokens(['--a=1', '-h', 'positional'])).toEqual([
      { given: 'a', name: 'a', inline: '1', value: 'not asked' },
      'help',
    ]);
    expect(() => tokens(['positional', '--help'])).toThrow("unexpected argument 'positional'");
  });

  it.each(['-x', '--Upper', 'a=b', '--', '-'])('%j is not a flag', (arg) => {
    expect(() => tokens([arg])).toThrow(`unexpected argument '${arg}' (see --help)`);
  });
});

// The same argument lists through both parsers: the tokenizer is theirs in common.
describe.each([
  ['juneau-controller', (argv: string[]) => parseFlags(argv, {}), 'leader-elect', 'leaderElect'],
  ['juneau-agent', (argv: string[]) => parseAgentFlags(argv, { NODE_NAME: 'n' }), 'guard', 'guard'],
])('%s consumes arguments as the tokenizer says', (_binary, parse, boolean, booleanField) => {
  const flags = (argv: string[]) => {
    const parsed = parse(argv);
    if (parsed.help) throw new Error('help');
    return parsed.flags as unknown as Record<string, unknown>;
  };

  it('--flag value and --flag=value set the same value; the value may look like a flag', () => {
    expect(flags([`--kubeconfig`, '/k']).kubeconfig).toBe('/k');
    expect(flags([`--kubeconfig=/k`]).kubeconfig).toBe('/k');
    expect(flags([`--kubeconfig`, '--help']).kubeconfig).toBe('--help');
  });

  it('a valued flag at the end needs its value', () => {
    expect(() => parse([`--kubeconfig`])).toThrow(`--kubeconfig needs a value`);
  });

  it('a boolean never takes the next argument: --bool false is an error, --bool=false is false', () => {
    expect(() => parse([`--${boolean}`, 'false'])).toThrow("unexpected argument 'false'");
    expect(flags([`--${boolean}=false`, `--kubeconfig=/k`])).toMatchObject({ [booleanField]: false, kubeconfig: '/k' });
  });

  it('--help wins only where it stands as a flag of its own', () => {
    expect(parse([`--${boolean}`, '--help'])).toEqual({ help: true });
    expect(parse([`--kubeconfig=--help`])).toMatchObject({ help: false });
    expect(() => parse(['--frobnicate', '--help'])).toThrow('unknown flag --frobnicate');
  });

  it('the old names are aliases, and errors name the flag as written', () => {
    expect(flags(['--metrics-addr', ':1'])).toMatchObject({ metricsAddr: ':1' });
    expect(flags(['--health-addr=:2'])).toMatchObject({ healthAddr: ':2' });
    expect(() => parse(['--metrics-addr'])).toThrow('--metrics-addr needs a value');
  });
});
