// What the router sees, measured the same way for every responder: ARP reply latency from a
// capture on the router's eth0 (numbered probes, paired as bench/arp does), replies per second
// under a trafgen request flood, and the CPU time a process used over a window.
import { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pairProbes, percentile, PROBE_OUI, readTimedPcap, TimedFrame } from '../arp/latency';
import { sleep } from '../../test/sleep';
import { cmd, inNetns } from '../../test/box/exec';
import { arpRequestPacket, captureArpTimed, trafgen } from '../tools';

const BATCH = 25;
const PROBE_GAP = '1ms';

export interface Prober {
  readonly router: string;
  readonly mac: string;
  /** The probes' sender address: not the router's own, so the nodes' entries for the router stay untouched. */
  readonly senderIp: string;
  readonly dir: string;
}

export interface Latency {
  micros: number[];
  lost: number;
}

/**
 * Paced, numbered probes for each target in turn (batches of 25, 1 ms apart, the first batch a
 * warm-up), one capture on the router's eth0 for all; each target's frames are paired on their own.
 */
export async function arpLatency(p: Prober, targets: string[], batches: number): Promise<Latency[]> {
  const file = path.join(p.dir, `latency-${Date.now()}.pcap`);
  let stderr = '';
  const tcpdump = captureArpTimed(p.router, 'eth0', file);
  tcpdump.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  try {
    for (const until = Date.now() + 10_000; !stderr.includes('listening on'); await sleep(20)) {
      if (Date.now() > until || tcpdump.exitCode !== null) throw new Error(`tcpdump did not start: ${stderr}`);
    }
    const hex = (b: number) => `0x${b.toString(16).padStart(2, '0')}`;
    for (let b = 0; b < batches + 1; b++) {
      for (let k = 0; k < targets.length; k++) {
        const target = targets[(k + b) % targets.length];
        let conf = '';
        for (let i = b * BATCH; i < (b + 1) * BATCH; i++)
          conf += arpRequestPacket(p.mac, p.senderIp, target, [...PROBE_OUI, i >> 8, i & 0xff].map(hex));
        const f = path.join(p.dir, 'probe.cfg');
        fs.writeFileSync(f, conf);
        const [bin, ...args] = trafgen('eth0', f, '-n', String(BATCH), '--gap', PROBE_GAP);
        await inNetns(p.router, bin, args);
      }
    }
    await sleep(1300); // libpcap's open block retires after 1 s
  } finally {
    await stop(tcpdump);
  }
  const frames = readTimedPcap(fs.readFileSync(file));
  fs.rmSync(file, { force: true });
  const clientMac = Buffer.from(p.mac.split(':').map((b) => Number.parseInt(b, 16)));
  return targets.map((t) => {
    const ip = Buffer.from(t.split('.').map(Number));
    const mine = frames.filter((f) => concerns(f, clientMac, ip));
    const r = pairProbes(mine, clientMac, ip, BATCH);
    return { micros: r.micros, lost: r.lost };
  });
}

/** A request from the router for `ip`, or an answer about `ip`. */
function concerns({ data }: TimedFrame, clientMac: Buffer, ip: Buffer): boolean {
  if (data.length < 42 || data.readUInt16BE(12) !== 0x0806) return false;
  const arp = data.subarray(14);
  return data.subarray(6, 12).equals(clientMac) ? arp.subarray(24, 28).equals(ip) : arp.subarray(14, 18).equals(ip);
}

async function rxPackets(router: string): Promise<number> {
  const [link] = JSON.parse(await inNetns(router, 'ip', ['-s', '-j', 'link', 'show', 'dev', 'eth0'])) as Array<{
    stats64: { rx: { packets: number } };
  }>;
  return link.stats64.rx.packets;
}

/** CPU time (user + system) of a process so far, in seconds. */
export function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ (100)
}

/** CPU seconds each pid used while `during` ran. */
export async function cpuDuring(
  pids: Record<string, number>,
  during: () => Promise<void>,
): Promise<Record<string, number>> {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  await during();
  return Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid) - before[k]]));
}

/** Broadcast requests for `target` from the router as fast as one trafgen core sends them, for `seconds`; replies per second seen on the router's eth0. */
export async function arpFlood(p: Prober, target: string, seconds: number): Promise<number> {
  const f = path.join(p.dir, 'flood.cfg');
  fs.writeFileSync(f, arpRequestPacket(p.mac, p.senderIp, target));
  const sentBefore = await rxPackets(p.router);
  const t0 = process.hrtime.bigint();
  // trafgen exits non-zero on SIGINT: the flood's end, not a failure.
  await cmd(
    'nsenter',
    [`--net=/var/run/netns/${p.router}`, 'timeout', '-s', 'INT', String(seconds), ...trafgen('eth0', f)],
    { timeoutMs: (seconds + 30) * 1000 },
  ).catch((e: Error) => {
    if (!/\(124\)|\(1\)/.test(e.message)) throw e;
  });
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  await sleep(500); // replies still queued in a userspace responder count too
  return ((await rxPackets(p.router)) - sentBefore) / elapsed;
}

export function summary(l: Latency): string {
  return `p50 ${percentile(l.micros, 50).toFixed(1)} µs, p99 ${percentile(l.micros, 99).toFixed(1)} µs, lost ${l.lost}/${l.micros.length + l.lost}`;
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGINT');
  });
}
