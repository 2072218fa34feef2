// The processes of the e2e rig: the bundled juneau-controller replicas (host network namespace,
// like a Deployment's pods) and one bundled juneau-agent per node namespace (host network of that
// "node", like the DaemonSet). Each writes its log to a file the rig keeps for failures.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { sleep } from '../sleep';
import { forwardingServer } from './ns-forward.cjs';

const REPO = path.resolve(__dirname, '..', '..');
export const CONTROLLER_BIN = path.join(REPO, 'build', 'bin', 'juneau-controller.js');
export const AGENT_BIN = path.join(REPO, 'build', 'bin', 'juneau-agent.js');
export const CLI_BIN = path.join(REPO, 'build', 'bin', 'kubectl-juneau.js');
const NS_FORWARD = path.join(__dirname, 'ns-forward.cjs');

export interface Managed {
  readonly name: string;
  readonly child: ChildProcess;
  readonly logFile: string;
}

/** Starts a process with stdout and stderr appended to `logFile`. */
export function startLogged(
  name: string,
  cmd: string,
  args: string[],
  logFile: string,
  env: Record<string, string> = {},
): Managed {
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(cmd, args, { stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
  fs.closeSync(fd);
  return { name, child, logFile };
}

/** SIGKILL (a crash) or SIGTERM (a clean stop), then waits for the exit. */
export async function stopProcess(p: Managed, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.child.once('exit', () => resolve()));
  p.child.kill(signal);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export function tailOf(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * The test API server listens on the host's loopback. A node namespace has its own loopback, so
 * the host side accepts on a Unix socket and ns-forward.cjs, inside each node namespace, listens
 * on 127.0.0.1:<apiserver port> and forwards to it: the agents' kubeconfig works unchanged.
 */
export class ApiForwarder {
  private server?: net.Server;
  private readonly inNamespaces: Managed[] = [];
  constructor(
    readonly apiPort: number,
    readonly socketPath: string,
  ) {}

  async start(): Promise<void> {
    this.server = forwardingServer(() => net.connect(this.apiPort, '127.0.0.1'));
    await new Promise<void>((resolve) => this.server!.listen(this.socketPath, resolve));
  }

  async into(ns: string, logFile: string): Promise<void> {
    const p = startLogged(
      `forward-${ns}`,
      'nsenter',
      [`--net=/var/run/netns/${ns}`, process.execPath, NS_FORWARD, String(this.apiPort), this.socketPath],
      logFile,
    );
    this.inNamespaces.push(p);
    for (let waited = 0; !fs.readFileSync(logFile, 'utf8').includes('listening'); waited += 20) {
      if (waited > 5000 || p.child.exitCode !== null)
        throw new Error(`API forwarder into ${ns} did not start: ${tailOf(logFile)}`);
      await sleep(20);
    }
  }

  /** FO-4: cuts namespace `ns` off the API server (its forwarder killed, its connections with it). */
  async cut(ns: string): Promise<void> {
    const p = this.inNamespaces.find(
      (f) => f.name === `forward-${ns}` && f.child.exitCode === null && f.child.signalCode === null,
    );
    if (p) await stopProcess(p, 'SIGKILL');
  }

  async stop(): Promise<void> {
    for (const p of this.inNamespaces) await stopProcess(p, 'SIGKILL');
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    fs.rmSync(this.socketPath, { force: true });
  }
}
