/**
 * The command-line grammar both binaries share, read with `node:util` parseArgs: `--flag value`,
 * `--flag=value`, booleans as `--x`, `--x=true|false` or `--no-x`, aliases for old names,
 * `-h`/`--help`, and one duration syntax. Each binary's flags are a table of {@link FlagSpec}s.
 */
import { parseArgs } from 'node:util';

/** One flag of a binary: the field it sets, and how its value is read. */
export interface FlagSpec<F> {
  readonly field: keyof F;
  /** `--x`, `--x=true|false` and `--no-x`; never the next argument. @default false: takes a value */
  readonly boolean?: true;
  /** The value as the field holds it; throws naming `flag` (as written) and the value. @default the string */
  readonly read?: (value: string, flag: string) => unknown;
  /** A one-letter name too (`-n web`, `-n=web`). @default none */
  readonly short?: string;
}

/** A binary's flags by name (without `--`). */
export type FlagTable<F> = Readonly<Record<string, FlagSpec<F>>>;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Sets `into`'s fields from `argv` in order; true when `-h`/`--help` stands there (what comes
 * before it is still read, so a bad flag before it is still an error). A value is taken as it is,
 * even one that looks like a flag (`--kubeconfig --help` names a file called --help). Other
 * arguments go to `positionals`, or are refused without it. Errors name the flag as written and
 * the bad value.
 */
export function readFlags<F>(
  argv: readonly string[],
  table: FlagTable<F>,
  aliases: Readonly<Record<string, string>>,
  into: Mutable<F>,
  positionals?: string[],
): boolean {
  // Not strict: parseArgs's own errors would not say which value was bad, and it refuses a value
  // beginning with '-'. Unknown flags, stray arguments and missing values are refused below.
  const { tokens } = parseArgs({
    args: [...argv],
    options: parseArgsOptions(table, aliases),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === 'positional') {
      if (!positionals) throw new Error(`unexpected argument '${token.value}' (see --help)`);
      positionals.push(token.value);
      continue;
    }
    if (token.kind === 'option-terminator') throw new Error(`unexpected argument '--' (see --help)`);
    if (token.name === 'help') return true;
    const given = token.rawName;
    const negated = token.name.startsWith('no-') && table[canonical(token.name.slice(3), aliases)]?.boolean;
    const name = canonical(negated ? token.name.slice(3) : token.name, aliases);
    const spec = table[name];
    const short = !given.startsWith('--');
    if (!spec || (short && given !== `-${spec.short}`)) throw new Error(`unknown flag ${given} (see --help)`);
    // `-n=web` as kubectl reads it; parseArgs would take `=web`.
    const value = short && token.inlineValue && token.value?.startsWith('=') ? token.value.slice(1) : token.value;
    if (spec.boolean) {
      (into as Record<keyof F, unknown>)[spec.field] = readBoolean(given, value, !!negated);
      continue;
    }
    if (value === undefined) throw new Error(`${given} needs a value`);
    (into as Record<keyof F, unknown>)[spec.field] = spec.read ? spec.read(value, given) : value;
  }
  return false;
}

const canonical = (name: string, aliases: Readonly<Record<string, string>>) => aliases[name] ?? name;

/** Each name parseArgs must know to take a value from the next argument (or not, for booleans). */
function parseArgsOptions<F>(table: FlagTable<F>, aliases: Readonly<Record<string, string>>) {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  const names = [...Object.keys(table), ...Object.keys(aliases)];
  for (const name of names) {
    const { boolean, short } = table[canonical(name, aliases)] ?? {};
    options[name] = { type: boolean ? 'boolean' : 'string', ...(short && !aliases[name] ? { short } : {}) };
    if (boolean) options[`no-${name}`] = { type: 'boolean' };
  }
  return options;
}

/** The one boolean rule: `--x` and `--x=true` are true, `--x=false` and `--no-x` are false. */
function readBoolean(given: string, inline: string | undefined, negated: boolean): boolean {
  if (negated) {
    if (inline !== undefined) throw new Error(`${given} takes no value, got '${inline}'`);
    return false;
  }
  if (inline !== undefined && inline !== 'true' && inline !== 'false')
    throw new Error(`${given} must be true or false, not '${inline}'`);
  return inline !== 'false';
}

/** A string flag whose empty value means "not given" (the default then applies). */
export const optionalString = (value: string): string | undefined => value || undefined;

/** A string flag that must not be empty. */
export function nonEmpty(value: string, flag: string): string {
  if (value === '') throw new Error(`${flag} needs a value`);
  return value;
}

/** A flag that takes one of `choices`. */
export function oneOf<T extends string>(choices: readonly T[]): (value: string, flag: string) => T {
  return (value, flag) => {
    if ((choices as readonly string[]).includes(value)) return value as T;
    throw new Error(`${flag} must be ${orList(choices)}, not '${value}'`);
  };
}

/** `a, b or c`. */
export const orList = (words: readonly string[]): string =>
  words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m)$/;

/** Bounds of a duration flag, in milliseconds. */
export interface DurationBounds {
  readonly min: number;
  /** @default none */
  readonly max?: number;
}

/**
 * The one duration syntax: a number and a unit, `500ms`, `1.5s`, `5m` (or a bare `0`), in
 * milliseconds, within the flag's own bounds.
 */
export function parseDuration(value: string, flag: string, bounds: DurationBounds): number {
  const match = value === '0' ? ['0', '0', 'ms'] : DURATION.exec(value);
  if (!match) throw new Error(`${flag} must be a duration such as 500ms, 5s or 1m, not '${value}'`);
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (ms < bounds.min) throw new Error(`${flag} must be at least ${formatDuration(bounds.min)}, not '${value}'`);
  if (bounds.max !== undefined && ms > bounds.max)
    throw new Error(`${flag} must be at most ${formatDuration(bounds.max)}, not '${value}'`);
  return Math.round(ms);
}

/** A duration flag's reader, for a {@link FlagSpec}. */
export const duration =
  (bounds: DurationBounds) =>
  (value: string, flag: string): number =>
    parseDuration(value, flag, bounds);

/** Milliseconds in the duration syntax, in the largest unit that is exact: 300000 -> `5m`. */
function formatDuration(ms: number): string {
  if (ms > 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The `--help` lines of the secure-metrics flags, the same on both binaries (runtime/kube/metrics-tls.ts). */
export const METRICS_SECURE_HELP = `  --metrics-secure, --no-metrics-secure
                                     serve /metrics over HTTPS, only to a bearer token the
                                     API server authenticates (TokenReview) and allows
                                     'get' on the non-resource URL /metrics
                                     (SubjectAccessReview: the juneau-metrics-reader
                                     ClusterRole); 401 without a token, 403 when not allowed.
                                     false: plain HTTP to anyone (default true)
  --metrics-cert-dir DIR             tls.crt and tls.key of the metrics listener, re-read
                                     every minute (default: a self-signed certificate made
                                     at start)`;
