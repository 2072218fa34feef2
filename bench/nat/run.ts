// The ElasticIP 1:1 NAT (bpf/tc_nat.bpf.c) against the kernel's own 1:1 NAT with nftables
// (`dnat to` / `snat to`, conntrack), side by side in one run on one rig (bench/README.md). Not a
// test: prints numbers.
//
//   sudo npx tsx bench/nat/run.ts [seconds-per-flood=3] [rounds=3] [rtt-probes-per-batch=500] [rtt-batches-per-round=4]
//
// Rig: test/netns/nat-rig.ts (router -> node -> pod, offloads off). Variants, switched on the
// same node between measurements, the order rotating each round:
//   ebpf - tc_nat_in/out on ext0, tc_nat_pod on pod0, the binding ElasticIP -> pod in the maps
//   nft  - no TC program; an nftables table on the node: prerouting `dnat to` the pod,
//          postrouting `snat to` the ElasticIP (conntrack does the reverse direction)
//   floor - no NAT at all: bench/nat/tc_floor.bpf.c on ext0 sends every frame unparsed to the
//          pod (pps only): the rig's own cost per packet, measured in the same rounds
// Figures per variant (floods: median over rounds; latency: over all probes of all rounds):
//   pps      - trafgen floods 64-byte UDP frames to the ElasticIP from the router on one CPU,
//              source port random per frame (many clients, as on the internet); the pod's eth0
//              rx_packets delta per second is what went through the node
//   conntrack entries on the node after the flood (`conntrack -C`)
//   RTT p50/p99 - sequential 64-byte UDP ping-pong router -> ElasticIP -> pod echo (Python
//              sockets at both ends: the same overhead for both variants), interleaved batch by
//              batch between ebpf and nft (the order alternating), so both see the same load of
//              the shared machine; percentiles over all probes pooled, and per pair of adjacent
//              batches (which variant had the lower p99, and the median ratio)
//   TCP      - one connection router -> pod for a few seconds, bytes per second
//   node cost - per packet, 1/pps of the variant minus 1/pps of the floor: what the node's
//              translation and forwarding add to the generator, the veths and the pod, which
//              share the one core and dominate the end-to-end rate (bench/README.md)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EIP, NatRig, POD, ROUTER_EXT } from '../../test/netns/nat-rig';
import { percentile } from '../arp/latency';
import { clangBpf } from '../tools';

const SECONDS = Number(process.argv[2] ?? 3);
const ROUNDS = Number(process.argv[3] ?? 3);
const PROBES = Number(process.argv[4] ?? 500);
const BATCHES = Number(process.argv[5] ?? 4);
const TRAFFIC = path.join(__dirname, 'traffic.py');

type Variant = 'ebpf' | 'nft' | 'floor';
const VARIANTS: Variant[] = ['ebpf', 'nft', 'floor'];
const FLOOR_SOURCE = path.join(__dirname, 'tc_floor.bpf.c');
let floorObject = '';

interface Sample {
  pps: number;
  /** CPU time per packet of the flood (trafgen with the softirq work in its context, ksoftirqd). */
  cpuUs: number;
  conntrack: number;
  tcp: number;
  /** Average time inside tc_nat_in per packet during the flood (kernel.bpf_stats_enabled); NaN for nft. */
  nsPerPacket: number;
  /** CPU µs per packet over the same round's floor (set after the round). */
  nodeUs: number;
}

const hex = (bytes: number[]) => bytes.map((b) => `0x${b.toString(16).padStart(2, '0')}`);
const ipBytes = (a: string) => a.split('.').map(Number);
const macBytes = (m: string) => m.split(':').map((x) => parseInt(x, 16));

function checksum(bytes: number[]): number {
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) sum += (bytes[i] << 8) + (bytes[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** A 60-byte frame (64 with the FCS): UDP to the ElasticIP, port 9, a random source port per frame
 * (trafgen drnd), UDP checksum 0 (none: valid for IPv4). */
function floodConfig(rig: NatRig): string {
  const ip = [0x45, 0, 0, 46, 0x4a, 0x4e, 0, 0, 64, 17, 0, 0, ...ipBytes(ROUTER_EXT), ...ipBytes(EIP)];
  const sum = checksum(ip);
  ip[10] = sum >> 8;
  ip[11] = sum & 0xff;
  const eth = [...macBytes(rig.nodeExtMac), ...macBytes(rig.routerMac), 0x08, 0x00];
  return `{ ${hex([...eth, ...ip]).join(', ')}, drnd(2), ${hex([0, 9, 0, 26, 0, 0, ...Array(18).fill(0x78)]).join(', ')} }\n`;
}

async function rxPackets(rig: NatRig): Promise<number> {
  const [link] = JSON.parse(await rig.in(rig.pod, 'ip', '-s', '-j', 'link', 'show', 'dev', 'eth0')) as Array<{
    stats64: { rx: { packets: number } };
  }>;
  return link.stats64.rx.packets;
}

/** run_time_ns / run_cnt of a program (kernel.bpf_stats_enabled must be on). */
function programStats(id: number): { ns: number; count: number } {
  const info = JSON.parse(execFileSync('bpftool', ['-j', 'prog', 'show', 'id', String(id)], { encoding: 'utf8' })) as {
    run_time_ns?: number;
    run_cnt?: number;
  };
  return { ns: info.run_time_ns ?? 0, count: info.run_cnt ?? 0 };
}

let inProgramId = 0;

/** Run time of ksoftirqd on the flood's CPU (1), ns (/proc/PID/schedstat). */
function ksoftirqdNs(): number {
  const pid = execFileSync('pgrep', ['-x', 'ksoftirqd/1'], { encoding: 'utf8' }).trim();
  return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** Compiles the floor with the pod device's ifindex and the MACs of the pod0 -> eth0 hop. */
async function buildFloor(rig: NatRig, dir: string): Promise<string> {
  const [link] = JSON.parse(await rig.in(rig.node, 'ip', '-j', 'link', 'show', 'dev', 'pod0')) as Array<{
    ifindex: number;
    address: string;
  }>;
  const podMac = await rig.mac(rig.pod, 'eth0');
  const bytes = (mac: string) =>
    mac
      .split(':')
      .map((b) => `0x${b}`)
      .join(',');
  return clangBpf(FLOOR_SOURCE, path.join(dir, 'tc_floor.bpf.o'), [
    `FLOOR_IFINDEX=${link.ifindex}`,
    `FLOOR_DMAC=${bytes(podMac)}`,
    `FLOOR_SMAC=${bytes(link.address)}`,
  ]);
}

async function use(rig: NatRig, variant: Variant): Promise<void> {
  await rig.in(rig.node, 'nft', 'delete', 'table', 'ip', 'benchnat').catch(() => undefined); // absent in the first round
  await rig.detach();
  await rig.in(rig.node, 'tc', 'filter', 'del', 'dev', 'ext0', 'ingress').catch(() => undefined); // the floor's, if any
  await rig.in(rig.node, 'conntrack', '-F').catch(() => undefined); // an empty table answers non-zero
  if (variant === 'floor') {
    rig.maps().sync([]);
    await rig.in(rig.node, 'tc', 'qdisc', 'replace', 'dev', 'ext0', 'clsact');
    await rig.in(
      rig.node,
      'tc',
      'filter',
      'add',
      'dev',
      'ext0',
      'ingress',
      'bpf',
      'direct-action',
      'obj',
      floorObject,
      'sec',
      'tc',
    );
  } else if (variant === 'ebpf') {
    inProgramId = (await rig.attach()).filters.in;
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
  } else {
    rig.maps().sync([]);
    await rig.in(rig.node, 'nft', 'add table ip benchnat');
    await rig.in(rig.node, 'nft', 'add chain ip benchnat pre { type nat hook prerouting priority dstnat; }');
    await rig.in(rig.node, 'nft', 'add chain ip benchnat post { type nat hook postrouting priority srcnat; }');
    await rig.in(rig.node, 'nft', `add rule ip benchnat pre ip daddr ${EIP} dnat to ${POD}`);
    await rig.in(rig.node, 'nft', `add rule ip benchnat post ip saddr ${POD} oifname "ext0" snat to ${EIP}`);
  }
}

function background(ns: string, ...args: string[]): Promise<ChildProcess> {
  const child = spawn('nsenter', [`--net=/var/run/netns/${ns}`, 'python3', TRAFFIC, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`traffic.py ${args.join(' ')} exited ${code}`)));
  });
}

/** RTT probes, per variant: every batch's round trips (µs) and losses, in order. */
type Latency = Record<'ebpf' | 'nft', Array<{ rtts: number[]; lost: number }>>;

/** One round's latency: BATCHES batches per variant, alternating, each on a clean conntrack table
 * (use() flushes it). The floor forwards one way only: it has no round trip. */
async function measureLatency(rig: NatRig, round: number, latency: Latency): Promise<void> {
  for (let b = 0; b < BATCHES; b++) {
    const order = (round + b) % 2 === 0 ? (['ebpf', 'nft'] as const) : (['nft', 'ebpf'] as const);
    for (const variant of order) {
      await use(rig, variant);
      latency[variant].push(
        JSON.parse(await rig.in(rig.router, 'python3', TRAFFIC, 'udp-rtt', EIP, '7', String(PROBES))) as {
          rtts: number[];
          lost: number;
        },
      );
    }
  }
}

async function measure(rig: NatRig, variant: Variant, config: string): Promise<Sample> {
  await use(rig, variant);
  // TCP first, on a clean conntrack table; the flood (which fills it) last.
  const tcp =
    variant === 'floor'
      ? { bytesPerSecond: NaN }
      : (JSON.parse(await rig.in(rig.router, 'python3', TRAFFIC, 'tcp-blast', EIP, '5001', String(SECONDS))) as {
          bytesPerSecond: number;
        });
  const before = await rxPackets(rig);
  const progBefore = variant === 'ebpf' ? programStats(inProgramId) : undefined;
  const softirqBefore = ksoftirqdNs();
  const rusage = path.join(os.tmpdir(), `juneau-bench-nat-rusage-${process.pid}`);
  const t0 = process.hrtime.bigint();
  await rig
    .in(
      rig.router,
      '/usr/bin/time',
      '-o',
      rusage,
      '-f',
      '%U %S',
      'timeout',
      '-s',
      'INT',
      String(SECONDS),
      'taskset',
      '-c',
      '1',
      'trafgen',
      '--dev',
      'r0',
      '--conf',
      config,
      '--cpus',
      '1',
      '-q',
    )
    .catch((err: { code?: number }) => {
      if (err.code !== 124 && err.code !== 0 && err.code !== 1) throw err; // time(1) exits 1 when its child was interrupted
    });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const packets = (await rxPackets(rig)) - before;
  const pps = packets / seconds;
  // CPU time spent on the flood: trafgen's own (its syscalls, and the softirq work the kernel runs
  // in its context: the veths, the node, the pod) plus ksoftirqd's on that CPU (softirq work
  // deferred there under load). Per packet, it does not depend on how much of the CPU the other
  // jobs of the machine left to the flood, which the packet rate does.
  const [user, sys] = fs.readFileSync(rusage, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  fs.rmSync(rusage, { force: true });
  const cpuUs = ((user + sys) * 1e6 + (ksoftirqdNs() - softirqBefore) / 1e3) / Math.max(1, packets);
  const conntrack = Number((await rig.in(rig.node, 'conntrack', '-C')).trim());
  let nsPerPacket = NaN;
  if (progBefore) {
    const after = programStats(inProgramId);
    // No runs counted: kernel.bpf_stats_enabled was turned off meanwhile (it is machine-wide, and
    // another bench may restore it); NaN, left out of the median, rather than 0.
    if (after.count > progBefore.count) nsPerPacket = (after.ns - progBefore.ns) / (after.count - progBefore.count);
  }
  return {
    pps,
    cpuUs,
    conntrack,
    tcp: tcp.bytesPerSecond,
    nsPerPacket,
    nodeUs: NaN,
  };
}

/** The median of the values that are numbers (NaN: not measured in that round). */
const median = (values: number[]) => {
  const xs = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return xs.length ? xs[Math.floor(xs.length / 2)] : NaN;
};

/** Two-sided exact sign test: how likely `k` or a result as far from n/2, of `n` fair coin flips. */
function signTest(k: number, n: number): number {
  let tail = 0;
  let coefficient = 1; // C(n, i)
  for (let i = 0; i <= n; i++) {
    if (Math.abs(i - n / 2) >= Math.abs(k - n / 2)) tail += coefficient;
    coefficient = (coefficient * (n - i)) / (i + 1);
  }
  return Math.min(1, tail / 2 ** n);
}

/** Pooled percentiles, and the paired view: batch i of ebpf ran next to batch i of nft, so the
 * machine's load is shared by the pair; a p99 gap that holds in most pairs is the variant's. */
function reportLatency(latency: Latency): void {
  const all = (v: 'ebpf' | 'nft') => latency[v].flatMap((b) => b.rtts);
  const lost = (v: 'ebpf' | 'nft') => latency[v].reduce((n, b) => n + b.lost, 0);
  const line = (v: 'ebpf' | 'nft') =>
    `  ${v.padEnd(5)} ${all(v).length} probes (${lost(v)} lost): p50 ${percentile(all(v), 50).toFixed(1)}  p90 ${percentile(all(v), 90).toFixed(1)}  p99 ${percentile(all(v), 99).toFixed(1)}  p99.9 ${percentile(all(v), 99.9).toFixed(1)} µs`;
  console.log(
    `\nRTT over all rounds (${latency.ebpf.length} interleaved batches per variant):\n${line('ebpf')}\n${line('nft')}`,
  );
  const ratios = latency.ebpf.map((b, i) => percentile(b.rtts, 99) / percentile(latency.nft[i].rtts, 99));
  const p50s = latency.ebpf.map((b, i) => percentile(b.rtts, 50) / percentile(latency.nft[i].rtts, 50));
  console.log(
    `  ebpf/nft: p50 ${(percentile(all('ebpf'), 50) / percentile(all('nft'), 50)).toFixed(2)}x, p99 ${(percentile(all('ebpf'), 99) / percentile(all('nft'), 99)).toFixed(2)}x pooled; per batch pair: p99 lower for ebpf in ${ratios.filter((r) => r < 1).length} of ${ratios.length} (sign test p = ${signTest(ratios.filter((r) => r < 1).length, ratios.length).toFixed(2)}), median p99 ratio ${median(ratios).toFixed(2)}x (quartiles ${percentile(ratios, 25).toFixed(2)}–${percentile(ratios, 75).toFixed(2)}), median p50 ratio ${median(p50s).toFixed(2)}x`,
  );
}

async function main(): Promise<void> {
  const rig = new NatRig();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-bench-nat-'));
  const servers: ChildProcess[] = [];
  const statsWere = fs.readFileSync('/proc/sys/kernel/bpf_stats_enabled', 'utf8').trim();
  try {
    fs.writeFileSync('/proc/sys/kernel/bpf_stats_enabled', '1');
    await rig.setup();
    // The pod drops the flood before its UDP stack (no port-unreachable storm back through the
    // node); rx_packets on its eth0 has counted each frame by then. No conntrack in the pod.
    await rig.in(rig.pod, 'nft', 'add table ip sink');
    await rig.in(rig.pod, 'nft', 'add chain ip sink pre { type filter hook prerouting priority -400; }');
    await rig.in(rig.pod, 'nft', 'add rule ip sink pre udp dport 9 drop');
    servers.push(await background(rig.pod, 'udp-echo', '7'), await background(rig.pod, 'tcp-sink', '5001'));
    floorObject = await buildFloor(rig, dir);
    const config = path.join(dir, 'flood.cfg');
    fs.writeFileSync(config, floodConfig(rig));
    const samples: Record<Variant, Sample[]> = { ebpf: [], nft: [], floor: [] };
    const latency: Latency = { ebpf: [], nft: [] };
    const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    console.log(`load average at the start: ${load()}`);
    for (let round = 0; round < ROUNDS; round++) {
      await measureLatency(rig, round, latency);
      const last = (v: 'ebpf' | 'nft') => latency[v].slice(-BATCHES).flatMap((b) => b.rtts);
      console.log(
        `round ${round + 1} RTT (${BATCHES}×${PROBES} probes each): ebpf p50 ${percentile(last('ebpf'), 50).toFixed(1)} p99 ${percentile(last('ebpf'), 99).toFixed(1)} µs, nft p50 ${percentile(last('nft'), 50).toFixed(1)} p99 ${percentile(last('nft'), 99).toFixed(1)} µs; load ${load()}`,
      );
      for (let k = 0; k < VARIANTS.length; k++) {
        const variant = VARIANTS[(k + round) % VARIANTS.length];
        const s = await measure(rig, variant, config);
        samples[variant].push(s);
        const rest =
          variant === 'floor' ? '' : `, ${s.conntrack} conntrack entries, TCP ${((s.tcp * 8) / 1e9).toFixed(2)} Gbit/s`;
        console.log(
          `round ${round + 1} ${variant}: ${Math.round(s.pps)} pps${Number.isNaN(s.nsPerPacket) ? '' : ` (tc_nat_in ${Math.round(s.nsPerPacket)} ns/packet)`}${rest}`,
        );
      }
      // The node's cost this round: the variant's CPU time per packet over the floor's, same round.
      const floorUs = samples.floor[round].cpuUs;
      for (const v of ['ebpf', 'nft'] as const) samples[v][round].nodeUs = samples[v][round].cpuUs - floorUs;
      console.log(
        `round ${round + 1} CPU per packet: ebpf ${samples.ebpf[round].cpuUs.toFixed(2)} µs, nft ${samples.nft[round].cpuUs.toFixed(2)} µs, floor ${floorUs.toFixed(2)} µs; node cost ebpf ${samples.ebpf[round].nodeUs.toFixed(2)} µs, nft ${samples.nft[round].nodeUs.toFixed(2)} µs`,
      );
    }
    const m = (v: Variant, f: keyof Sample) => median(samples[v].map((s) => s[f]));
    console.log(`\nload average at the end: ${load()}\nfloods, median over rounds:`);
    for (const v of VARIANTS) {
      if (v === 'floor') {
        console.log(
          `  floor ${Math.round(m(v, 'pps'))} pps   CPU ${m(v, 'cpuUs').toFixed(2)} µs/packet (generator, veths, pod)`,
        );
        continue;
      }
      console.log(
        `  ${v.padEnd(5)} ${Math.round(m(v, 'pps'))} pps   CPU ${m(v, 'cpuUs').toFixed(2)} µs/packet, node cost ${m(v, 'nodeUs').toFixed(2)} µs (${Math.round(1e6 / m(v, 'nodeUs')).toLocaleString('en')} packets per CPU-second)   conntrack ${m(v, 'conntrack')}   TCP ${((m(v, 'tcp') * 8) / 1e9).toFixed(2)} Gbit/s`,
      );
    }
    console.log(`  tc_nat_in: ${Math.round(m('ebpf', 'nsPerPacket'))} ns per packet inside the program`);
    // Node cost from the medians: a round's own difference is too close to the noise of one flood
    // for ebpf (the floor's CPU per packet moves by ±0.3 µs between rounds), and the ratio of two
    // small differences would amplify it. tc_nat_in's own time (bpf_stats, steady) bounds the
    // ebpf side from below.
    const nodeUs = (v: Variant) => m(v, 'cpuUs') - m('floor', 'cpuUs');
    console.log(
      `  node cost from the medians: ebpf ${nodeUs('ebpf').toFixed(2)} µs (tc_nat_in alone ${(m('ebpf', 'nsPerPacket') / 1e3).toFixed(2)} µs), nft ${nodeUs('nft').toFixed(2)} µs per packet`,
    );
    console.log(
      `  ebpf/nft: pps ${(m('ebpf', 'pps') / m('nft', 'pps')).toFixed(2)}x end to end, ${(m('nft', 'cpuUs') / m('ebpf', 'cpuUs')).toFixed(2)}x by CPU per packet, ${(nodeUs('nft') / Math.max(nodeUs('ebpf'), m('ebpf', 'nsPerPacket') / 1e3)).toFixed(2)}x by node cost (ebpf's taken as at least tc_nat_in's own time), TCP ${(m('ebpf', 'tcp') / m('nft', 'tcp')).toFixed(2)}x`,
    );
    reportLatency(latency);
  } finally {
    fs.writeFileSync('/proc/sys/kernel/bpf_stats_enabled', statsWere);
    for (const s of servers) s.kill('SIGKILL');
    await rig.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
