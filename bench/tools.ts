// The tools the benches drive the same way (bench/arp, bench/nat, bench/peers): clang for a
// bench's own BPF object, a buffered nanosecond ARP capture, and trafgen on one CPU.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';

/** Compiles a bench's BPF C `source` into `out` (-O2 -g, the host's multiarch headers), `-D` each of `defines`. */
export function clangBpf(source: string, out: string, defines: readonly string[] = []): string {
  const arch = `/usr/include/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`;
  execFileSync('clang', [
    '-O2',
    '-g',
    '-target',
    'bpf',
    `-I${arch}`,
    ...defines.map((d) => `-D${d}`),
    '-c',
    source,
    '-o',
    out,
  ]);
  return out;
}

/**
 * tcpdump writing the ARP frames `dev` of the network namespace `netns` sees to `file`, with
 * kernel timestamps in nanoseconds. Not --immediate-mode: waking tcpdump for every frame would put
 * a wake-up (an IPI when it sleeps on the other CPU) between a request's timestamp and its
 * transmission. Buffered, libpcap takes a block of frames when it fills or after its 1 s timeout.
 */
export function captureArpTimed(netns: string, dev: string, file: string): ChildProcess {
  return spawn(
    'nsenter',
    [
      `--net=/var/run/netns/${netns}`,
      ...['tcpdump', '-Z', 'root', '-B', '8192', '-n', '-i', dev, '--time-stamp-precision=nano', '-w', file, 'arp'],
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}

/** trafgen's arguments to send the frames of `conf` out of `dev` from one CPU, quietly, then `more`. */
export const trafgen = (dev: string, conf: string, ...more: string[]): [string, ...string[]] => [
  'trafgen',
  '--dev',
  dev,
  '--conf',
  conf,
  '--cpus',
  '1',
  '-q',
  ...more,
];

const hexByte = (b: number) => `0x${b.toString(16).padStart(2, '0')}`;
/** An IPv4 address as trafgen bytes. */
export const hexIp = (ip: string): string[] => ip.split('.').map((b) => hexByte(Number(b)));
/** A MAC address as trafgen bytes. */
export const hexMac = (mac: string): string[] => mac.split(':').map((b) => hexByte(Number.parseInt(b, 16)));

/** One trafgen packet: broadcast ARP request "who has `target`, tell `senderIp`" from `mac`, with
 * `sha` (trafgen bytes; default `mac`) as the sender hardware address. */
export function arpRequestPacket(mac: string, senderIp: string, target: string, sha = hexMac(mac)): string {
  const bytes = [
    ...Array(6).fill('0xff'),
    ...hexMac(mac),
    ...['0x08', '0x06'], // Ethernet: broadcast, ARP
    ...['0x00', '0x01', '0x08', '0x00', '6', '4', '0x00', '0x01'], // Ethernet/IPv4, request
    ...sha,
    ...hexIp(senderIp),
    ...Array(6).fill('0x00'),
    ...hexIp(target),
  ];
  return `{ ${bytes.join(', ')} }\n`;
}
