// A test rig of real network namespaces: one "client" namespace holding a bridge (the L2
// segment, and the upstream neighbour whose ARP cache matters), and N "node" namespaces, each
// with eth0 on a veth whose peer is a bridge port. Every rig has its own random names and its
// own bpffs pin directories, and destroy() removes all of it.
//
// Machine facts (test/netns needs root): `ip netns exec` remounts /sys and hides /sys/fs/bpf, so
// commands enter only the network namespace (nsenter --net). Native XDP on a veth drops XDP_TX
// frames unless the peer runs an XDP program; generic mode has no such rule.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { removePins } from '../../runtime/agent/bpf/pins';
import type { XdpMode, XdpModeRequest } from '../../runtime/agent/bpf/responder';
import { describeAsRootFor, isRoot } from '../requirements';
import { deleteNetns, inNs, macIn, startTcpdump } from './ns-tools';
import { parsePcap, type Frame } from './pcap';
import { sleep } from '../sleep';

const run = promisify(execFile);
const REPO = path.resolve(__dirname, '../..');
const TSX = path.join(REPO, 'node_modules/.bin/tsx');
const LOADER = path.join(__dirname, 'xdp-loader.ts');
export const XDP_PASS_OBJECT = path.join(REPO, 'build/bpf/xdp_pass.bpf.o');

export { isRoot };

/** describe() for suites that need root: on a developer's non-root run they are skipped with the
 * reason in the title; under CI=true they fail with it (test/requirements.ts). */
export const describeAsRoot = describeAsRootFor('network namespaces, XDP, bpffs');

export interface AttachResultJson {
  readonly mode: XdpMode;
  readonly programId: number;
  readonly replacedProgramId?: number;
  readonly adoptedMaps: string[];
  readonly ifindex: number;
  readonly mac: string;
}

export interface LoaderOptions {
  readonly mode?: XdpModeRequest;
  readonly guard?: boolean;
  readonly conflictDetection?: boolean;
  /** FO-2: the interface's answers expire this long after its heartbeat. @default never */
  readonly answerExpiryMs?: number;
  /** SEC-16: the interface is orphaned this long after its heartbeat. @default never */
  readonly orphanAfterMs?: number;
  /** Where the loader pins. @default pinDir(i) */
  readonly pinDir?: string;
}

export interface ArpToSend {
  readonly op?: 'request' | 'reply';
  /** Ethernet source and ARP sender hardware address. @default the client bridge's MAC */
  readonly sha?: string;
  readonly sip: string;
  readonly tip: string;
  /** @default broadcast */
  readonly ethDst?: string;
  readonly count?: number;
  /** Gap between frames. @default 10 */
  readonly gapMs?: number;
}

export const SUBNET = '192.0.2';
export const CLIENT_IP = `${SUBNET}.100`;

export class Rig {
  readonly id = randomBytes(3).toString('hex');
  readonly client = `jn${this.id}c`;
  readonly bridge = 'br0';
  private readonly openMaps = new Map<number, ArpMaps>();
  private readonly tmp = fs.mkdtempSync(path.join(os.tmpdir(), `juneau-netns-${this.id}-`));
  clientMac = '';

  constructor(readonly nodeCount: number = 1) {}

  node(i: number): string {
    return `jn${this.id}n${i}`;
  }

  nodeIp(i: number): string {
    return `${SUBNET}.${i + 1}`;
  }

  /** The bridge port facing node i, in the client namespace. */
  port(i: number): string {
    return `p${i}`;
  }

  pinDir(i: number): string {
    return `/sys/fs/bpf/juneau-test-${this.id}-n${i}`;
  }

  async setup(): Promise<void> {
    // Idempotent and quick when up to date; guards against a build/ cleaned by hand.
    await run('bash', [path.join(REPO, 'bpf/build.sh')]);
    await run('ip', ['netns', 'add', this.client]);
    await this.quietIpv6(this.client);
    await this.in(this.client, 'ip', 'link', 'set', 'lo', 'up');
    await this.in(this.client, 'ip', 'link', 'add', this.bridge, 'type', 'bridge');
    await this.in(this.client, 'ip', 'addr', 'add', `${CLIENT_IP}/24`, 'dev', this.bridge);
    await this.in(this.client, 'ip', 'link', 'set', this.bridge, 'up');
    for (let i = 0; i < this.nodeCount; i++) await this.addNode(i);
    this.clientMac = await this.mac(this.client, this.bridge);
  }

  private async addNode(i: number): Promise<void> {
    const ns = this.node(i);
    await run('ip', ['netns', 'add', ns]);
    await this.quietIpv6(ns);
    await run('ip', ['link', 'add', `jn${this.id}v${i}`, 'type', 'veth', 'peer', 'name', `jn${this.id}p${i}`]);
    await run('ip', ['link', 'set', `jn${this.id}v${i}`, 'netns', ns]);
    await run('ip', ['link', 'set', `jn${this.id}p${i}`, 'netns', this.client]);
    await this.in(ns, 'ip', 'link', 'set', `jn${this.id}v${i}`, 'name', 'eth0');
    await this.in(this.client, 'ip', 'link', 'set', `jn${this.id}p${i}`, 'name', this.port(i));
    await this.in(ns, 'ip', 'link', 'set', 'lo', 'up');
    await this.in(ns, 'ip', 'addr', 'add', `${this.nodeIp(i)}/24`, 'dev', 'eth0');
    await this.in(ns, 'ip', 'link', 'set', 'eth0', 'up');
    await this.in(this.client, 'ip', 'link', 'set', this.port(i), 'master', this.bridge);
    await this.in(this.client, 'ip', 'link', 'set', this.port(i), 'up');
  }

  /** IPv6 off, so a capture holds only what the test caused (no MLD or router solicitations). */
  private async quietIpv6(ns: string): Promise<void> {
    for (const scope of ['all', 'default']) await this.sysctl(ns, `net.ipv6.conf.${scope}.disable_ipv6`, '1');
  }

  /** Writes a per-network-namespace sysctl (procfs resolves net.* in the writer's namespace). */
  async sysctl(ns: string, key: string, value: string): Promise<void> {
    await this.in(ns, 'sh', '-c', `echo ${value} > /proc/sys/${key.replace(/\./g, '/')}`);
  }

  async destroy(): Promise<void> {
    for (const maps of this.openMaps.values()) maps.close();
    this.openMaps.clear();
    const namespaces = [this.client, ...Array.from({ length: this.nodeCount }, (_, i) => this.node(i))];
    for (const ns of namespaces) await deleteNetns(ns);
    for (let i = 0; i < this.nodeCount; i++) removePins(this.pinDir(i));
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }

  /** Runs a command in a network namespace only (not `ip netns exec`: it would hide bpffs). */
  in(ns: string, cmd: string, ...args: string[]): Promise<string> {
    return inNs(ns, cmd, ...args);
  }

  mac(ns: string, ifname: string): Promise<string> {
    return macIn(ns, ifname);
  }

  /** Loads the responder onto node i's eth0 from a separate process that then exits. */
  async attach(i: number, options: LoaderOptions = {}): Promise<AttachResultJson> {
    const request = { ifname: 'eth0', pinDir: this.pinDir(i), mode: 'generic', ...options };
    const out = await this.in(this.node(i), TSX, LOADER, 'attach', JSON.stringify(request));
    return JSON.parse(out) as AttachResultJson;
  }

  /** Attaches a single-program object (no-op, reflect) to `ifname` in namespace `ns`. */
  async attachObject(ns: string, ifname: string, objectPath: string, program: string, mode: XdpMode): Promise<number> {
    const out = await this.in(
      ns,
      TSX,
      LOADER,
      'attach-object',
      JSON.stringify({ ifname, objectPath, program, mode, pinDir: '' }),
    );
    return (JSON.parse(out) as { programId: number }).programId;
  }

  async detach(i: number): Promise<boolean> {
    const out = await this.in(
      this.node(i),
      TSX,
      LOADER,
      'detach',
      JSON.stringify({ ifname: 'eth0', pinDir: this.pinDir(i) }),
    );
    return (JSON.parse(out) as { detached: boolean }).detached;
  }

  /** The pinned maps of node i, opened from this (the test) process. */
  maps(i: number): ArpMaps {
    let maps = this.openMaps.get(i);
    if (!maps) {
      maps = ArpMaps.openPinned(this.pinDir(i));
      this.openMaps.set(i, maps);
    }
    return maps;
  }

  /** The XDP program id on node i's eth0, from iproute2 (0 when none). */
  async xdpProgramId(i: number): Promise<number> {
    const [link] = JSON.parse(await this.in(this.node(i), 'ip', '-j', '-d', 'link', 'show', 'dev', 'eth0')) as Array<{
      xdp?: { prog?: { id: number } };
    }>;
    return link.xdp?.prog?.id ?? 0;
  }

  /** Sends ARP frames from the client with mausezahn (a raw packet tool). */
  async sendArp(frame: ArpToSend): Promise<void> {
    const sha = frame.sha ?? this.clientMac;
    const fields = [frame.op ?? 'request', `smac=${sha}`, `sip=${frame.sip}`, `tip=${frame.tip}`];
    await this.in(
      this.client,
      'mausezahn',
      this.bridge,
      '-q',
      '-c',
      String(frame.count ?? 1),
      '-d',
      `${frame.gapMs ?? 10}msec`,
      '-a',
      sha,
      '-b',
      frame.ethDst ?? 'bcast',
      '-t',
      'arp',
      fields.join(', '),
    );
  }

  /** Sends one frame, given byte by byte, from the client's bridge (mausezahn's raw mode). */
  async sendFrame(frame: Buffer, count = 1, gapMs = 10): Promise<void> {
    const hex = [...frame].map((b) => b.toString(16).padStart(2, '0')).join(':');
    await this.in(this.client, 'mausezahn', this.bridge, '-q', '-c', String(count), '-d', `${gapMs}msec`, hex);
  }

  /** Captures every frame the client's bridge sees while `during` runs, plus `settleMs`. */
  async capture(during: () => Promise<void>, settleMs = 300): Promise<Frame[]> {
    const file = path.join(this.tmp, `cap-${randomBytes(3).toString('hex')}.pcap`);
    // A 64 MiB kernel buffer, so a capture on a loaded machine keeps up with a probe burst.
    const tcpdump = await startTcpdump(this.client, this.bridge, file, { bufferKiB: 65536 });
    try {
      await during();
      await sleep(settleMs);
    } finally {
      await tcpdump.stop();
    }
    // A frame the capture lost would read as a frame never sent or never answered: say so instead.
    const dropped = Number(/(\d+) packets? dropped by kernel/.exec(tcpdump.stderr())?.[1] ?? 0);
    if (dropped > 0)
      throw new Error(
        `the capture lost ${dropped} frame(s) (tcpdump: dropped by kernel); what it saw cannot be judged`,
      );
    return parsePcap(fs.readFileSync(file));
  }

  /** What a brand-new client on the segment learns (OPS-3): flush the neighbour cache, let the
   * kernel resolve `address` (a ping triggers it), read the neighbour table back. */
  async resolveFresh(address: string): Promise<string | undefined> {
    await this.in(this.client, 'ip', 'neigh', 'flush', 'dev', this.bridge);
    // Any datagram to the address makes the kernel resolve it (no ping on minimal images). Sending
    // it fails only when something is wrong with the rig: that fails the probe, not "no answer".
    await this.in(this.client, 'bash', '--norc', '-c', `echo > /dev/udp/${address}/9`);
    for (let waited = 0; waited < 2000; waited += 50) {
      const entries = JSON.parse(
        await this.in(this.client, 'ip', '-j', 'neigh', 'show', address, 'dev', this.bridge),
      ) as Array<{
        lladdr?: string;
        state?: string[];
      }>;
      const resolved = entries.find(
        (e) => e.lladdr && !e.state?.includes('FAILED') && !e.state?.includes('INCOMPLETE'),
      );
      if (resolved) return resolved.lladdr;
      await sleep(50);
    }
    return undefined;
  }

  /** Opens a TCP connection from the client to a closed port of `address`: true when the peer
   * refused it (an RST came back, so IP traffic flows both ways), false on timeout. */
  async tcpRefused(address: string, port = 9): Promise<boolean> {
    const script = `timeout 2 bash --norc -c 'echo > /dev/tcp/${address}/${port}' 2>&1; true`;
    const out = await this.in(this.client, 'bash', '--norc', '-c', script);
    return out.includes('Connection refused');
  }

  /** Runs iputils arping from the client; returns the MAC of every reply. */
  async arping(address: string, args: string[] = []): Promise<string[]> {
    const out = await this.in(this.client, 'arping', '-I', this.bridge, ...args, address).catch(
      (err: { code?: unknown; stdout?: string }) => {
        if (err.code === 1) return err.stdout ?? ''; // exit 1: nothing answered
        throw err; // any other failure (a bad interface, no arping) is not "no reply"
      },
    );
    return [...out.matchAll(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/g)].map((m) => m[1].toLowerCase());
  }
}

/** A Rig set up before the enclosing describe's tests and destroyed after them, for suites that
 * need nothing more before their first test. */
export function useRig(nodeCount = 1): Rig {
  const rig = new Rig(nodeCount);
  beforeAll(() => rig.setup(), 60_000);
  afterAll(() => rig.destroy(), 60_000);
  return rig;
}

/** ARP replies in `frames` answering for `address`, i.e. sent by whoever claims it. */
export function repliesFor(frames: Frame[], address: string): Frame[] {
  return frames.filter((f) => f.arp?.op === 2 && f.arp.sip === address);
}

/**
 * ARP frames sent by `mac` that name one of `addresses` as sender or target: what an unsolicited
 * announcement of those addresses would be (ARP-8). Other traffic of the node (IPv4, its kernel
 * refreshing a neighbour entry for its own address) is not Juneau's and is not counted.
 */
export function arpFramesAbout(frames: Frame[], mac: string, addresses: readonly string[]): Frame[] {
  return frames.filter(
    (f) => f.src === mac && f.arp && (addresses.includes(f.arp.sip) || addresses.includes(f.arp.tip)),
  );
}
