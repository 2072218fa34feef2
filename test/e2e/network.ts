// The e2e network: an "upstream router" namespace holding the L2 segment (a bridge) and resolving
// addresses with ARP like a real router (default neighbour timers), a "fresh client" namespace on
// the same segment (a newcomer whose first resolution is what OPS-3 asks about), and N "node"
// namespaces whose eth0 is a bridge port. Every node also has a `kube-ipvs0` interface holding the
// LoadBalancer VIPs with the kernel's default arp_ignore=0 — exactly what kube-proxy in ipvs mode
// without strictARP does (seed 004) — so each node's kernel would answer ARP for every VIP.
//
// Commands enter only the network namespace (nsenter --net): `ip netns exec` would remount /sys
// and hide /sys/fs/bpf from the agents.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { deleteNetns, inNs, macIn, startTcpdump } from '../netns/ns-tools';
import { parsePcap, type Frame } from '../netns/pcap';
import { sleep } from '../sleep';

const exec = promisify(execFile);
export const SUBNET = '10.225.32';
export const ROUTER_IP = `${SUBNET}.254`;
export const FRESH_CLIENT_IP = `${SUBNET}.253`;
/** The AddressPool of the rig: inside the nodes' L2 subnet (EN-12). */
export const POOL_RANGE = `${SUBNET}.200-${SUBNET}.239`;

export class E2ENetwork {
  readonly id = randomBytes(3).toString('hex');
  readonly router = `je${this.id}r`;
  readonly freshClient = `je${this.id}f`;
  readonly tmp = fs.mkdtempSync(path.join(os.tmpdir(), `juneau-e2e-${this.id}-`));
  private readonly servers = new Map<number, ChildProcess>();
  readonly macs: string[] = [];

  constructor(readonly nodeCount = 3) {}

  node(i: number): string {
    return `je${this.id}n${i}`;
  }
  nodeIp(i: number): string {
    return `${SUBNET}.${11 + i}`;
  }
  nodeOfMac(mac: string): number {
    return this.macs.indexOf(mac.toLowerCase());
  }

  async setup(): Promise<void> {
    await this.addNamespace(this.router);
    await this.in(this.router, 'ip', 'link', 'add', 'br0', 'type', 'bridge');
    await this.in(this.router, 'ip', 'addr', 'add', `${ROUTER_IP}/24`, 'dev', 'br0');
    await this.in(this.router, 'ip', 'link', 'set', 'br0', 'up');
    await this.addNamespace(this.freshClient);
    await this.plug(this.freshClient, 'fc', FRESH_CLIENT_IP);
    for (let i = 0; i < this.nodeCount; i++) {
      const ns = this.node(i);
      await this.addNamespace(ns);
      await this.plug(ns, `p${i}`, this.nodeIp(i));
      // kube-ipvs0 as kube-proxy makes it: the VIPs are local addresses of every node. (This
      // kernel has no dummy driver; a veth left down holds addresses just the same.)
      await this.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'ipvs-peer');
      this.macs.push((await this.mac(ns, 'eth0')).toLowerCase());
    }
  }

  private async addNamespace(ns: string): Promise<void> {
    await exec('ip', ['netns', 'add', ns]);
    await this.in(ns, 'ip', 'link', 'set', 'lo', 'up');
    for (const scope of ['all', 'default']) await this.sysctl(ns, `net.ipv6.conf.${scope}.disable_ipv6`, '1');
  }

  /** A veth from `ns` (as eth0) to a port of the router's bridge. */
  private async plug(ns: string, port: string, address: string): Promise<void> {
    const a = `je${this.id}${port}a`;
    const b = `je${this.id}${port}b`;
    await exec('ip', ['link', 'add', a, 'type', 'veth', 'peer', 'name', b]);
    await exec('ip', ['link', 'set', a, 'netns', ns]);
    await exec('ip', ['link', 'set', b, 'netns', this.router]);
    await this.in(ns, 'ip', 'link', 'set', a, 'name', 'eth0');
    await this.in(ns, 'ip', 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    await this.in(ns, 'ip', 'link', 'set', 'eth0', 'up');
    await this.in(this.router, 'ip', 'link', 'set', b, 'master', 'br0');
    await this.in(this.router, 'ip', 'link', 'set', b, 'up');
  }

  async sysctl(ns: string, key: string, value: string): Promise<void> {
    await this.in(ns, 'sh', '-c', `echo ${value} > /proc/sys/${key.replace(/\./g, '/')}`);
  }

  in(ns: string, cmd: string, ...args: string[]): Promise<string> {
    return inNs(ns, cmd, ...args);
  }

  mac(ns: string, ifname: string): Promise<string> {
    return macIn(ns, ifname);
  }

  /** Puts a VIP on every node's kube-ipvs0, as kube-proxy ipvs does for every LoadBalancer IP. */
  async addVipToAllNodes(vip: string): Promise<void> {
    for (let i = 0; i < this.nodeCount; i++)
      await this.in(this.node(i), 'ip', 'addr', 'add', `${vip}/32`, 'dev', 'kube-ipvs0');
  }

  /**
   * A TCP server on port 80 of node i that answers with the node's index: "which node got it".
   * Scenarios run it exactly while node i has a ready local backend, which is what kube-proxy with
   * externalTrafficPolicy Local amounts to: a node without one does not serve the VIP.
   */
  async serveOnNode(i: number): Promise<void> {
    const running = this.servers.get(i);
    if (running && running.exitCode === null && running.signalCode === null) return;
    // A client killed mid-connection (a probe's `timeout 1`) resets it: ECONNRESET on that socket
    // is no reason for the server to die (unhandled, it exited with code 1 and the node looked
    // unreachable to every later scenario).
    const script = `require('net').createServer((s) => { s.on('error', () => {}); s.end('node-${i}\\n'); }).listen(80, '0.0.0.0', () => console.log('up'))`;
    const child = spawn('nsenter', [`--net=/var/run/netns/${this.node(i)}`, process.execPath, '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    this.servers.set(i, child);
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`server on node ${i} exited ${code}`)));
    });
    // A server that dies on its own would make the node look unreachable to every later scenario.
    child.once('exit', (code, signal) => {
      if (this.servers.get(i) === child)
        process.stderr.write(
          `e2e: the server on node ${i} exited unasked (code ${code}, signal ${signal}); serveOnNode starts it again\n`,
        );
    });
  }

  stopServingOnNode(i: number): void {
    const child = this.servers.get(i);
    this.servers.delete(i);
    child?.kill('SIGKILL');
  }

  /**
   * One TCP exchange from the router to vip:80 through the router's own neighbour cache (never
   * flushed here): the index of the node that answered, or undefined when nothing answered in 1 s.
   */
  async routerReaches(vip: string): Promise<number | undefined> {
    const script = `exec 3<>/dev/tcp/${vip}/80 && head -c 16 <&3`;
    // --norc: bash reads ~/.bashrc when its stdin is a socket (it takes that for rshd; libuv's stdio
    // pipes are socketpairs), and a user's rc file can outlast the 1 s timeout (60 s measured
    // under a backgrounded Jest here): every probe then failed and no scenario could start.
    const out = await this.in(this.router, 'timeout', '1', 'bash', '--norc', '-c', script).catch(() => '');
    const m = /node-(\d+)/.exec(out);
    return m ? Number(m[1]) : undefined;
  }

  /** The router's neighbour entry for an address: its MAC and NUD state, if any. */
  async routerNeighbour(address: string): Promise<{ mac?: string; state: string[] } | undefined> {
    const entries = JSON.parse(
      await this.in(this.router, 'ip', '-j', 'neigh', 'show', address, 'dev', 'br0'),
    ) as Array<{ lladdr?: string; state?: string[] }>;
    return entries[0] ? { mac: entries[0].lladdr?.toLowerCase(), state: entries[0].state ?? [] } : undefined;
  }

  /**
   * OPS-3: what a newcomer on the segment learns — the fresh client's neighbour cache is flushed,
   * one ARP request is sent, and every MAC that answers within `waitMs` is returned (more than one
   * MAC is exactly the failure Juneau exists to prevent).
   */
  async freshResolve(vip: string, waitMs = 500): Promise<string[]> {
    await this.in(this.freshClient, 'ip', 'neigh', 'flush', 'dev', 'eth0');
    const frames = await this.capture(
      this.freshClient,
      'eth0',
      async () => {
        await this.in(this.freshClient, 'arping', '-q', '-c', '1', '-w', '1', '-I', 'eth0', vip).catch(() => '');
      },
      waitMs,
    );
    return [
      ...new Set(frames.filter((f) => f.arp?.op === 2 && f.arp.sip === vip).map((f) => f.arp!.sha.toLowerCase())),
    ];
  }

  /**
   * OPS-2/OPS-3: `count` probes, `intervalMs` apart, each from a fresh router neighbour table (the
   * entry for `vip` is deleted first, so the router broadcasts a new ARP request like a router that
   * never saw the address). Returns, per probe, every MAC that answered — an honest count needs all
   * answers, not the first one, so the whole run is captured and split at each request.
   */
  async probeFromFreshRouter(
    vip: string,
    count: number,
    intervalMs = 1000,
    afterProbe?: (n: number) => Promise<void>,
  ): Promise<string[][]> {
    const routerMac = (await this.mac(this.router, 'br0')).toLowerCase();
    const frames = await this.capture(
      this.router,
      'br0',
      async () => {
        for (let n = 0; n < count; n++) {
          const started = Date.now();
          await this.in(this.router, 'ip', 'neigh', 'del', vip, 'dev', 'br0').catch(() => '');
          await this.in(this.router, 'arping', '-q', '-c', '1', '-w', '1', '-I', 'br0', vip).catch(() => '');
          await afterProbe?.(n);
          await sleep(Math.max(0, intervalMs - (Date.now() - started)));
        }
      },
      300,
    );
    return splitProbes(frames, routerMac, vip);
  }

  /** Every ARP frame `ifname` in `ns` sees while `during` runs (and `settleMs` after). */
  async capture(ns: string, ifname: string, during: () => Promise<void>, settleMs = 200): Promise<Frame[]> {
    const file = path.join(this.tmp, `cap-${randomBytes(3).toString('hex')}.pcap`);
    const tcpdump = await startTcpdump(ns, ifname, file, { filter: ['arp'] });
    try {
      await during();
      await sleep(settleMs);
    } finally {
      await tcpdump.stop();
    }
    return parsePcap(fs.readFileSync(file));
  }

  async destroy(): Promise<void> {
    const servers = [...this.servers.values()];
    this.servers.clear();
    for (const s of servers) s.kill('SIGKILL');
    const nodes = Array.from({ length: this.nodeCount }, (_, i) => this.node(i));
    for (const ns of [this.router, this.freshClient, ...nodes]) await deleteNetns(ns);
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

/** Splits a capture into probes: each ARP request from `requester` for `vip` opens one; the replies for `vip` that follow belong to it. */
export function splitProbes(frames: Frame[], requester: string, vip: string): string[][] {
  const probes: string[][] = [];
  for (const f of frames) {
    if (!f.arp || (f.arp.tip !== vip && f.arp.sip !== vip)) continue;
    if (f.arp.op === 1 && f.arp.sha.toLowerCase() === requester && f.arp.tip === vip) probes.push([]);
    else if (f.arp.op === 2 && f.arp.sip === vip && probes.length) {
      const current = probes[probes.length - 1];
      const mac = f.arp.sha.toLowerCase();
      if (!current.includes(mac)) current.push(mac);
    }
  }
  return probes;
}
