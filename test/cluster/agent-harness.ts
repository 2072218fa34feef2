// Runs the real juneau-agent (runtime/agent/main.ts, one `node --import tsx` process) inside a
// "node" network namespace of a test/netns Rig, against the test control plane.
//
// The API server listens on 127.0.0.1 of the root network namespace, which a process in another
// network namespace cannot reach. ApiBridge carries it over a Unix socket (path sockets are not
// network-namespaced): a forwarder process in the node namespace listens on 127.0.0.1:<the API
// server's port> and pipes each connection to the socket, where this (the test) process pipes it on
// to the real API server. The agent then uses the test kubeconfig unchanged, TLS names included.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { removePins } from '../../runtime/agent/bpf';
import { REPO_ROOT } from './paths';
import { sleep } from '../sleep';

/** Runs `kubectl juneau ARGS` from the source, as the plugin would, and returns its stdout. */
export async function kubectlJuneau(...args: string[]): Promise<string> {
  const cli = path.join(REPO_ROOT, 'runtime/cli/main.ts');
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', cli, ...args], { cwd: REPO_ROOT });
  return stdout;
}

const FORWARDER = `
const net = require('net');
const [port, sock] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
}).listen(Number(port), '127.0.0.1', () => console.log('listening'));
`;

export class ApiBridge {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-agent-bridge-'));
  private readonly socketPath = path.join(this.dir, 'api.sock');
  private server: net.Server | undefined;
  private forwarder: ChildProcess | undefined;
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly apiPort: number) {}

  /** The API server port, from the kubeconfig's `server: https://127.0.0.1:PORT`. */
  static portOf(kubeconfigPath: string): number {
    const match = /server:\s*https:\/\/127\.0\.0\.1:(\d+)/.exec(fs.readFileSync(kubeconfigPath, 'utf8'));
    if (!match) throw new Error(`${kubeconfigPath}: no https://127.0.0.1:PORT server`);
    return Number(match[1]);
  }

  async start(netns: string): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.apiPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => this.server!.once('error', reject).listen(this.socketPath, resolve));
    this.forwarder = spawn(
      'nsenter',
      [`--net=/var/run/netns/${netns}`, process.execPath, '-e', FORWARDER, String(this.apiPort), this.socketPath],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    await new Promise<void>((resolve, reject) => {
      let err = '';
      this.forwarder!.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      this.forwarder!.stdout!.once('data', () => resolve());
      this.forwarder!.once('exit', (code) => reject(new Error(`API forwarder exited ${code}: ${err}`)));
    });
  }

  async stop(): Promise<void> {
    if (this.forwarder && this.forwarder.exitCode === null) {
      const exited = new Promise((resolve) => this.forwarder!.once('exit', resolve));
      this.forwarder.kill('SIGKILL');
      await exited;
    }
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface AgentLogLine {
  readonly level: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** One juneau-agent process in a network namespace; its JSON log lines are kept. */
export class AgentProcess {
  readonly lines: AgentLogLine[] = [];
  private child: ChildProcess | undefined;
  private exit: Promise<number | null> = Promise.resolve(null);
  private stderr = '';

  constructor(
    private readonly netns: string,
    private readonly args: readonly string[],
    /** Node's own flags before the entry, e.g. `--max-old-space-size=96`. @default none */
    private readonly nodeArgs: readonly string[] = [],
  ) {}

  /** The agent's pid while it runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    const entry = path.join(REPO_ROOT, 'runtime/agent/main.ts');
    // nsenter execs node: the pid is the agent's own, so SIGKILL reaches the agent itself.
    this.child = spawn(
      'nsenter',
      [
        `--net=/var/run/netns/${this.netns}`,
        process.execPath,
        ...this.nodeArgs,
        '--import',
        'tsx',
        entry,
        // Plain HTTP, so the suites read /metrics with curl; test/cluster/metrics-auth.test.ts proves the secure listener.
        '--metrics-secure=false',
        ...this.args,
      ],
      {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const child = this.child;
    this.exit = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let partial = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
      partial += chunk.toString();
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        try {
          this.lines.push(JSON.parse(line) as AgentLogLine);
        } catch {
          this.lines.push({ level: 'raw', msg: line });
        }
      }
    });
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first log line (from index `from`) whose message starts with `msg`. */
  async waitForLog(msg: string, from = 0, timeoutMs = 45_000): Promise<AgentLogLine> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.slice(from).find((l) => l.msg.startsWith(msg));
      if (found) return found;
      if (!this.running) throw new Error(`agent exited before logging '${msg}':\n${this.stderr.slice(-4000)}`);
      if (Date.now() > until)
        throw new Error(`agent did not log '${msg}' within ${timeoutMs} ms:\n${this.stderr.slice(-4000)}`);
      await sleep(50);
    }
  }

  /** Starts and waits until it is ready (informers synced, maps reconciled). */
  async startReady(): Promise<void> {
    const from = this.lines.length;
    this.start();
    await this.waitForLog('ready', from);
  }

  /** Sends `signal` and waits for the exit code (null when killed by the signal). */
  async stop(signal: NodeJS.Signals): Promise<number | null> {
    if (this.running) this.child!.kill(signal);
    return this.exit;
  }

  get log(): string {
    return this.stderr;
  }
}

/** An agent in `netns` with its own ApiBridge to the test API server (the kubeconfig's port). */
export class BridgedAgent {
  readonly process: AgentProcess;
  private bridge: ApiBridge | undefined;

  constructor(
    private readonly netns: string,
    args: readonly string[],
    private readonly kubeconfigPath: string,
    nodeArgs: readonly string[] = [],
  ) {
    this.process = new AgentProcess(netns, args, nodeArgs);
  }

  /** The bridge, then the agent, once ready. */
  async start(): Promise<AgentProcess> {
    this.bridge = new ApiBridge(ApiBridge.portOf(this.kubeconfigPath));
    await this.bridge.start(this.netns);
    await this.process.startReady();
    return this.process;
  }

  /** The bridge, then the agent, not waiting for it to be ready. */
  async startUnready(): Promise<AgentProcess> {
    this.bridge = new ApiBridge(ApiBridge.portOf(this.kubeconfigPath));
    await this.bridge.start(this.netns);
    this.process.start();
    return this.process;
  }

  /** SIGKILL (the pinned state stays, as after a crash), then the bridge. */
  async stop(): Promise<void> {
    await this.process.stop('SIGKILL');
    await this.bridge?.stop();
  }
}

/** Removes the agent's pins under `pinDir` if any, then runs `destroy` (the rig) even if that threw. */
export async function removePinsThen(pinDir: string, destroy: () => Promise<void>): Promise<void> {
  try {
    if (fs.existsSync(pinDir)) removePins(pinDir);
  } finally {
    await destroy();
  }
}
