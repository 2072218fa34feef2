// A rig for the ElasticIP NAT (test/netns/nat-*.test.ts), real network namespaces and veths:
//
//   server (203.0.113.2) ==MTU 1280== router (203.0.113.1 | 192.0.2.100)
//                                        |  external segment 192.0.2.0/24
//                                      node (ext0 192.0.2.1, tc_nat_in/out)
//                                        |  pod0 10.0.0.1 (tc_nat_pod)
//                                      pod (eth0 10.0.0.2, default via the node)
//
// The router has no route to 10.0.0.0/24: the pod is reachable only through the ElasticIP.
// The router's neighbour entry for the ElasticIP is static (the node's ext0 MAC): answering ARP
// for it is the XDP responder's job, tested elsewhere. Every veth has checksum offloads off, so
// every checksum is computed in software and verified by the receiving kernel (a veth would
// otherwise hand CHECKSUM_PARTIAL packets over unchecked), and GRO/GSO off so a packet counted
// is a packet on the wire.
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { AGENT_CAPABILITIES } from '../../constructs/shared/install';
import { NatMaps, type NatEntry, type PodDeviceResolver } from '../../runtime/agent/bpf/nat';
import { resolvePodDevice } from '../../runtime/agent/bpf/pod-device';
import type { NatReasonName } from '../../runtime/agent/bpf/layout';
import { removePins } from '../../runtime/agent/bpf/pins';
import { pcapFrames } from './ipv4';
import { deleteNetns, inNetnsSync, inNs, macIn, startTcpdump, startTool, vethBetween } from './ns-tools';
import { sleep } from '../sleep';

const run = promisify(execFile);
const REPO = path.resolve(__dirname, '../..');
const TSX = path.join(REPO, 'node_modules/.bin/tsx');
const LOADER = path.join(__dirname, 'nat-loader.ts');
const TOOL = path.join(__dirname, 'nat_tool.py');

export const EIP = '192.0.2.50';
export const ROUTER_EXT = '192.0.2.100';
export const NODE_EXT = '192.0.2.1';
export const NODE_POD = '10.0.0.1';
export const POD = '10.0.0.2';
export const NODE_POD2 = '10.0.1.1';
export const POD2 = '10.0.1.2';
/** The second pod's address when both pods are on the node's bridge (bridgePods). */
export const POD_BRIDGED = '10.0.0.3';
export const ROUTER_SRV = '203.0.113.1';
export const SERVER = '203.0.113.2';
export const SERVER_MTU = 1280;

/** What both ends of NatRig.tcpEcho reported. */
export interface TcpEcho {
  readonly client: { banner: string; sent: number; echoed: number; intact: boolean };
  readonly server: { client: string; received: number };
}

/** A TcpEcho in which `bytes` went both ways intact and the server saw the client as `seenAs`. */
export const intactEcho = (seenAs: string, bytes: number): TcpEcho => ({
  client: { banner: `client=${seenAs}`, sent: bytes, echoed: bytes, intact: true },
  server: { client: seenAs, received: bytes },
});

export class NatRig {
  readonly id = randomBytes(3).toString('hex');
  readonly router = `jn${this.id}r`;
  readonly node = `jn${this.id}n`;
  readonly pod = `jn${this.id}p`;
  readonly server = `jn${this.id}s`;
  /** A second pod, behind the node's pod1, after addSecondPod(). */
  readonly pod2 = `jn${this.id}q`;
  private hasPod2 = false;
  readonly pinDir = `/sys/fs/bpf/juneau-test-${this.id}-nat`;
  private readonly tmp = fs.mkdtempSync(path.join(os.tmpdir(), `juneau-nat-${this.id}-`));
  private readonly children = new Set<ChildProcess>();
  private openMaps: NatMaps | undefined;
  nodeExtMac = '';
  routerMac = '';

  /** `offloads`: keep the veths' defaults (checksum offload, GSO/GRO, TSO) instead of turning them
   * off, so packets cross the NAT as GSO super-packets with CHECKSUM_PARTIAL, as from real NICs. */
  constructor(private readonly options: { readonly offloads?: boolean } = {}) {}

  async setup(): Promise<void> {
    await run('bash', [path.join(REPO, 'bpf/build.sh')]);
    for (const ns of [this.router, this.node, this.pod, this.server]) {
      await run('ip', ['netns', 'add', ns]);
      await this.in(ns, 'ip', 'link', 'set', 'lo', 'up');
      for (const scope of ['all', 'default']) await this.sysctl(ns, `net.ipv6.conf.${scope}.disable_ipv6`, '1');
    }
    await this.link(this.router, 'r0', this.node, 'ext0');
    await this.link(this.node, 'pod0', this.pod, 'eth0');
    await this.link(this.router, 's0', this.server, 'eth0');
    await this.addr(this.router, 'r0', `${ROUTER_EXT}/24`);
    await this.addr(this.router, 's0', `${ROUTER_SRV}/24`);
    await this.addr(this.node, 'ext0', `${NODE_EXT}/24`);
    await this.addr(this.node, 'pod0', `${NODE_POD}/24`);
    await this.addr(this.pod, 'eth0', `${POD}/24`);
    await this.addr(this.server, 'eth0', `${SERVER}/24`);
    for (const [ns, dev] of [
      [this.router, 's0'],
      [this.server, 'eth0'],
    ])
      await this.in(ns, 'ip', 'link', 'set', dev, 'mtu', String(SERVER_MTU));
    for (const ns of [this.router, this.node]) await this.sysctl(ns, 'net.ipv4.ip_forward', '1');
    await this.in(this.node, 'ip', 'route', 'add', 'default', 'via', ROUTER_EXT);
    await this.in(this.pod, 'ip', 'route', 'add', 'default', 'via', NODE_POD);
    await this.in(this.server, 'ip', 'route', 'add', 'default', 'via', ROUTER_SRV);
    this.nodeExtMac = await this.mac(this.node, 'ext0');
    this.routerMac = await this.mac(this.router, 'r0');
    await this.in(
      this.router,
      'ip',
      'neigh',
      'replace',
      EIP,
      'lladdr',
      this.nodeExtMac,
      'dev',
      'r0',
      'nud',
      'permanent',
    );
    // What the NAT passes untouched to the ElasticIP stops at the node instead of bouncing
    // between node and router until its TTL runs out (the router sends the ElasticIP to the node).
    await this.in(this.node, 'ip', 'route', 'add', 'blackhole', `${EIP}/32`);
  }

  /** Adds the second pod (10.0.1.2 behind the node's pod1, 10.0.1.1). */
  async addSecondPod(): Promise<void> {
    await run('ip', ['netns', 'add', this.pod2]);
    this.hasPod2 = true;
    await this.in(this.pod2, 'ip', 'link', 'set', 'lo', 'up');
    await this.link(this.node, 'pod1', this.pod2, 'eth0');
    await this.addr(this.node, 'pod1', `${NODE_POD2}/24`);
    await this.addr(this.pod2, 'eth0', `${POD2}/24`);
    await this.in(this.pod2, 'ip', 'route', 'add', 'default', 'via', NODE_POD2);
  }

  /** Puts the pods on one bridge, as a bridge CNI does (cni0): br0 takes the node's 10.0.0.1, pod0
   * becomes its port, and the second pod (POD_BRIDGED) joins it through the port pod1. */
  async bridgePods(): Promise<void> {
    await run('ip', ['netns', 'add', this.pod2]);
    this.hasPod2 = true;
    await this.in(this.pod2, 'ip', 'link', 'set', 'lo', 'up');
    await this.in(this.node, 'ip', 'addr', 'del', `${NODE_POD}/24`, 'dev', 'pod0');
    await this.in(this.node, 'ip', 'link', 'add', 'br0', 'type', 'bridge');
    await this.link(this.node, 'pod1', this.pod2, 'eth0');
    for (const port of ['pod0', 'pod1']) await this.in(this.node, 'ip', 'link', 'set', port, 'master', 'br0');
    await this.in(this.node, 'ip', 'link', 'set', 'br0', 'up');
    await this.addr(this.node, 'br0', `${NODE_POD}/24`);
    await this.addr(this.pod2, 'eth0', `${POD_BRIDGED}/24`);
    for (const ns of [this.pod, this.pod2]) await this.in(ns, 'ip', 'route', 'replace', 'default', 'via', NODE_POD);
  }

  /** The ifindex of `dev` in the node namespace. */
  async nodeIfindex(dev: string): Promise<number> {
    const [link] = JSON.parse(await this.in(this.node, 'ip', '-j', 'link', 'show', 'dev', dev)) as Array<{
      ifindex: number;
    }>;
    return link.ifindex;
  }

  private link(nsA: string, devA: string, nsB: string, devB: string): Promise<void> {
    return vethBetween({ prefix: `jn${this.id}`, offloads: !!this.options.offloads }, nsA, devA, nsB, devB);
  }

  private async addr(ns: string, dev: string, cidr: string): Promise<void> {
    await this.in(ns, 'ip', 'addr', 'add', cidr, 'dev', dev);
  }

  async sysctl(ns: string, key: string, value: string): Promise<void> {
    await this.in(ns, 'sh', '-c', `echo ${value} > /proc/sys/${key.replace(/\./g, '/')}`);
  }

  async destroy(): Promise<void> {
    for (const child of this.children) child.kill('SIGKILL');
    this.openMaps?.close();
    const namespaces = [this.router, this.node, this.pod, this.server, ...(this.hasPod2 ? [this.pod2] : [])];
    for (const ns of namespaces) await deleteNetns(ns);
    removePins(this.pinDir);
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }

  in(ns: string, cmd: string, ...args: string[]): Promise<string> {
    return inNs(ns, cmd, ...args);
  }

  mac(ns: string, dev: string): Promise<string> {
    return macIn(ns, dev);
  }

  /** Loads the NAT programs onto the node from a separate process that exits, holding only the
   * agent's capabilities (AGENT_CAPABILITIES of the install manifest): the verifier is stricter
   * without CAP_PERFMON, and a program only root can load would not load in the DaemonSet. */
  async attach(
    pods: string[] = ['pod0'],
    options: { readonly kernelForward?: boolean } = {},
  ): Promise<{ filters: { in: number; out: number } }> {
    const caps = `-all,${AGENT_CAPABILITIES.map((c) => `+${c.toLowerCase()}`).join(',')}`;
    const request = JSON.stringify({ ext: 'ext0', pods, pinDir: this.pinDir, ...options });
    return JSON.parse(
      await this.in(
        this.node,
        'setpriv',
        `--bounding-set=${caps}`,
        '--inh-caps=-all',
        '--',
        TSX,
        LOADER,
        'attach',
        request,
      ),
    ) as { filters: { in: number; out: number } };
  }

  /** Runs nat-loader.ts `command` in the node namespace with `request` (ext0 and this rig's pins
   * filled in); its JSON answer. */
  async loader<T>(command: string, request: object = {}): Promise<T> {
    const json = JSON.stringify({ ext: 'ext0', pinDir: this.pinDir, ...request });
    return JSON.parse(await this.in(this.node, TSX, LOADER, command, json)) as T;
  }

  async detach(pods: string[] = ['pod0']): Promise<void> {
    await this.in(this.node, TSX, LOADER, 'detach', JSON.stringify({ ext: 'ext0', pods, pinDir: this.pinDir }));
  }

  /** The pinned maps, opened from the test process (bpffs is not per namespace); the pods' devices
   * resolved by the agent's own code in the node namespace. */
  maps(): NatMaps {
    this.openMaps ??= NatMaps.openPinned(this.pinDir, resolverIn(this.node));
    return this.openMaps;
  }

  /** Runs nat_tool.py to completion and parses its JSON line. */
  async tool<T>(ns: string, ...args: string[]): Promise<T> {
    const out = await this.in(ns, 'python3', TOOL, ...args);
    return JSON.parse(out.trim().split('\n').pop()!) as T;
  }

  /** A TCP transfer of `bytes`, echoed back: nat_tool.py tcp-server in `serverNs` on `port`, a
   * tcp-client from `clientNs` to `address`; what each side reported. */
  async tcpEcho(clientNs: string, serverNs: string, address: string, port: number, bytes: number): Promise<TcpEcho> {
    const server = await this.serve<TcpEcho['server']>(serverNs, 'tcp-server', String(port));
    const client = await this.tool<TcpEcho['client']>(clientNs, 'tcp-client', address, String(port), String(bytes));
    return { client, server: await server.result };
  }

  /** Starts nat_tool.py as a server; resolves once it listens; `result` resolves with its JSON. */
  serve<T>(ns: string, ...args: string[]): Promise<{ result: Promise<T> }> {
    return startTool<T>(this.children, ns, TOOL, 'listening', args);
  }

  /** Every frame `dev` in `ns` sees while `during` runs (tcpdump, optional filter). */
  async capture(ns: string, dev: string, during: () => Promise<void>, filter: string[] = []): Promise<Buffer[]> {
    const file = path.join(this.tmp, `cap-${randomBytes(3).toString('hex')}.pcap`);
    const tcpdump = await startTcpdump(ns, dev, file, { filter, bufferKiB: 16384 });
    try {
      await during();
      await sleep(200);
    } finally {
      await tcpdump.stop();
    }
    const dropped = Number(/(\d+) packets? dropped by kernel/.exec(tcpdump.stderr())?.[1] ?? 0);
    if (dropped > 0) throw new Error(`the capture lost ${dropped} frame(s); what it saw cannot be judged`);
    return pcapFrames(fs.readFileSync(file));
  }

  /** What `send` resolved to and every frame `dev` in `ns` saw while it ran (tcpdump `filter`). */
  async sendCaptured<T>(
    at: { readonly ns: string; readonly dev: string; readonly filter: string[] },
    send: () => Promise<T>,
  ): Promise<{ sent: T; frames: Buffer[] }> {
    let sent: T | undefined;
    const frames = await this.capture(at.ns, at.dev, async () => void (sent = await send()), at.filter);
    return { sent: sent as T, frames };
  }

  /** The per-ElasticIP packet and byte counters of `elasticIP`. */
  counters(elasticIP = EIP): NatEntry {
    const entry = this.maps()
      .entries()
      .find((e) => e.elasticIP === elasticIP);
    if (!entry) throw new Error(`no NAT entry for ${elasticIP}`);
    return entry;
  }

  /** The NAT reason counters that moved since `before` (a `maps().stats()`), by how much. */
  statsSince(before: Record<NatReasonName, bigint>): Partial<Record<NatReasonName, bigint>> {
    return Object.fromEntries(
      Object.entries(this.maps().stats())
        .map(([k, v]) => [k, v - before[k as NatReasonName]])
        .filter(([, v]) => v !== 0n),
    );
  }

  /** Sends one frame, byte by byte, from the router's r0 (mausezahn raw mode). */
  async sendFrame(frame: Buffer): Promise<void> {
    const hex = [...frame].map((b) => b.toString(16).padStart(2, '0')).join(':');
    await this.in(this.router, 'mausezahn', 'r0', '-q', '-c', '1', hex);
  }

  /** The route MTU the kernel of `ns` learned for `address` (PMTU cache), or undefined. */
  async learnedMtu(ns: string, address: string): Promise<number | undefined> {
    const out = await this.in(ns, 'ip', 'route', 'get', address);
    const m = /\bmtu (\d+)/.exec(out);
    return m ? Number(m[1]) : undefined;
  }
}

/** The agent's resolvePodDevice, run in the network namespace `ns`. */
export const resolverIn =
  (ns: string): PodDeviceResolver =>
  (address) =>
    inNetnsSync(ns, () => resolvePodDevice(address));

/** A NatRig set up before the enclosing describe's tests and destroyed after them. */
export function useNatRig(options: { readonly offloads?: boolean } = {}): NatRig {
  const rig = new NatRig(options);
  beforeAll(() => rig.setup(), 60_000);
  afterAll(() => rig.destroy(), 60_000);
  return rig;
}

/** A NatRig with the programs attached and the one binding EIP -> POD, for the enclosing describe. */
export function useBoundNatRig(): NatRig {
  const rig = useNatRig();
  beforeAll(async () => {
    await rig.attach();
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
  }, 60_000);
  return rig;
}
