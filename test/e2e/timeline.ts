// Issue 15's breakdowns: when each step of a failover became visible, by one clock (this process's
// Date.now(), which is also the clock of tcpdump's timestamps on this host). A step of the API is
// seen through a watch opened before the action, so its time is when the API server delivered the
// change (a poll would add up to its interval); a step on the wire is a frame's capture time.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { Frame } from '../netns/pcap';

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
