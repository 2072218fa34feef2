// What the upstream router sees on a box, and a watch that proves "nothing changed" over a window:
// an ARP capture on the router's eth0 (tcpdump, read with the netns tests' pcap reader), the MACs
// answering an `arping`, the router's neighbour entry, and `kubectl get --watch` lines.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startTcpdump } from '../netns/ns-tools';
import { ARP_REPLY, ARP_REQUEST, parsePcap, type Frame } from '../netns/pcap';
import { cmd, inNetns } from './exec';

const BROADCAST = 'ff:ff:ff:ff:ff:ff';

export interface Running<T> {
  /** Ends the capture or watch and returns what it saw. */
  stop(): Promise<T>;
}

/** Starts capturing ARP on `ifname` of `netns`; resolves once tcpdump listens. */
export async function captureArp(netns: string, ifname = 'eth0'): Promise<Running<Frame[]>> {
  const file = path.join(os.tmpdir(), `juneau-box-arp-${randomBytes(4).toString('hex')}.pcap`);
  const tcpdump = await startTcpdump(netns, ifname, file, { filter: ['arp'] });
  return {
    stop: async () => {
      await tcpdump.stop();
      const frames = parsePcap(fs.readFileSync(file));
      fs.rmSync(file, { force: true });
      return frames;
    },
  };
}

/**
 * Gratuitous ARP for `address` (RFC 5227): an announcement (sender = target = address) or a reply
 * broadcast to the segment. Not an ordinary request from `address` for another host (the node's
 * kernel resolving the router to answer a connection to the VIP, with the VIP as its source).
 */
export const gratuitousFor = (frames: Frame[], address: string) =>
  frames.filter(
    (f) => f.arp && f.arp.sip === address && (f.arp.tip === address || (f.arp.op === ARP_REPLY && f.dst === BROADCAST)),
  );

/** The first broadcast request for `address` sent by `mac` (the router asking who has it). */
export const firstBroadcastAsk = (frames: Frame[], address: string, mac: string) =>
  frames.find(
    (f) => f.arp?.op === ARP_REQUEST && f.arp.tip === address && f.dst === BROADCAST && f.src.toLowerCase() === mac,
  );

/** What `count` broadcast ARP requests for an address were answered with, counted at the requester's eth0. */
export interface ArpAnswers {
  /** The requests for the address the capture saw leave the requester (`count`, unless its kernel asked too). */
  readonly requests: number;
  /** Every reply frame for the address, duplicates included. */
  readonly replies: number;
  /** Per MAC, how many of those requests it answered (at least once each). */
  readonly byMac: Readonly<Record<string, number>>;
}

/**
 * `count` ARP requests for `ip` from `netns`, every one broadcast (`arping -b`: without it iputils
 * arping goes unicast to the first MAC that answered, so the others are never asked again), one a
 * second, and every reply to each of them, counted from a capture of the requester's eth0 (not from
 * what arping prints). Without `-w` arping sends all `count` requests and waits a second after the
 * last. Throws unless arping says it broadcast all `count` (its exit status 1 means "no reply" and
 * "bad argument" alike).
 */
export async function arpAnswers(netns: string, ip: string, count = 3): Promise<ArpAnswers> {
  const requester = await macOf(netns);
  const capture = await captureArp(netns);
  let frames: Frame[] = [];
  let out: string;
  try {
    out = await cmd('nsenter', [
      `--net=/var/run/netns/${netns}`,
      'sh',
      '-c',
      `arping -b -c ${count} -I eth0 ${ip} 2>&1 || true`,
    ]);
  } finally {
    frames = await capture.stop();
  }
  if (!out.includes(`Sent ${count} probes (${count} broadcast(s))`))
    throw new Error(`arping of ${ip} from ${netns} did not broadcast ${count} requests: ${out}`);
  const probes = repliesPerRequest(frames, requester, ip);
  if (probes.length < count)
    throw new Error(`the capture in ${netns} saw ${probes.length} of arping's ${count} requests for ${ip}`);
  const byMac: Record<string, number> = {};
  for (const p of probes) for (const mac of p.macs) byMac[mac] = (byMac[mac] ?? 0) + 1;
  const replies = frames.filter((f) => f.arp?.op === ARP_REPLY && f.arp.sip === ip).length;
  return { requests: probes.length, replies, byMac };
}

/** The distinct MACs answering `count` broadcast ARP requests for `ip` from `netns` (every reply to every request, see `arpAnswers`). */
export async function answeringMacs(netns: string, ip: string, count = 3): Promise<string[]> {
  return Object.keys((await arpAnswers(netns, ip, count)).byMac);
}

/** The MAC of `ifname` in the network namespace `netns`. */
export async function macOf(netns: string, ifname = 'eth0'): Promise<string> {
  const [link] = JSON.parse(await inNetns(netns, 'ip', ['-j', 'link', 'show', 'dev', ifname])) as Array<{
    address: string;
  }>;
  return link.address;
}

/** The node each eth0 MAC belongs to, to name what the router cached or heard. */
export async function nodesByMac(box: {
  readonly nodes: ReadonlyArray<{ readonly name: string; readonly netns: string }>;
}): Promise<Map<string, string>> {
  return new Map(await Promise.all(box.nodes.map(async (n) => [await macOf(n.netns), n.name] as const)));
}

/** The MAC of the router's neighbour entry for `ip` (kept by the kernel with its default timers), if any. */
export async function neighbourMac(netns: string, ip: string): Promise<string | undefined> {
  const entries = JSON.parse(await inNetns(netns, 'ip', ['-j', 'neigh', 'show', 'to', ip, 'dev', 'eth0'])) as Array<{
    lladdr?: string;
  }>;
  return entries[0]?.lladdr?.toLowerCase();
}

/**
 * `kubectl get <args> --watch` until stopped. Resolves once the list part is printed (`listed`
 * lines, one per object that exists now), so every later line is a change made after the call.
 */
export async function watchLines(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  listed: number,
): Promise<Running<string[]>> {
  const child = spawn(kubectl, [`--kubeconfig=${kubeconfig}`, 'get', ...args, '--watch', '--no-headers'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const lines = () => out.split('\n').filter(Boolean);
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  await new Promise<void>((resolve, reject) => {
    const check = () => lines().length >= listed && resolve();
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      check();
    });
    child.once('exit', (code) => reject(new Error(`kubectl get ${args.join(' ')} --watch exited ${code}: ${err}`)));
    check();
  });
  return {
    stop: async () => {
      if (child.exitCode !== null)
        throw new Error(`kubectl get ${args.join(' ')} --watch ended during the window (${child.exitCode}): ${err}`);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      return lines().slice(listed);
    },
  };
}

/** One ARP request for an address and the replies that followed it. */
export interface Probe {
  /** When the request was captured (ms since the epoch, this host's clock). */
  readonly at: number;
  /** Every distinct MAC that answered it, in the order heard. */
  readonly macs: string[];
}

/**
 * Splits a capture into probes: each ARP request from `requester` (a MAC) for `address` opens one,
 * and every reply for `address` heard before the next request belongs to it. An honest count of who
 * answers needs all the replies, not the first one a tool prints.
 */
export function repliesPerRequest(frames: readonly Frame[], requester: string, address: string): Probe[] {
  const probes: Array<{ at: number; macs: string[] }> = [];
  for (const f of frames) {
    if (!f.arp) continue;
    if (f.arp.op === ARP_REQUEST && f.arp.tip === address && f.arp.sha.toLowerCase() === requester)
      probes.push({ at: f.timeMs, macs: [] });
    else if (f.arp.op === ARP_REPLY && f.arp.sip === address && probes.length) {
      const mac = f.arp.sha.toLowerCase();
      const current = probes[probes.length - 1];
      if (!current.macs.includes(mac)) current.macs.push(mac);
    }
  }
  return probes;
}
