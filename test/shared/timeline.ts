// The failover breakdowns (FO-1, FO-3): when each step of a failover became visible, by one clock (this process's
// Date.now(), which is also the clock of tcpdump's timestamps on this host). A step of the API is
// seen through a watch opened before the action, so its time is when the API server delivered the
// change (a poll would add up to its interval); a step on the wire is a frame's capture time.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { Frame } from '../netns/pcap';

const execFileAsync = promisify(execFile);

/**
 * Resolves with the time the first watch event on `path` whose object satisfies `matches` arrived.
 * The returned promise `ready` resolves once the watch is open (start the action after it).
 */
export function firstWatchEvent(
  kc: KubeConfig,
  path: string,
  matches: (obj: any) => boolean,
): { ready: Promise<void>; at: Promise<number>; stop: () => void } {
  let controller: AbortController | undefined;
  let stopped = false;
  let resolveAt!: (t: number) => void;
  let rejectAt!: (err: unknown) => void;
  const at = new Promise<number>((resolve, reject) => {
    resolveAt = resolve;
    rejectAt = reject;
  });
  const ready = new Watch(kc)
    .watch(
      path,
      {},
      (_type, obj) => {
        if (matches(obj)) resolveAt(Date.now());
      },
      (err) => {
        if (!stopped) rejectAt(new Error(`watch ${path} ended before the awaited change: ${String(err)}`));
      },
    )
    .then((c) => {
      controller = c;
    });
  return {
    ready,
    at,
    stop: () => {
      stopped = true;
      controller?.abort();
    },
  };
}

/** The RFC 5227 frames one node sent for `vip` on the router's segment, with their capture times. */
export function handoverFrames(
  frames: readonly Frame[],
  vip: string,
  mac: string,
): { probes: number[]; announcements: number[] } {
  const from = frames.filter((f) => f.arp?.op === 1 && f.arp.sha.toLowerCase() === mac && f.arp.tip === vip);
  return {
    probes: from.filter((f) => f.arp!.sip === '0.0.0.0').map((f) => f.timeMs),
    announcements: from.filter((f) => f.arp!.sip === vip).map((f) => f.timeMs),
  };
}

/** "+0.123 s" from `t0`, for breakdown lines. */
export function after(t0: number, t: number | undefined): string {
  return t === undefined ? 'not seen' : `${((t - t0) / 1000).toFixed(3)} s`;
}

/**
 * When the neighbour entry of `address` in network namespace `ns` first names `mac`, by iproute2's
 * own timestamps of the kernel's notifications (`ip -ts monitor neigh`, local time of this host):
 * the moment the router's path switches, independent of how often a test connects. `ready`
 * resolves once the monitor is proven to listen (it saw a throwaway entry on `dev` come and go).
 */
export function neighbourChange(
  ns: string,
  dev: string,
  address: string,
  mac: string,
): { ready: Promise<void>; at: Promise<number>; stop: () => void } {
  const marker = '198.51.100.254';
  const child = spawn('nsenter', [`--net=/var/run/netns/${ns}`, 'ip', '-ts', 'monitor', 'neigh'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let resolveReady!: () => void;
  let rejectReady!: (err: unknown) => void;
  let resolveAt!: (t: number) => void;
  let rejectAt!: (err: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  const at = new Promise<number>((resolve, reject) => {
    resolveAt = resolve;
    rejectAt = reject;
  });
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const m = /^\[([0-9T:.-]+)\] (?:Deleted )?(\S+) dev \S+ (?:lladdr (\S+))?/.exec(line);
      if (!m) continue;
      if (m[2] === marker) resolveReady();
      else if (m[2] === address && m[3]?.toLowerCase() === mac.toLowerCase()) resolveAt(localMs(m[1]));
    }
  });
  let stopped = false;
  child.once('exit', () => {
    const err = new Error(`ip monitor neigh in ${ns} ended before ${address} named ${mac}`);
    rejectReady(err);
    if (!stopped) rejectAt(err);
  });
  const ip = (...args: string[]) => execFileAsync('nsenter', [`--net=/var/run/netns/${ns}`, 'ip', ...args]);
  // The monitor subscribes some time after the spawn: poke (one at a time) until it saw the marker.
  let listening = false;
  void ready.then(() => (listening = true));
  void (async () => {
    while (!listening && !stopped) {
      await ip('neigh', 'replace', marker, 'lladdr', '02:00:00:00:00:fe', 'dev', dev, 'nud', 'stale');
      await ip('neigh', 'del', marker, 'dev', dev);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })().catch(rejectReady);
  return {
    ready,
    at,
    stop: () => {
      stopped = true;
      child.kill();
    },
  };
}

/** ms since the epoch of iproute2's local `2026-12-01T02:46:27.346521`, keeping the microseconds (Date drops them). */
function localMs(stamp: string): number {
  const [whole, fraction = '0'] = stamp.split('.');
  return new Date(whole).getTime() + Number(`0.${fraction}`) * 1000;
}

/** The first line of an agent's JSON log (its text) at or after `since` (ms since the epoch) that `matches`, and its time. */
export function firstLogLine(log: string, since: number, matches: (line: any) => boolean): number | undefined {
  for (const text of log.split('\n')) {
    if (!text.startsWith('{')) continue;
    const line = JSON.parse(text);
    const t = new Date(line.ts).getTime();
    if (t >= since && matches(line)) return t;
  }
  return undefined;
}
