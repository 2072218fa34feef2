/**
 * A small BIRD control client over its unix socket (the protocol `birdc` speaks): the agent reloads
 * the configuration it rendered and reads per-peer session state (BGP-7's reading side).
 *
 * The protocol: BIRD greets with `0001 BIRD x.y.z ready.`; a command is one line; each reply line
 * is a four-digit code and `-` (more lines follow) or ` ` (the last line), or a line starting with a
 * space that continues the previous code. Codes 0xxx end a command that succeeded, 8xxx a runtime
 * error, 9xxx a command BIRD could not parse; 1xxx/2xxx are table rows and headings.
 * One connection per command: BIRD may restart under us (its own container, BGP-6) and a fresh
 * connection needs no reconnect logic.
 */
import * as fs from 'node:fs/promises';
import * as net from 'node:net';
import * as path from 'node:path';

export interface BirdLine {
  readonly code: number;
  readonly text: string;
}

export class BirdCommandError extends Error {
  constructor(
    readonly command: string,
    readonly code: number,
    readonly detail: string,
  ) {
    super(`birdc '${command}': ${code} ${detail}`);
    this.name = 'BirdCommandError';
  }
}

/** One peer's session as BIRD reports it (`show protocols all`). */
export interface BgpSessionState {
  /** BIRD's protocol name (birdSymbol of the BGPPeer name). */
  readonly protocol: string;
  /** The BGPPeer name, from the description the renderer writes; the protocol name otherwise. */
  readonly peer: string;
  /** BIRD's protocol state: `up`, `start`, `down`. */
  readonly protocolState: string;
  /** The BGP FSM state: `Idle`, `Connect`, `Active`, `OpenSent`, `OpenConfirm`, `Established`, `Down`. */
  readonly state: string;
  /** When the protocol state last changed: the session's uptime when it is Established. */
  readonly since?: Date;
  /** BIRD's info column, e.g. `Established` or `Active  Socket: Connection refused`. */
  readonly info: string;
  readonly neighborAddress?: string;
  /** Routes this node sends the peer (prefixes exported on the ipv4 channel). */
  readonly prefixesExported: number;
  readonly prefixesImported: number;
  /** BIRD's `Last error`, e.g. `Socket: Connection closed` or `Received: Bad peer AS`. */
  readonly lastError?: string;
}

export type ConfigureResult =
  { readonly ok: true; readonly message: string } | { readonly ok: false; readonly error: string };

const LINE = /^(\d{4})([ -])(.*)$/;

/** Runs one command; resolves with its reply lines, rejects with BirdCommandError on 8xxx/9xxx. */
export function birdCommand(socketPath: string, command: string, timeoutMs = 10_000): Promise<BirdLine[]> {
  if (/[\r\n]/.test(command)) return Promise.reject(new Error(`birdc: command contains a newline: ${command}`));
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    const lines: BirdLine[] = [];
    let buffer = '';
    let greeted = false;
    let code = 0;
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.setTimeout(timeoutMs, () => fail(new Error(`birdc '${command}': no reply within ${timeoutMs} ms`)));
    socket.on('error', (err) => fail(new Error(`birdc '${command}' on ${socketPath}: ${err.message}`)));
    socket.on('close', () => reject(new Error(`birdc '${command}': BIRD closed the socket before replying`)));
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const raw = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const m = LINE.exec(raw);
        if (m) code = Number(m[1]);
        const text = m ? m[3] : raw.replace(/^ /, '');
        if (!greeted) {
          if (code !== 1) return fail(new Error(`birdc: unexpected greeting '${raw}'`));
          greeted = true;
          socket.write(`${command}\n`);
          continue;
        }
        lines.push({ code, text });
        if (m && m[2] === ' ') {
          socket.removeAllListeners('close');
          socket.end();
          if (code >= 8000) return reject(new BirdCommandError(command, code, text));
          return resolve(lines);
        }
      }
    });
  });
}

/** A quoted file name for BIRD's command line (its strings have no escapes). */
function quoted(file: string): string {
  if (/["\n]/.test(file)) throw new Error(`birdc: file name ${file} contains a quote or newline`);
  return `"${file}"`;
}

/** `configure` (of `file`, else the file BIRD was started with): BIRD keeps the running
 * configuration when the new one does not parse, and says why. Unchanged sessions are not reset. */
export async function birdConfigure(socketPath: string, file?: string): Promise<ConfigureResult> {
  return configureCommand(socketPath, file === undefined ? 'configure' : `configure ${quoted(file)}`);
}

async function configureCommand(socketPath: string, command: string): Promise<ConfigureResult> {
  try {
    const lines = await birdCommand(socketPath, command);
    return { ok: true, message: lines[lines.length - 1].text };
  } catch (err) {
    if (err instanceof BirdCommandError) return { ok: false, error: err.detail };
    throw err;
  }
}

/**
 * Writes `text` as BIRD's configuration and reloads it: the text goes to a temporary file beside
 * `file`, BIRD checks it (`configure check`), and only a text that parses is renamed over `file`
 * and configured; a bad one is removed and the running configuration (and the file on disk, which
 * BIRD reads again when it restarts) stay as they were. Resolves with BIRD's verdict.
 */
export async function applyBirdConfig(socketPath: string, file: string, text: string): Promise<ConfigureResult> {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.new`);
  await fs.writeFile(temporary, text, { mode: 0o600 });
  try {
    const check = await configureCommand(socketPath, `configure check ${quoted(temporary)}`);
    if (!check.ok) return check;
    await fs.rename(temporary, file);
  } finally {
    await fs.rm(temporary, { force: true });
  }
  return birdConfigure(socketPath, file);
}

/** Every BGP session BIRD runs (or the one protocol `name`). */
export async function bgpSessions(socketPath: string, name?: string): Promise<BgpSessionState[]> {
  const command = name === undefined ? 'show protocols all' : `show protocols all ${quoted(name)}`;
  return parseProtocols(await birdCommand(socketPath, command));
}

const ROW = /^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*(.*?)\s*$/;

/** `show protocols all` reply lines -> the BGP sessions in it. Exported for the unit test. */
export function parseProtocols(lines: readonly BirdLine[]): BgpSessionState[] {
  const sessions: BgpSessionState[] = [];
  let current: { row: RegExpExecArray; details: Map<string, string>; routes?: string } | undefined;
  const flush = () => {
    if (current && current.row[2] === 'BGP') sessions.push(sessionOf(current.row, current.details, current.routes));
    current = undefined;
  };
  for (const line of lines) {
    if (line.code === 1002) {
      flush();
      const row = ROW.exec(line.text);
      if (row) current = { row, details: new Map() };
      continue;
    }
    if (line.code !== 1006 || !current) continue;
    const m = /^\s*([^:]+):\s*(.*?)\s*$/.exec(line.text);
    if (!m) continue;
    // The first Routes line is the ipv4 channel's (the only channel the renderer configures).
    if (m[1] === 'Routes') current.routes ??= m[2];
    else if (!current.details.has(m[1])) current.details.set(m[1], m[2]);
  }
  flush();
  return sessions;
}

function sessionOf(row: RegExpExecArray, details: ReadonlyMap<string, string>, routes?: string): BgpSessionState {
  const [, protocol, , , protocolState, since, info] = row;
  const description = details.get('Description');
  const count = (what: string) => Number(new RegExp(`(\\d+) ${what}`).exec(routes ?? '')?.[1] ?? 0);
  return {
    protocol,
    peer: description?.startsWith('BGPPeer ') ? description.slice('BGPPeer '.length) : protocol,
    protocolState,
    state: details.get('BGP state') ?? 'Down',
    since: parseSince(since),
    info,
    neighborAddress: details.get('Neighbor address'),
    prefixesExported: count('exported'),
    prefixesImported: count('imported'),
    lastError: details.get('Last error'),
  };
}

/** The renderer sets `timeformat protocol "%FT%T%z"`: 2026-12-02T03:02:58+0000. */
function parseSince(text: string): Date | undefined {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)([+-]\d\d)(\d\d)$/.exec(text);
  return m ? new Date(`${m[1]}${m[2]}:${m[3]}`) : undefined;
}

/**
 * BIRD's `Last reboot on …` (`show status`): it changes when BIRD restarts (its container
 * restarted, BGP-6), which is when the agent applies its configuration again, since a restarted
 * BIRD reads the file on disk and may predate the agent's last decision.
 */
export async function birdBootTime(socketPath: string): Promise<string> {
  const lines = await birdCommand(socketPath, 'show status');
  const reboot = lines.map((l) => /^\s*Last reboot on (.+?)\s*$/.exec(l.text)?.[1]).find((t) => t !== undefined);
  if (reboot === undefined) throw new Error(`birdc 'show status': no 'Last reboot on' line`);
  return reboot;
}
