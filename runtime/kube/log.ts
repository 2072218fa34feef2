/**
 * Structured logs: one line per event with `ts`, `level`, `component`, `msg` and the caller's
 * fields. Reserved keys always win, so a field can never forge the level or message. `json` (the
 * default, for log collectors) or `text` (`ts LEVEL component: msg key=value`, for a terminal).
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  readonly level: LogLevel;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (e.g. `{ controller: 'slb', key }`). */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  /** Written as `component` on every line, e.g. `controller` or `agent`. */
  readonly component: string;
  /** @default 'info' */
  readonly level?: LogLevel;
  /** Where lines go. @default a write to process.stderr */
  readonly sink?: (line: string) => void;
  /** @default () => new Date() */
  readonly clock?: () => Date;
  /** @default 'json' */
  readonly format?: LogFormat;
}

const RESERVED = new Set(['ts', 'level', 'component', 'msg']);

/** Parses a `--log-level` value; the error names the bad value and the allowed ones. */
export function parseLogLevel(value: string): LogLevel {
  const lower = value.toLowerCase();
  if ((LOG_LEVELS as readonly string[]).includes(lower)) return lower as LogLevel;
  throw new Error(`log level '${value}' is not one of ${LOG_LEVELS.join(', ')}`);
}

/** Parses a `--log-format` value; the error names the bad value and the allowed ones. */
export function parseLogFormat(value: string): LogFormat {
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  throw new Error(`log format '${value}' is not one of ${LOG_FORMATS.join(', ')}`);
}

export function createLogger(options: LoggerOptions): Logger {
  const settings: Settings = {
    component: options.component,
    threshold: LOG_LEVELS.indexOf(options.level ?? 'info'),
    sink: options.sink ?? ((line) => process.stderr.write(line + '\n')),
    clock: options.clock ?? (() => new Date()),
    render: options.format === 'text' ? renderText : renderJson,
  };
  return new JsonLogger(settings, {});
}

interface Settings {
  readonly component: string;
  readonly threshold: number;
  readonly sink: (line: string) => void;
  readonly clock: () => Date;
  readonly render: (line: Readonly<Record<string, unknown>>) => string;
}

class JsonLogger implements Logger {
  constructor(
    private readonly settings: Settings,
    private readonly bound: LogFields,
  ) {}

  get level(): LogLevel {
    return LOG_LEVELS[this.settings.threshold];
  }

  debug(msg: string, fields?: LogFields): void {
    this.write('debug', msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.write('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.write('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.write('error', msg, fields);
  }

  child(fields: LogFields): Logger {
    return new JsonLogger(this.settings, { ...this.bound, ...fields });
  }

  private write(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    if (LOG_LEVELS.indexOf(level) < this.settings.threshold) return;
    const line: Record<string, unknown> = {
      ts: this.settings.clock().toISOString(),
      level,
      component: this.settings.component,
      msg,
    };
    for (const [key, value] of Object.entries({ ...this.bound, ...fields })) {
      if (!RESERVED.has(key)) line[key] = serializable(value);
    }
    this.settings.sink(this.settings.render(line));
  }
}

function renderJson(line: Readonly<Record<string, unknown>>): string {
  return JSON.stringify(line);
}

/** `2026-01-02T03:04:05.000Z INFO  controller: msg key=value key="with space"`: one line whatever the values hold. */
function renderText(line: Readonly<Record<string, unknown>>): string {
  const { ts, level, component, msg, ...fields } = line;
  const head = `${String(ts)} ${String(level).toUpperCase().padEnd(5)} ${String(component)}: ${oneLine(String(msg))}`;
  const rest = Object.entries(fields).map(([key, value]) => `${key}=${textValue(value)}`);
  return [head, ...rest].join(' ');
}

function textValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? 'undefined';
}

const oneLine = (text: string): string => text.replace(/\r?\n/g, '\\n');

/** Errors do not JSON.stringify usefully; keep what a person needs to act. */
function serializable(value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return code === undefined
      ? { name: value.name, message: value.message }
      : { name: value.name, message: value.message, code };
  }
  return value;
}

/** A logger that drops everything; handy default for library code and tests. */
export const silentLogger: Logger = createLogger({ component: 'silent', level: 'error', sink: () => undefined });
