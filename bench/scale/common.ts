/**
 * Small pieces the bench/scale parts (and bench/controller) share: concurrency, addresses,
 * percentiles, a watch that counts objects in a state, a process's resident memory from /proc, the load.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { resourcePath, type ResourceType } from '../../runtime/kube/resources';
import type { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { sleep } from '../../test/sleep';

export const log = (line: string): void => void process.stdout.write(`${line}\n`);

/** A correctness failure: the run goes on to print what it measured, then exits non-zero. */
export const failures: string[] = [];
export function fail(message: string): void {
  failures.push(message);
  log(`FAIL: ${message}`);
}

/** Runs fn over 0..n-1 with `width` calls in flight. */
export async function forEachConcurrent(n: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

export function ipv4(base: string, offset: number): string {
  const [a, b, c, d] = base.split('.').map(Number);
  const n = ((a << 24) | (b << 16) | (c << 8) | d) + offset;
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
export const mib = (kib: number): string => `${(kib / 1024).toFixed(0)} MiB`;

export function duplicates(values: readonly string[]): string[] {
  const seen = new Set<string>();
  return [...new Set(values.filter((v) => (seen.has(v) ? true : (seen.add(v), false))))];
}

/**
 * Watches `type` in `namespace` from a fresh list and resolves `all` with the time at which
 * `count` objects satisfy `done` at once; `size()` is how many do now.
 */
export async function watchCount<T extends KubeObject>(
  rest: RestClient,
  type: ResourceType,
  namespace: string | undefined,
  count: number,
  done: (o: T) => boolean,
): Promise<{ all: Promise<number>; size: () => number; abort: () => void }> {
  const list = await rest.list<T>(type, { namespace });
  const inState = new Set(list.items.filter(done).map((o) => o.metadata?.name ?? ''));
  let resolve!: (t: number) => void;
  const all = new Promise<number>((r) => (resolve = r));
  if (inState.size >= count) resolve(Date.now());
  const handle = await rest.watch<T>(
    resourcePath(type, namespace),
    { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: false },
    (e) => {
      const name = e.object.metadata?.name ?? '';
      if (e.type !== 'DELETED' && done(e.object)) inState.add(name);
      else inState.delete(name);
      if (inState.size >= count) resolve(Date.now());
    },
  );
  void handle.done.then((err) => err && log(`watch on ${type.plural} ended: ${String(err)}`));
  return { all, size: () => inState.size, abort: handle.abort };
}

/** VmRSS and VmHWM (peak) of a process in KiB, or undefined once it is gone. */
export function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rss: field('VmRSS'), hwm: field('VmHWM') };
  } catch {
    return undefined; // exited: the last sample stands
  }
}

/** Samples a process's peak RSS every 250 ms until stopped (VmHWM dies with a SIGKILLed process). */
export function trackPeak(pid: number): { peak: () => number; stop: () => void } {
  let peak = 0;
  const sample = () => {
    const m = memoryOf(pid);
    if (m) peak = Math.max(peak, m.hwm);
  };
  sample();
  const timer = setInterval(sample, 250);
  return {
    peak: () => (sample(), peak),
    stop: () => clearInterval(timer),
  };
}

/** Waits until `check` returns a value, or throws after `timeoutMs` naming `what`. */
export async function waitUntil<T>(
  what: string,
  timeoutMs: number,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  intervalMs = 100,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out after ${seconds(timeoutMs)} waiting for ${what}`);
    await sleep(intervalMs);
  }
}

export { freePort } from '../../test/cluster/processes';

/** The load averages (1, 5, 15 min) as `a b c`, for the lines a bench prints. */
export const loadAverage = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
