/**
 * What both binaries (juneau-controller, juneau-agent) do before their own work: the process's
 * streams and stop signal, `--version`, `--help`, and flags parsed with the log settings checked,
 * so a bad flag is one line on stderr and exit code 2.
 */
import { createLogger, parseLogFormat, parseLogLevel, type Logger } from './log';
import { versionLine, wantsVersion } from './version';

export interface MainIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Resolves when the process is asked to stop (SIGTERM/SIGINT). */
  readonly stopSignal: Promise<string>;
}

export function processIO(): MainIO {
  const stopSignal = new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  return {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    stopSignal,
  };
}

type Parsed<F> = { readonly help: true } | { readonly help: false; readonly flags: F };

/**
 * The flags to run with, or the exit code to return now: 0 after `--version` or `--help` (printed
 * to stdout), 2 after a bad flag (`<binary>: <what is wrong>` on stderr).
 */
export function startupFlags<F extends { readonly logLevel: string; readonly logFormat: string }>(
  binary: string,
  argv: readonly string[],
  io: MainIO,
  parse: (argv: readonly string[], env: MainIO['env']) => Parsed<F>,
  help: string,
): F | number {
  if (wantsVersion(argv)) {
    io.stdout(versionLine(binary));
    return 0;
  }
  try {
    const parsed = parse(argv, io.env);
    if (parsed.help) {
      io.stdout(help);
      return 0;
    }
    parseLogLevel(parsed.flags.logLevel);
    parseLogFormat(parsed.flags.logFormat);
    return parsed.flags;
  } catch (err) {
    io.stderr(`${binary}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
}

/** The binary's logger: the level and format its (already checked) flags name, one line per entry
 * on stderr. */
export function processLogger(
  component: string,
  flags: { readonly logLevel: string; readonly logFormat: string },
  io: MainIO,
): Logger {
  return createLogger({
    component,
    level: parseLogLevel(flags.logLevel),
    format: parseLogFormat(flags.logFormat),
    sink: (line) => io.stderr(line + '\n'),
  });
}
