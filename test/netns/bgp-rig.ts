// Real BGP daemons in the namespaces of a Rig (rig.ts): BIRD 2 on each "node" with the agent's
// rendered configuration, FRR (a different implementation) on the "router" (the rig's client
// namespace, which holds the segment's bridge). FACTS.md "BGP daemons": FRR runs per namespace
// through its pathspace (`frrinit.sh start NAME`, `vtysh -N NAME`); BIRD needs no manager.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { applyBirdConfig, birdCommand, type ConfigureResult } from '../../runtime/agent/bgp/birdc';
import { renderBirdConfig, type BirdConfigInput } from '../../runtime/agent/bgp/bird-config';
import { inNs } from './ns-tools';
import { sleep } from '../sleep';

const run = promisify(execFile);

/** Polls `probe` every `intervalMs` until it gives a value; throws naming `what` and the last miss. */
export async function poll<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    last = await probe().catch((err: unknown) => err);
    if (last !== undefined && !(last instanceof Error)) return last as T;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms (last: ${last instanceof Error ? last.message : 'nothing'})`);
}

/** BIRD in a node namespace, in the foreground as in its container (`bird -f`): config and control
 * socket in `dir`, what it logs (the renderer's `log stderr`) in `dir/bird.log`. */
export class BirdNode {
  readonly file: string;
  readonly socket: string;
  readonly log: string;
  private child?: ChildProcess;

  constructor(
    readonly ns: string,
    readonly dir: string,
  ) {
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, 'bird.conf');
    this.socket = path.join(dir, 'bird.ctl');
    this.log = path.join(dir, 'bird.log');
  }

  /**
   * Starts BIRD on the rendered configuration (`input`; the file as it is when none), with more
   * `args` (`-R`, as the install's container command); resolves once its control socket answers.
   */
  async start(input?: BirdConfigInput, args: readonly string[] = []): Promise<void> {
    if (input) fs.writeFileSync(this.file, renderBirdConfig(input));
    const out = fs.openSync(this.log, 'a');
    // nsenter without --fork execs bird in its own process: child.pid is BIRD's.
    const child = spawn(
      'nsenter',
      [`--net=/var/run/netns/${this.ns}`, 'bird', '-f', '-c', this.file, '-s', this.socket, ...args],
      {
        stdio: ['ignore', out, out],
      },
    );
    fs.closeSync(out);
    this.child = child;
    await poll(`BIRD in ${this.ns} answers on ${this.socket} (log: ${this.log})`, async () => {
      if (child.exitCode !== null)
        throw new Error(`BIRD exited ${child.exitCode}: ${fs.readFileSync(this.log, 'utf8')}`);
      return (await birdCommand(this.socket, 'show status')) ? true : undefined;
    });
  }

  /** What the agent does after deciding: render, write, configure. */
  apply(input: BirdConfigInput): Promise<ConfigureResult> {
    return applyBirdConfig(this.socket, this.file, renderBirdConfig(input));
  }

  /** Resolves once this BIRD has exited (at once when it is not running). */
  exited(): Promise<void> {
    if (!this.alive()) return Promise.resolve();
    return new Promise((resolve) => this.child!.once('exit', () => resolve()));
  }

  /** Whether BIRD still runs (a test that finds it gone says so, with its log). */
  alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.alive()) throw new Error(`BIRD in ${this.ns} is not running (log: ${fs.readFileSync(this.log, 'utf8')})`);
    this.child!.kill(sig);
  }

  /** Stops this BIRD (continued first, should a test have frozen it). */
  stop(): void {
    if (!this.alive()) return;
    this.child!.kill('SIGCONT');
    this.child!.kill('SIGTERM');
  }
}

/** FRR (zebra, bgpd, bfdd, staticd) in the router namespace under its own pathspace. */
export class FrrRouter {
  private readonly etc: string;

  constructor(
    readonly ns: string,
    readonly name: string,
  ) {
    this.etc = `/etc/frr/${name}`;
  }

  async start(config: string): Promise<void> {
    fs.mkdirSync(this.etc, { recursive: true });
    const daemons = fs.readFileSync('/etc/frr/daemons', 'utf8').replace(/^(bgpd|bfdd|staticd)=no$/gm, '$1=yes');
    fs.writeFileSync(path.join(this.etc, 'daemons'), daemons);
    fs.writeFileSync(path.join(this.etc, 'frr.conf'), config);
    fs.writeFileSync(path.join(this.etc, 'vtysh.conf'), 'service integrated-vtysh-config\n');
    await run('chown', ['-R', 'frr:frr', this.etc]);
    await run('ip', ['netns', 'exec', this.ns, '/usr/lib/frr/frrinit.sh', 'start', this.name]);
  }

  async vtysh(command: string): Promise<string> {
    const { stdout } = await run('vtysh', ['-N', this.name, '-c', command], { maxBuffer: 16 << 20 });
    return stdout;
  }

  async json<T>(command: string): Promise<T> {
    return JSON.parse(await this.vtysh(`${command} json`)) as T;
  }

  /** FRR's counters of one neighbour: sessions established and dropped since bgpd started. */
  async neighbor(address: string): Promise<{ state: string; established: number; dropped: number }> {
    const all = await this.json<
      Record<string, { bgpState: string; connectionsEstablished: number; connectionsDropped: number }>
    >(`show bgp neighbors ${address}`);
    const n = all[address];
    return { state: n.bgpState, established: n.connectionsEstablished, dropped: n.connectionsDropped };
  }

  async stop(): Promise<void> {
    await run('ip', ['netns', 'exec', this.ns, '/usr/lib/frr/frrinit.sh', 'stop', this.name]).catch(() => undefined);
    fs.rmSync(this.etc, { recursive: true, force: true });
    fs.rmSync(`/var/run/frr/${this.name}`, { recursive: true, force: true });
  }
}

/** The next hops of `prefix` in the kernel table of `ns` (sorted), [] when there is no route. */
export async function kernelNextHops(ns: string, prefix: string): Promise<string[]> {
  const routes = JSON.parse(await inNs(ns, 'ip', '-j', 'route', 'show', prefix)) as Array<{
    gateway?: string;
    nexthops?: Array<{ gateway: string }>;
  }>;
  return routes.flatMap((r) => (r.nexthops ? r.nexthops.map((h) => h.gateway) : r.gateway ? [r.gateway] : [])).sort();
}

/** `ip monitor route` in `ns`: the time of the first change line naming `needle` after `since`. */
export class RouteMonitor {
  private readonly child: ChildProcess;
  private readonly seen: Array<{ at: number; line: string }> = [];

  private constructor(ns: string) {
    this.child = spawn('nsenter', [`--net=/var/run/netns/${ns}`, 'ip', 'monitor', 'route'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let rest = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      const at = performance.now();
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) this.seen.push({ at, line });
    });
  }

  /** Starts the monitor and returns once it sees a change (a marker route added and removed). */
  static async start(ns: string): Promise<RouteMonitor> {
    const monitor = new RouteMonitor(ns);
    const marker = '233.252.0.1'; // MCAST-TEST-NET, never a route otherwise
    await poll('ip monitor route to listen', async () => {
      await inNs(ns, 'ip', 'route', 'replace', 'blackhole', `${marker}/32`);
      await inNs(ns, 'ip', 'route', 'del', 'blackhole', `${marker}/32`);
      return monitor.seen.some((s) => s.line.includes(marker)) ? true : undefined;
    });
    return monitor;
  }

  /** Milliseconds from `since` (performance.now()) to the first line naming `needle` after it. */
  async firstChange(needle: string, since: number, timeoutMs: number): Promise<number> {
    const found = await poll(
      `a route change naming ${needle}`,
      async () => this.seen.find((s) => s.at >= since && s.line.includes(needle)),
      timeoutMs,
    );
    return found.at - since;
  }

  /**
   * Milliseconds from `since` to the last line naming `needle` seen before `until` (both
   * performance.now()): when a poll of the table saw the change at `until`, the moment the kernel
   * reported it. Throws when no such line was seen (the poll saw a change the monitor missed).
   */
  lastChange(needle: string, since: number, until: number): number {
    const found = this.seen.filter((s) => s.at >= since && s.at <= until && s.line.includes(needle)).pop();
    if (!found) throw new Error(`no route change naming ${needle} between the two moments`);
    return found.at - since;
  }

  /**
   * The changes naming `needle` seen between `since` and `until` (performance.now()), each with the
   * `nexthop via …` lines `ip monitor` prints under a multipath route, joined into one line.
   */
  changesWithNextHops(needle: string, since: number, until: number): string[] {
    const out: string[] = [];
    let current: string[] | undefined;
    for (const s of this.seen) {
      if (s.at < since || s.at > until) continue;
      if (current && /^\s+nexthop /.test(s.line)) current.push(s.line.trim());
      else {
        if (current) out.push(current.join(' '));
        current = s.line.includes(needle) ? [s.line.trim()] : undefined;
      }
    }
    if (current) out.push(current.join(' '));
    return out;
  }

  /** The change lines naming `needle` seen between `since` and `until` (performance.now()). */
  changes(needle: string, since: number, until: number): string[] {
    return this.seen.filter((s) => s.at >= since && s.at <= until && s.line.includes(needle)).map((s) => s.line);
  }

  stop(): void {
    this.child.kill('SIGTERM');
  }
}
