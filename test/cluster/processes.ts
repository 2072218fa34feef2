// Processes of the test clusters: each in its own process group with its log file, killed by
// group on stop, on exit and signals, and by a shell watchdog when Node dies without handlers;
// the tail of a log for errors, and free loopback ports for the processes to listen on.
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { sleep } from '../sleep';

export class ClusterStartError extends Error {
  constructor(
    message: string,
    readonly logTail?: string,
  ) {
    super(logTail ? `${message}\n--- last lines of the log ---\n${logTail}` : message);
    this.name = 'ClusterStartError';
  }
}

export interface Managed {
  name: string;
  child: ChildProcess;
  logFile: string;
  exited?: { code: number | null; signal: NodeJS.Signals | null };
}

export function spawnManaged(bin: string, name: string, args: string[], logFile: string, persistent: boolean): Managed {
  const fd = fs.openSync(logFile, 'a');
  fs.writeSync(fd, `# ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
  // detached: its own process group, so a terminal's Ctrl-C reaches only us and stop() can kill the group.
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  const m: Managed = { name, child, logFile };
  child.on('exit', (code, signal) => (m.exited = { code, signal }));
  child.on('error', (err) => {
    m.exited = { code: -1, signal: null };
    fs.appendFileSync(logFile, `spawn error: ${err.message}\n`);
  });
  if (persistent) child.unref();
  return m;
}

/** A shell that outlives us only to clean up: when our pid is gone it kills the process groups
 * listed in <dir>/.pids (SIGKILL, SIGINT to Jest, OOM: cases where no handler of ours runs). */
export function spawnWatchdog(dir: string, removeDir: boolean): ChildProcess {
  const script = `
    while kill -0 "$2" 2>/dev/null; do sleep 1; done
    for p in $(cat "$1/.pids" 2>/dev/null); do kill -KILL "-$p" 2>/dev/null; done
    if [ "$3" = 1 ]; then rm -rf "$1"; fi`;
  const child = spawn(
    'sh',
    ['-c', script, 'juneau-cluster-watchdog', dir, String(process.pid), removeDir ? '1' : '0'],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  child.unref();
  return child;
}

export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // ESRCH: already gone
  }
}

/** Alive and not a zombie (a zombie's group cannot be signalled usefully). */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The command line of a pid, to check that a recorded pid is still ours. */
export function commandOf(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return undefined;
  }
}

/** SIGTERM to each process group, SIGKILL after graceMs for any still alive. */
export async function stopProcesses(pids: number[], graceMs = 3000): Promise<void> {
  for (const pid of pids) signalGroup(pid, 'SIGTERM');
  const until = Date.now() + graceMs;
  while (pids.some(isAlive) && Date.now() < until) await sleep(50);
  for (const pid of pids) if (isAlive(pid)) signalGroup(pid, 'SIGKILL');
  const hard = Date.now() + 2000;
  while (pids.some(isAlive) && Date.now() < hard) await sleep(20);
}

const liveClusters = new Set<() => void>();
let handlersInstalled = false;
/** Forgets a cluster's exit handler (stopped, or left running on purpose by `cluster up`). */
export function unregisterExitHandler(killAllSync: () => void): void {
  liveClusters.delete(killAllSync);
}

/** Runs `killAllSync` on exit and on SIGINT/SIGTERM/SIGHUP (then the signal's default action). */
export function registerExitHandlers(killAllSync: () => void): void {
  liveClusters.add(killAllSync);
  if (handlersInstalled) return;
  handlersInstalled = true;
  const cleanup = () => {
    for (const k of liveClusters) {
      try {
        k();
      } catch {
        /* best effort */
      }
    }
    liveClusters.clear();
  };
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      cleanup();
      process.removeListener(sig, onSignal);
      // If nobody else handles the signal, take the default action (terminate) as if we were not here.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

/** Runs a command to completion; a non-zero exit is a result, a missing binary (ENOENT) an error. */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; input?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { cwd: opts.cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err && typeof (err as NodeJS.ErrnoException).code === 'string') return reject(err); // ENOENT etc.
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** The last `lines` lines of a process's log file; empty when it cannot be read. */
export function tail(file: string, lines: number): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** `n` distinct free TCP ports on loopback (each closed again before they are returned). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** A free TCP port on loopback (closed again before it is returned). */
export const freePort = async (): Promise<number> => (await freePorts(1))[0];
