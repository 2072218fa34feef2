/**
 * SEC-4: the NAT loop in its own process, so that a NAT failure cannot stop ARP answering. The NAT
 * loop's informers (ElasticIPs, attachments, NetworkInterfaces, Nodes) hold objects tenants write;
 * one tenant's oversized objects could OOM the process that holds them. The agent (the ARP loop,
 * the Lease and the FO-2 heartbeat) therefore forks the NAT loop as a child: the same program and
 * arguments with `--nat-child`, under a V8 heap limit of `--nat-max-heap` MiB, so a NAT heap
 * exhaustion ends the child only. The agent restarts it with backoff; the NAT filters and maps stay
 * attached and pinned meanwhile (they outlive any process), so translation goes on with what the
 * maps hold. The child exits when the agent does (its IPC channel closes).
 *
 * The protocol over the IPC channel, child to agent: `attached` (NAT filters on), `unavailable`
 * (the NAT programs could not be attached: the node translates nothing, not retried, as before
 * SEC-4), `reconciled` (first pass written), `served` (BGP-4: the ElasticIPs the maps serve and
 * the NATGateways the node is the gateway of, after the first pass and whenever they change), `metrics` (the answer to a `metrics` request: the NAT
 * metrics' exposition text). Agent to child: `metrics`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { Logger } from '../kube/log';
import type { ServedAddress } from './nat/desired';

/** Exit code of a child whose NAT programs could not be attached: not restarted. */
export const NAT_UNAVAILABLE_EXIT = 3;

export type ChildMessage =
  | { readonly type: 'attached' }
  | { readonly type: 'unavailable' }
  | { readonly type: 'reconciled' }
  | { readonly type: 'served'; readonly addresses: readonly ServedAddress[] }
  | { readonly type: 'metrics'; readonly text: string };

export type ParentMessage = { readonly type: 'metrics' };

export interface NatProcessOptions {
  /** The agent's own arguments; the child gets them and `--nat-child`. */
  readonly argv: readonly string[];
  /** The child's V8 old-space limit (--max-old-space-size), MiB. */
  readonly maxHeapMiB: number;
  readonly logger: Logger;
  /** The script to fork. @default process.argv[1], this program */
  readonly script?: string;
  /** First restart delay; doubled per quick exit up to maxRestartDelayMs. @default 1000 */
  readonly restartDelayMs?: number;
  /** @default 30000 */
  readonly maxRestartDelayMs?: number;
}

/** A child that ran this long before exiting restarts after the first delay again. */
const STABLE_MS = 60_000;

/** The agent's side: forks, watches, restarts and stops the NAT child. */
export class NatProcess {
  private child: ChildProcess | undefined;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private startedAt = 0;
  private pendingMetrics: Array<(text: string) => void> = [];
  /** The NAT filters were attached by a child at least once. */
  attached = false;
  /** A child wrote its first pass at least once (the maps hold a pass's result since). */
  reconciledOnce = false;
  /** The NAT programs could not be attached: nothing to supervise. */
  unavailable = false;
  /** Children that ended other than by stop(), for the test and the log. */
  exits = 0;
  private servedListeners: Array<() => void> = [];
  private servedNow: readonly ServedAddress[] | undefined;
  private markReady: () => void = () => undefined;
  /** Resolves once a child wrote its first pass, or the NAT programs proved unavailable. */
  readonly ready = new Promise<void>((resolve) => (this.markReady = resolve));

  constructor(private readonly options: NatProcessOptions) {
    this.delayMs = options.restartDelayMs ?? 1_000;
  }

  /**
   * BGP-4: the ElasticIPs this node serves and its NATGateways, as the last child reported them;
   * undefined until a child has (a restarted agent must not withdraw what BIRD announces before it knows),
   * [] once the NAT programs proved unavailable. A child that exits leaves them as they were: the
   * pinned maps keep translating what they hold.
   */
  get served(): readonly ServedAddress[] | undefined {
    return this.servedNow;
  }

  /** Called after `served` changed. */
  onServedChange(listener: () => void): void {
    this.servedListeners.push(listener);
  }

  private setServed(served: readonly ServedAddress[]): void {
    this.servedNow = served;
    for (const listener of this.servedListeners) listener();
  }

  /** The running child's pid, if any. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    this.stopping = false;
    this.spawn();
  }

  private spawn(): void {
    const script = this.options.script ?? process.argv[1];
    const child = fork(script, [...this.options.argv, '--nat-child'], {
      execArgv: [...process.execArgv, `--max-old-space-size=${this.options.maxHeapMiB}`],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child = child;
    this.startedAt = Date.now();
    this.options.logger.info('NAT loop started in its own process', {
      pid: child.pid,
      maxHeapMiB: this.options.maxHeapMiB,
    });
    child.on('message', (message: ChildMessage) => this.receive(message));
    child.once('exit', (code, signal) => this.exited(child, code, signal));
  }

  private receive(message: ChildMessage): void {
    if (message.type === 'attached') this.attached = true;
    else if (message.type === 'unavailable') this.becameUnavailable();
    else if (message.type === 'reconciled') this.reconciledOnce = true;
    else if (message.type === 'served') this.setServed(message.addresses);
    else if (message.type === 'metrics') for (const answer of this.pendingMetrics.splice(0)) answer(message.text);
    if (this.unavailable || this.reconciledOnce) this.markReady();
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child === child) this.child = undefined;
    for (const answer of this.pendingMetrics.splice(0)) answer('');
    if (this.stopping) return;
    if (code === NAT_UNAVAILABLE_EXIT || this.unavailable) {
      this.becameUnavailable();
      this.markReady();
      this.options.logger.error('NAT programs not attached: this node translates no ElasticIP', { code });
      return;
    }
    this.exits++;
    const ranMs = Date.now() - this.startedAt;
    if (ranMs >= STABLE_MS) this.delayMs = this.options.restartDelayMs ?? 1_000;
    const delayMs = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.options.maxRestartDelayMs ?? 30_000);
    this.options.logger.error(
      'NAT process exited; ARP answering goes on, the NAT maps keep translating what they hold, restarting it',
      { code, signal, ranMs, restartInMs: delayMs, exits: this.exits },
    );
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.stopping) this.spawn();
    }, delayMs);
  }

  /** Nothing is translated on this node, so nothing of it is announced (BGP-4, BGP-5). */
  private becameUnavailable(): void {
    this.unavailable = true;
    if (this.servedNow?.length !== 0) this.setServed([]);
  }

  /** The child's NAT metrics, as exposition text; '' when no child answers within a second. */
  metricsText(): Promise<string> {
    const child = this.child;
    if (!child?.connected) return Promise.resolve('');
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(''), 1_000);
      const done = (text: string) => {
        clearTimeout(timer);
        this.pendingMetrics = this.pendingMetrics.filter((a) => a !== done);
        resolve(text);
      };
      this.pendingMetrics.push(done);
      child.send({ type: 'metrics' } satisfies ParentMessage, (err) => err && done(''));
    });
  }

  /** Stops the child (SIGTERM, then SIGKILL after `graceMs`) and restarts no more. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** The child's side of the channel: what it tells the agent, and the agent's metrics requests. */
export class NatChildChannel {
  constructor(private readonly metrics: () => Promise<string>) {
    process.on('message', (message: ParentMessage) => {
      if (message.type === 'metrics')
        void this.metrics().then(
          (text) => this.send({ type: 'metrics', text }),
          () => this.send({ type: 'metrics', text: '' }),
        );
    });
  }

  send(message: ChildMessage): void {
    if (process.connected) process.send?.(message);
  }

  /** Resolves when the agent is gone (its end of the channel closed). */
  static parentGone(): Promise<void> {
    return new Promise((resolve) => {
      if (!process.connected) resolve();
      else process.once('disconnect', () => resolve());
    });
  }
}

/** Only the exposition lines of the metric families named `prefix…` (one of `prefixes`): the
 * child's registry also holds the shared metrics every component registers, which the agent
 * exposes itself. */
export function familiesWithPrefix(text: string, prefixes: readonly string[]): string {
  const kept = text.split('\n').filter((line) => {
    const name = line.startsWith('# ') ? line.split(' ')[2] : line.split(/[{ ]/)[0];
    return name !== undefined && prefixes.some((p) => name.startsWith(p));
  });
  return kept.length > 0 ? `${kept.join('\n')}\n` : '';
}
