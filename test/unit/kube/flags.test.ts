// The one command-line grammar (runtime/kube/flags.ts, over node:util parseArgs) and how both
// binaries' parsers consume it: a change to it (a value taken too eagerly, a boolean eating the next
// argument, help found inside a value) shows up here in both binaries at once, not as a controller
// or agent started with the wrong settings.
import { parseAgentFlags } from '../../../runtime/agent/flags';
import { parseFlags } from '../../../runtime/controller/flags';
import { duration, oneOf, parseDuration, readFlags, type FlagTable } from '../../../runtime/kube/flags';

interface Sample {
  a?: string;
  b?: string;
  on?: boolean;
  ms?: number;
  mode?: string;
}
const table: FlagTable<Sample> = {
  a: { field: 'a' },
  b: { field: 'b' },
  new: { field: 'a' },
  on: { field: 'on', boolean: true },
  wait: { field: 'ms', read: duration({ min: 100, max: 60_000 }) },
  mode: { field: 'mode', read: oneOf(['x', 'y']) },
};

/** The fields argv sets, or 'help'. */
function read(argv: readonly string[]): Sample | 'help' {
  const into: Sample = {};
  return readFlags(argv, table, { old: 'new' }, into) ? 'help' : into;
}

describe('readFlags', () => {
  it('--flag=value and --flag value set the same field', () => {
    expect(read(['--a=1', '--b', '2'])).toEqual({ a: '1', b: '2' });
    // A boolean leaves the next argument to be read on its own.
    expect(() => read(['--on', '2'])).toThrow("unexpected argument '2' (see --help)");
  });

  it('a value is taken as it is, even one that looks like a flag or like --help', () => {
    expect(read(['--a', '--help', '--b', '-h'])).toEqual({ a: '--help', b: '-h' });
  });

  it('an empty inline value is a value; a missing one is an error naming the flag', () => {
    expect(read(['--a='])).toEqual({ a: '' });
    expect(() => read(['--b'])).toThrow('--b needs a value');
  });

  it("aliases set the new name's field; errors name the flag as written", () => {
    expect(read(['--old=x'])).toEqual({ a: 'x' });
    expect(() => read(['--old'])).toThrow('--old needs a value');
  });

  it('one boolean rule: --x, --x=true, --x=false, --no-x; the last one wins', () => {
    expect(read(['--on'])).toEqual({ on: true });
    expect(read(['--on=true'])).toEqual({ on: true });
    expect(read(['--on=false'])).toEqual({ on: false });
    expect(read(['--no-on'])).toEqual({ on: false });
    expect(read(['--no-on', '--on'])).toEqual({ on: true });
    expect(() => read(['--on=maybe'])).toThrow("--on must be true or false, not 'maybe'");
    expect(() => read(['--no-on=true'])).toThrow("--no-on takes no value, got 'true'");
    // Only booleans have a --no- form.
    expect(() => read(['--no-a'])).toThrow('unknown flag --no-a (see --help)');
  });

  it('-h/--help ends the flags where it stands; what comes before is still read', () => {
    expect(read(['--a=1', '-h', 'positional'])).toBe('help');
    expect(read(['--on', '--help'])).toBe('help');
    expect(() => read(['positional', '--help'])).toThrow("unexpected argument 'positional'");
    expect(() => read(['--frobnicate', '--help'])).toThrow('unknown flag --frobnicate (see --help)');
  });

  it.each([
    ['-x', 'unknown flag -x (see --help)'],
    ['--Upper', 'unknown flag --Upper (see --help)'],
    ['a=b', "unexpected argument 'a=b' (see --help)"],
    ['--', "unexpected argument '--' (see --help)"],
    ['-', "unexpected argument '-' (see --help)"],
  ])('%j is refused: %s', (arg, message) => {
    expect(() => read([arg])).toThrow(message);
  });

  it('a reader turns the value into the field, naming the flag and the value when it cannot', () => {
    expect(read(['--wait=1.5s', '--mode', 'y'])).toEqual({ ms: 1500, mode: 'y' });
    expect(() => read(['--mode=z'])).toThrow("--mode must be x or y, not 'z'");
  });
});

describe('parseDuration: one syntax, each flag its own bounds', () => {
  it('a number and a unit, or a bare 0', () => {
    expect(parseDuration('1m', '--x', { min: 0 })).toBe(60_000);
    expect(parseDuration('1.5s', '--x', { min: 0 })).toBe(1500);
    expect(parseDuration('250ms', '--x', { min: 0 })).toBe(250);
    expect(parseDuration('0', '--x', { min: 0 })).toBe(0);
    for (const bad of ['5', '-1s', '1h', 's', '1 s', ''])
      expect(() => parseDuration(bad, '--x', { min: 0 })).toThrow(
        `--x must be a duration such as 500ms, 5s or 1m, not '${bad}'`,
      );
  });

  it("the bounds are the flag's, said in the same syntax", () => {
    expect(() => parseDuration('5ms', '--x', { min: 10 })).toThrow("--x must be at least 10ms, not '5ms'");
    expect(() => parseDuration('0.5s', '--x', { min: 1000 })).toThrow("--x must be at least 1s, not '0.5s'");
    expect(() => parseDuration('10m', '--x', { min: 0, max: 300_000 })).toThrow("--x must be at most 5m, not '10m'");
    expect(parseDuration('5m', '--x', { min: 0, max: 300_000 })).toBe(300_000);
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

  it('a boolean never takes the next argument: --bool false is an error, --bool=false and --no-bool are false', () => {
    expect(() => parse([`--${boolean}`, 'false'])).toThrow("unexpected argument 'false'");
    expect(flags([`--${boolean}=false`, `--kubeconfig=/k`])).toMatchObject({ [booleanField]: false, kubeconfig: '/k' });
    expect(flags([`--no-${boolean}`])).toMatchObject({ [booleanField]: false });
    expect(flags([`--no-${boolean}`, `--${boolean}=true`])).toMatchObject({ [booleanField]: true });
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
