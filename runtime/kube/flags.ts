/**
 * The command-line tokenizer both binaries' flag parsers share: `--flag value`, `--flag=value`,
 * `--bool`, aliases for old names, and `-h`/`--help`. What each flag means stays in the parser.
 */

/** One `--flag` argument. */
export interface FlagArg {
  /** The name as written (error messages name it so). */
  readonly given: string;
  /** The name after aliases. */
  readonly name: string;
  /** The value after `=`, if any. */
  readonly inline: string | undefined;
  /** The value: the inline one, else the next argument (consumed); undefined when there is none. */
  readonly value: () => string | undefined;
}

/** Yields each flag in order, or `'help'` where `-h`/`--help` stands (the parser returns then); a
 * non-flag argument is an error. */
export function* flagArgs(
  argv: readonly string[],
  aliases: Readonly<Record<string, string>>,
): Generator<FlagArg | 'help'> {
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      yield 'help';
      return;
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match) throw new Error(`unexpected argument '${arg}' (see --help)`);
    const [, given, inline] = match;
    yield { given, name: aliases[given] ?? given, inline, value: () => inline ?? argv[++i] };
    i++;
  }
}
