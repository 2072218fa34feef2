// ARP replies per second and reply latency on one rig, side by side (bench/README.md). Not a
// test: prints numbers.
//
//   sudo npx tsx bench/arp/run.ts [seconds-per-run=3] [rounds=5] [probes-per-round=500]
//
// Rig: test/netns/rig.ts with one node namespace per variant, each on its own veth to the
// client namespace, all prepared up front. Rate: trafgen sends broadcast ARP requests for one
// address from the client's side of a node's veth, on one CPU, as fast as it can; the replies
// are the frames arriving back on that veth end (rx_packets), counted once trafgen is up to speed,
// in slices that take the variants in turn. Latency: trafgen sends numbered
// requests one millisecond apart, in batches that take the variants in turn, while tcpdump
// captures every client-side veth end; each request is paired with its own reply by kernel
// timestamps (latency.ts), giving p50/p99.
// Variants, interleaved (latency batch by batch, floods round by round with the order rotating)
// so drift hits them all alike:
//   kernel  - the address on the node's eth0, no XDP: Linux's own ARP
//   noop    - the same, with a no-op XDP program (xdp_pass) on eth0: the cost of the XDP hook
//   juneau  - the address in external_arp_table, answered by xdp_arp
//   reflect - xdp_reflect sends every frame straight back: the rig's ceiling
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sleep } from '../../test/sleep';
import { CLIENT_IP, Rig, SUBNET, XDP_PASS_OBJECT } from '../../test/netns/rig';
import { pairProbes, percentile, PROBE_OUI, readTimedPcap } from './latency';
import { arpRequestPacket, captureArpTimed, clangBpf, trafgen } from '../tools';

const VIP = `${SUBNET}.50`;
const SECONDS = Number(process.argv[2] ?? 3);
const ROUNDS = Number(process.argv[3] ?? 5);
const PROBES = Number(process.argv[4] ?? 500);
const BATCH = 25; // probes per turn of a variant; each variant's first batch is a warm-up, left out
const PROBE_GAP = '1ms';

type Variant = 'kernel' | 'noop' | 'juneau' | 'reflect';
const VARIANTS: Variant[] = ['kernel', 'noop', 'juneau', 'reflect'];

function buildReflect(dir: string): string {
  return clangBpf(path.join(__dirname, 'xdp_reflect.bpf.c'), path.join(dir, 'xdp_reflect.bpf.o'));
}

/** A trafgen packet: broadcast ARP request "who has VIP, tell CLIENT_IP" from `mac`, with
 * `sha` (default `mac`) as the sender hardware address. */
const trafgenConfig = (mac: string, sha?: string[]) => arpRequestPacket(mac, CLIENT_IP, VIP, sha);

/** Numbered requests `first`.. `first + count - 1`, sent in this order by trafgen: probe i has
 * the sender hardware address 02:00:00:00:hi:lo, which every responder echoes back (latency.ts). */
function probeConfig(mac: string, first: number, count: number): string {
  const hex = (b: number) => `0x${b.toString(16).padStart(2, '0')}`;
  let config = '';
  for (let i = first; i < first + count; i++) config += trafgenConfig(mac, [...PROBE_OUI, i >> 8, i & 0xff].map(hex));
  return config;
}

async function rxPackets(rig: Rig, i: number): Promise<number> {
  const [link] = JSON.parse(await rig.in(rig.client, 'ip', '-s', '-j', 'link', 'show', 'dev', rig.port(i))) as Array<{
    stats64: { rx: { packets: number } };
  }>;
  return link.stats64.rx.packets;
}

/** Node i answers the way `variant` does, for the whole run. */
async function prepare(rig: Rig, i: number, variant: Variant, reflectObject: string): Promise<void> {
  const node = rig.node(i);
  // The node must not resolve the client with ARP traffic of its own during a run.
  await rig.in(node, 'ip', 'neigh', 'replace', CLIENT_IP, 'lladdr', rig.clientMac, 'dev', 'eth0', 'nud', 'permanent');
  // Off the client's bridge (a reply to a probe address would be flooded to the other nodes),
  // and with ARP off, so the client's kernel drops every frame that comes back at the first check
  // in arp_rcv whatever it is (a reply, a reflected request): only the node's side differs.
  await rig.in(rig.client, 'ip', 'link', 'set', 'dev', rig.port(i), 'nomaster', 'arp', 'off');
  if (variant === 'kernel' || variant === 'noop') await rig.in(node, 'ip', 'addr', 'add', `${VIP}/32`, 'dev', 'eth0');
  // Generic XDP: native veth XDP needs an XDP program on the sender's side too.
  if (variant === 'noop') await rig.attachObject(node, 'eth0', XDP_PASS_OBJECT, 'xdp_pass', 'generic');
  if (variant === 'reflect') await rig.attachObject(node, 'eth0', reflectObject, 'xdp_reflect', 'generic');
  if (variant === 'juneau') {
    await rig.attach(i, { mode: 'generic' });
    rig.maps(i).syncAddresses([VIP]);
  }
}

interface Sample {
  readonly repliesPerSecond: number;
  /** Average time inside the XDP program per packet (kernel.bpf_stats_enabled); NaN without XDP. */
  readonly nsPerPacket: number;
  /** Request-to-reply times of the paced probes, microseconds. */
  readonly micros: number[];
  readonly lost: number;
}

async function programStats(rig: Rig, i: number): Promise<{ runTimeNs: number; runCount: number } | undefined> {
  const id = await rig.xdpProgramId(i);
  if (!id) return undefined;
  const info = JSON.parse(execFileSync('bpftool', ['-j', 'prog', 'show', 'id', String(id)], { encoding: 'utf8' })) as {
    run_time_ns?: number;
    run_cnt?: number;
  };
  return { runTimeNs: info.run_time_ns ?? 0, runCount: info.run_cnt ?? 0 };
}

/**
 * One latency round: a capture on every node's port, then batches of numbered probes, one
 * millisecond apart, taking the variants in turn batch by batch, so that whatever else the
 * machine does lands on all of them alike.
 */
async function measureLatency(
  rig: Rig,
  probeConfigs: string[][],
  dir: string,
  round: number,
): Promise<Array<{ micros: number[]; lost: number }>> {
  const captures = VARIANTS.map((variant, i) => ({
    file: path.join(dir, `r${round}-${variant}.pcap`),
    port: rig.port(i),
    stderr: '',
  }));
  const tcpdumps = captures.map((c) => {
    const child = captureArpTimed(rig.client, c.port, c.file);
    child.stderr!.on('data', (chunk: Buffer) => (c.stderr += chunk.toString()));
    return child;
  });
  try {
    await Promise.all(
      tcpdumps.map((t, i) => waitFor(t, () => captures[i].stderr.includes('listening on'), 'tcpdump did not start')),
    );
    for (let batch = 0; batch < probeConfigs[0].length; batch++) {
      for (let k = 0; k < VARIANTS.length; k++) {
        const i = (k + batch) % VARIANTS.length;
        const config = probeConfigs[i][batch];
        await rig.in(rig.client, ...trafgen(rig.port(i), config, '-n', String(BATCH), '--gap', PROBE_GAP));
      }
    }
    await sleep(1300); // a block still open at SIGINT is lost: let the last one retire (1 s)
  } finally {
    await Promise.all(tcpdumps.map(stop));
  }
  const vip = Buffer.from(VIP.split('.').map(Number));
  const results: Array<{ micros: number[]; lost: number }> = [];
  for (let i = 0; i < VARIANTS.length; i++) {
    const { file, stderr } = captures[i];
    const dropped = /(\d+) packets? dropped by kernel/.exec(stderr);
    if (dropped && dropped[1] !== '0')
      console.warn(`  ${VARIANTS[i]}: tcpdump dropped ${dropped[1]} frames; probes it missed count as lost`);
    const clientMac = Buffer.from(
      (await rig.mac(rig.client, rig.port(i))).split(':').map((b) => Number.parseInt(b, 16)),
    );
    const { micros } = pairProbes(readTimedPcap(fs.readFileSync(file)), clientMac, vip, BATCH);
    results.push({ micros, lost: PROBES - micros.length });
    fs.rmSync(file, { force: true });
  }
  return results;
}

function waitFor(child: ChildProcess, ready: () => boolean, message: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (ready()) done(undefined);
    }, 20);
    const deadline = setTimeout(() => done(new Error(message)), 10_000);
    const onExit = (code: number | null) => done(new Error(`${message}: exited (${code})`));
    child.once('exit', onExit);
    function done(err: Error | undefined) {
      clearInterval(timer);
      clearTimeout(deadline);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve();
    }
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGINT');
  });
}

/** Slices a round's flood time is cut into, per variant: the variants' slices alternate, so that
 * what the machine's other jobs do during a round lands on all of them alike. */
const SLICES = 3;
const WARMUP_MS = 250; // trafgen's start (ring setup, first frames) is left out of every slice

interface Reading {
  readonly rx: number;
  readonly at: bigint;
  readonly stats?: { runTimeNs: number; runCount: number };
}

async function reading(rig: Rig, i: number): Promise<Reading> {
  const stats = await programStats(rig, i);
  const rx = await rxPackets(rig, i);
  return { rx, at: process.hrtime.bigint(), stats };
}

/** A flood at node i for `seconds` once trafgen is up to speed: the replies counted on the
 * client's port between two readings, and the program's time over the same packets. */
async function floodSlice(
  rig: Rig,
  i: number,
  config: string,
  seconds: number,
): Promise<{ replies: number; seconds: number; runTimeNs: number; runCount: number }> {
  // trafgen stops on its own (timeout's SIGINT reaches it as the command it runs), a second after
  // the slice's last reading.
  const stopAfter = (WARMUP_MS / 1000 + seconds + 1).toFixed(2);
  const flood = spawn(
    'nsenter',
    [`--net=/var/run/netns/${rig.client}`, 'timeout', '-s', 'INT', stopAfter, ...trafgen(rig.port(i), config)],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => flood.once('exit', () => resolve()));
  try {
    await sleep(WARMUP_MS);
    if (flood.exitCode !== null) throw new Error(`trafgen exited (${flood.exitCode}) before the flood`);
    const before = await reading(rig, i);
    await sleep(seconds * 1000);
    const after = await reading(rig, i);
    return {
      replies: after.rx - before.rx,
      seconds: Number(after.at - before.at) / 1e9,
      runTimeNs: (after.stats?.runTimeNs ?? 0) - (before.stats?.runTimeNs ?? 0),
      runCount: (after.stats?.runCount ?? 0) - (before.stats?.runCount ?? 0),
    };
  } finally {
    await exited;
  }
}

/** One round's floods: SECONDS per variant in SLICES slices, the variants taking turns slice by
 * slice (the order rotating with the round and the slice). */
async function measureRates(
  rig: Rig,
  configs: string[],
  round: number,
): Promise<Array<Pick<Sample, 'repliesPerSecond' | 'nsPerPacket'>>> {
  const sums = VARIANTS.map(() => ({ replies: 0, seconds: 0, runTimeNs: 0, runCount: 0 }));
  for (let slice = 0; slice < SLICES; slice++) {
    for (let k = 0; k < VARIANTS.length; k++) {
      const i = (k + round - 1 + slice) % VARIANTS.length;
      const got = await floodSlice(rig, i, configs[i], SECONDS / SLICES);
      for (const key of ['replies', 'seconds', 'runTimeNs', 'runCount'] as const) sums[i][key] += got[key];
      await sleep(200); // let the node's backlog drain before the next flood
    }
  }
  return sums.map((t, i) => ({
    repliesPerSecond: t.replies / t.seconds,
    // No XDP program (kernel): NaN. A round whose counters did not move (kernel.bpf_stats_enabled
    // switched off by another job meanwhile) is NaN too, not 0.
    nsPerPacket: VARIANTS[i] === 'kernel' || t.runCount === 0 ? Number.NaN : t.runTimeNs / t.runCount,
  }));
}

/** Turns on kernel.bpf_stats_enabled (run time per program) for the run; returns the restorer. */
function enableBpfStats(): () => void {
  const file = '/proc/sys/kernel/bpf_stats_enabled';
  const previous = fs.readFileSync(file, 'utf8').trim();
  fs.writeFileSync(file, '1');
  return () => fs.writeFileSync(file, previous);
}

async function main(): Promise<void> {
  if (PROBES % BATCH !== 0) throw new Error(`probes-per-round must be a multiple of ${BATCH}`);
  // One node namespace per variant, each on its own veth to the client namespace, prepared once:
  // switching between variants is then only a matter of which port the client sends on.
  const rig = new Rig(VARIANTS.length);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-bench-'));
  try {
    await rig.setup();
    const reflectObject = buildReflect(dir);
    for (let i = 0; i < VARIANTS.length; i++) await prepare(rig, i, VARIANTS[i], reflectObject);
    const floodConfigs: string[] = [];
    const probeConfigs: string[][] = []; // [variant][batch]; batch 0 is the warm-up
    for (let i = 0; i < VARIANTS.length; i++) {
      const mac = await rig.mac(rig.client, rig.port(i));
      floodConfigs.push(path.join(dir, `flood-${i}.cfg`));
      fs.writeFileSync(floodConfigs[i], trafgenConfig(mac));
      probeConfigs.push([]);
      for (let batch = 0; batch <= PROBES / BATCH; batch++) {
        probeConfigs[i].push(path.join(dir, `probes-${i}-${batch}.cfg`));
        fs.writeFileSync(probeConfigs[i][batch], probeConfig(mac, batch * BATCH, BATCH));
      }
    }
    const results = new Map<Variant, Sample[]>(VARIANTS.map((v) => [v, []]));
    const restoreStats = enableBpfStats();
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        const latency = await measureLatency(rig, probeConfigs, dir, round);
        const rates = await measureRates(rig, floodConfigs, round);
        for (let i = 0; i < VARIANTS.length; i++) {
          const variant = VARIANTS[i];
          const sample = { ...rates[i], ...latency[i] };
          results.get(variant)!.push(sample);
          const ns = Number.isNaN(sample.nsPerPacket) ? '' : `, ${sample.nsPerPacket.toFixed(0)} ns/packet in XDP`;
          console.log(
            `round ${round} ${variant.padEnd(8)} ${Math.round(sample.repliesPerSecond).toLocaleString('en').padStart(10)} replies/s` +
              `, p50 ${us(percentile(sample.micros, 50))} p99 ${us(percentile(sample.micros, 99))} µs (${sample.micros.length} probes, ${sample.lost} lost)${ns}`,
          );
        }
      }
    } finally {
      restoreStats();
    }
    report(results);
  } finally {
    await rig.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function us(x: number): string {
  return Number.isNaN(x) ? '-' : x.toFixed(1);
}

function report(results: Map<Variant, Sample[]>): void {
  const m = (v: Variant) => median(results.get(v)!.map((s) => s.repliesPerSecond));
  const ns = (v: Variant) => median(results.get(v)!.map((s) => s.nsPerPacket));
  // Latency: all rounds' probes pooled (they were interleaved batch by batch, so pooling is fair).
  const p = (v: Variant, q: number) =>
    percentile(
      results.get(v)!.flatMap((s) => s.micros),
      q,
    );
  const count = (v: Variant) => results.get(v)!.reduce((n, s) => n + s.micros.length, 0);
  const lost = (v: Variant) => results.get(v)!.reduce((n, s) => n + s.lost, 0);
  console.log(
    `\n${ROUNDS} round(s): replies/s the median over rounds of ${SECONDS}s of flood per variant in ${SLICES} interleaved slices; latency over all ${ROUNDS * PROBES} probes per variant,` +
      ` ${PROBE_GAP} apart; generic XDP on a veth, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}`,
  );
  console.log(`  variant   replies/s   p50 µs   p99 µs   answered/lost   ns/packet in XDP`);
  for (const v of VARIANTS) {
    const inXdp = Number.isNaN(ns(v)) ? '-' : ns(v).toFixed(0);
    console.log(
      `  ${v.padEnd(8)} ${Math.round(m(v)).toLocaleString('en').padStart(10)} ${us(p(v, 50)).padStart(8)} ${us(p(v, 99)).padStart(8)}` +
        `   ${`${count(v)}/${lost(v)}`.padStart(13)}   ${inXdp}`,
    );
  }
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  // Round by round, juneau against the reflector of the same round (issue 32: the cost per reply
  // and the replies/s, each a ratio in one round; the goal takes the median of the cost ratios and
  // every round's replies/s ratio).
  const juneau = results.get('juneau')!;
  const reflect = results.get('reflect')!;
  const costRatios = juneau.map((s, r) => s.nsPerPacket / reflect[r].nsPerPacket);
  const rateRatios = juneau.map((s, r) => s.repliesPerSecond / reflect[r].repliesPerSecond);
  console.log(
    `per round, juneau / reflect: ns/packet in XDP ${costRatios.map((x) => x.toFixed(2)).join(' ')}` +
      ` (median ${median(costRatios).toFixed(2)}), replies/s ${rateRatios.map((x) => x.toFixed(2)).join(' ')}` +
      ` (lowest ${Math.min(...rateRatios).toFixed(2)})`,
  );
  console.log(`per reply: ${median(costRatios).toFixed(2)}x the reflector`);
  console.log('ratios (replies/s: higher is better; latency: lower is better):');
  for (const [base, note] of [
    ['kernel', ''],
    ['noop', '   (noop = kernel ARP behind a no-op XDP program)'],
    ['reflect', "   (reflect = the rig's ceiling)"],
  ] as Array<[Variant, string]>) {
    console.log(
      `  juneau / ${base.padEnd(8)} replies/s ${ratio(m('juneau'), m(base))}, p50 ${ratio(p('juneau', 50), p(base, 50))}, p99 ${ratio(p('juneau', 99), p(base, 99))}${note}`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
