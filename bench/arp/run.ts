// ARP replies per second on one rig, side by side (bench/README.md). Not a test: prints numbers.
//
//   sudo npx tsx bench/arp/run.ts [seconds-per-run=5] [rounds=2]
//
// Rig: test/netns/rig.ts (a client namespace, a node namespace, a veth between them). trafgen
// sends broadcast ARP requests for one address from the client's side of the veth, on one CPU,
// as fast as it can; the replies are the frames arriving back on that veth end (rx_packets).
// Variants, interleaved round by round so drift hits them all alike:
//   kernel  - the address on the node's eth0, no XDP: Linux's own ARP
//   noop    - the same, with a no-op XDP program (xdp_pass) on eth0: the cost of the XDP hook
//   juneau  - the address in external_arp_table, answered by xdp_arp
//   reflect - xdp_reflect sends every frame straight back: the rig's ceiling
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CLIENT_IP, Rig, SUBNET, XDP_PASS_OBJECT } from '../../test/netns/rig';

const VIP = `${SUBNET}.50`;
const SECONDS = Number(process.argv[2] ?? 5);
const ROUNDS = Number(process.argv[3] ?? 2);
const XDP_MODE = 'xdpgeneric'; // native veth XDP needs an XDP program on the sender's side too

type Variant = 'kernel' | 'noop' | 'juneau' | 'reflect';
const VARIANTS: Variant[] = ['kernel', 'noop', 'juneau', 'reflect'];

function buildReflect(dir: string): string {
  const out = path.join(dir, 'xdp_reflect.bpf.o');
  const arch = `/usr/include/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`;
  execFileSync('clang', ['-O2', '-g', '-target', 'bpf', `-I${arch}`, '-c', path.join(__dirname, 'xdp_reflect.bpf.c'), '-o', out]);
  return out;
}

function hexBytes(text: string, sep: RegExp): string[] {
  return text.split(sep).map((b) => `0x${Number.parseInt(b, sep.source === '\\.' ? 10 : 16).toString(16).padStart(2, '0')}`);
}

/** A trafgen packet: broadcast ARP request "who has VIP, tell CLIENT_IP" from `mac`. */
function trafgenConfig(mac: string): string {
  const macBytes = hexBytes(mac, /:/);
  const bytes = [
    ...Array(6).fill('0xff'), ...macBytes, '0x08', '0x06', // Ethernet: broadcast, ARP
    '0x00', '0x01', '0x08', '0x00', '6', '4', '0x00', '0x01', // Ethernet/IPv4, request
    ...macBytes, ...hexBytes(CLIENT_IP, /\./), // sender
    ...Array(6).fill('0x00'), ...hexBytes(VIP, /\./), // target
  ];
  return `{ ${bytes.join(', ')} }\n`;
}

async function rxPackets(rig: Rig): Promise<number> {
  const [link] = JSON.parse(await rig.in(rig.client, 'ip', '-s', '-j', 'link', 'show', 'dev', rig.port(0))) as Array<{
    stats64: { rx: { packets: number } };
  }>;
  return link.stats64.rx.packets;
}

async function prepare(rig: Rig, variant: Variant, reflectObject: string): Promise<void> {
  const node = rig.node(0);
  await rig.in(node, 'ip', 'link', 'set', 'dev', 'eth0', XDP_MODE, 'off');
  await rig.in(node, 'ip', 'addr', 'del', `${VIP}/32`, 'dev', 'eth0').catch(() => undefined);
  if (variant === 'kernel' || variant === 'noop') await rig.in(node, 'ip', 'addr', 'add', `${VIP}/32`, 'dev', 'eth0');
  if (variant === 'noop') await rig.attachObject(node, 'eth0', XDP_PASS_OBJECT, 'xdp_pass', 'generic');
  if (variant === 'reflect') await rig.attachObject(node, 'eth0', reflectObject, 'xdp_reflect', 'generic');
  if (variant === 'juneau') {
    await rig.attach(0, { mode: 'generic' });
    rig.maps(0).syncAddresses([VIP]);
  }
}

interface Sample {
  readonly repliesPerSecond: number;
  /** Average time inside the XDP program per packet (kernel.bpf_stats_enabled); NaN without XDP. */
  readonly nsPerPacket: number;
}

async function programStats(rig: Rig): Promise<{ runTimeNs: number; runCount: number } | undefined> {
  const id = await rig.xdpProgramId(0);
  if (!id) return undefined;
  const info = JSON.parse(execFileSync('bpftool', ['-j', 'prog', 'show', 'id', String(id)], { encoding: 'utf8' })) as {
    run_time_ns?: number;
    run_cnt?: number;
  };
  return { runTimeNs: info.run_time_ns ?? 0, runCount: info.run_cnt ?? 0 };
}

async function measure(rig: Rig, config: string): Promise<Sample> {
  const before = await rxPackets(rig);
  const statsBefore = await programStats(rig);
  const started = process.hrtime.bigint();
  await rig.in(rig.client, 'timeout', '-s', 'INT', String(SECONDS), 'trafgen', '--dev', rig.port(0), '--conf', config, '--cpus', '1', '-q').catch(() => undefined);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const statsAfter = await programStats(rig);
  const nsPerPacket = statsBefore && statsAfter
    ? (statsAfter.runTimeNs - statsBefore.runTimeNs) / Math.max(1, statsAfter.runCount - statsBefore.runCount)
    : Number.NaN;
  return { repliesPerSecond: ((await rxPackets(rig)) - before) / seconds, nsPerPacket };
}

/** Turns on kernel.bpf_stats_enabled (run time per program) for the run; returns the restorer. */
function enableBpfStats(): () => void {
  const file = '/proc/sys/kernel/bpf_stats_enabled';
  const previous = fs.readFileSync(file, 'utf8').trim();
  fs.writeFileSync(file, '1');
  return () => fs.writeFileSync(file, previous);
}

async function main(): Promise<void> {
  const rig = new Rig(1);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-bench-'));
  try {
    await rig.setup();
    // The node must not resolve the client with ARP traffic of its own during a run.
    await rig.in(rig.node(0), 'ip', 'neigh', 'replace', CLIENT_IP, 'lladdr', rig.clientMac, 'dev', 'eth0', 'nud', 'permanent');
    const reflectObject = buildReflect(dir);
    const config = path.join(dir, 'arp-request.cfg');
    fs.writeFileSync(config, trafgenConfig(await rig.mac(rig.client, rig.port(0))));
    const results = new Map<Variant, Sample[]>(VARIANTS.map((v) => [v, []]));
    const restoreStats = enableBpfStats();
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        for (const variant of VARIANTS) {
          await prepare(rig, variant, reflectObject);
          const sample = await measure(rig, config);
          results.get(variant)!.push(sample);
          const ns = Number.isNaN(sample.nsPerPacket) ? '' : `, ${sample.nsPerPacket.toFixed(0)} ns/packet in XDP`;
          console.log(`round ${round} ${variant.padEnd(8)} ${Math.round(sample.repliesPerSecond).toLocaleString('en')} replies/s${ns}`);
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

function report(results: Map<Variant, Sample[]>): void {
  const m = (v: Variant) => median(results.get(v)!.map((s) => s.repliesPerSecond));
  const ns = (v: Variant) => median(results.get(v)!.map((s) => s.nsPerPacket));
  console.log(`\nmedian replies/s over ${ROUNDS} round(s) of ${SECONDS}s, generic XDP on a veth, ${os.cpus().length} CPUs:`);
  for (const v of VARIANTS) {
    const inXdp = Number.isNaN(ns(v)) ? '' : `   (${ns(v).toFixed(0)} ns/packet inside the XDP program)`;
    console.log(`  ${v.padEnd(8)} ${Math.round(m(v)).toLocaleString('en').padStart(10)}${inXdp}`);
  }
  console.log('ratios:');
  console.log(`  juneau / kernel   ${(m('juneau') / m('kernel')).toFixed(2)}`);
  console.log(`  juneau / noop     ${(m('juneau') / m('noop')).toFixed(2)}   (noop = kernel ARP behind a no-op XDP program)`);
  console.log(`  juneau / reflect  ${(m('juneau') / m('reflect')).toFixed(2)}   (reflect = the rig's ceiling)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
