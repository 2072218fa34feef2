// A rig for the NATGateway data path (runtime/agent/ngw/), real network namespaces and veths:
//
//   server 203.0.113.2 ==MTU 1280== router (203.0.113.1 | br0 198.51.100.254, the outside)
//                                     |  one L2 segment 198.51.100.0/24 (the nodes' underlay and
//                                     |  the ExternalNetwork; the router routes 10.244.k.0/24 to node k)
//        node1 .1            node2 .2            node3 .3      (eth0; pod routes 10.244.j.0/24 via .j)
//        p2 p3 p4            p2                  p2            (one veth per pod, routed /32, proxy ARP)
//   10.244.1.2 .3 .4      10.244.2.2          10.244.3.2
//
// The gateway address 198.51.100.60 is "answered" by a static neighbour entry on the router that
// names the gateway node's MAC (answering ARP is the XDP responder's job, tested elsewhere).
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { NgwDataplane } from '../../runtime/agent/ngw/sync';
import { desiredNgw, type NgwDesired, type NgwNodeInput } from '../../runtime/agent/ngw/desired';
import { deleteNetns, inNetnsSync, inNs, macIn, startTool, vethBetween } from './ns-tools';

const run = promisify(execFile);
const NGW_TOOL = path.join(__dirname, 'ngw_tool.py');
const NAT_TOOL = path.join(__dirname, 'nat_tool.py');

export const ROUTER = '198.51.100.254';
export const GATEWAY_ADDRESS = '198.51.100.60';
export const SERVER = '203.0.113.2';
export const SERVER_MTU = 1280;
export const nodeAddress = (k: number) => `198.51.100.${k}`;
export const podAddress = (k: number, j: number) => `10.244.${k}.${j}`;
export const CLUSTER_RANGES = ['10.244.0.0/16', '10.96.0.0/12', nodeAddress(1), nodeAddress(2), nodeAddress(3)];

export class NgwRig {
  readonly id = randomBytes(2).toString('hex');
  readonly router = `ngwp-${this.id}-r`;
  readonly server = `ngwp-${this.id}-s`;
  readonly namespaces: string[] = [];
  private readonly children = new Set<ChildProcess>();
  readonly dataplanes = new Map<number, NgwDataplane>();
  /** What apply() last computed for each node. */
  readonly desired = new Map<number, NgwDesired>();

  node(k: number): string {
    return `ngwp-${this.id}-n${k}`;
  }
  pod(k: number, j: number): string {
    return `ngwp-${this.id}-p${k}${j}`;
  }

  async setup(pods: ReadonlyArray<[number, number]>): Promise<void> {
    for (const ns of [
      this.router,
      this.server,
      this.node(1),
      this.node(2),
      this.node(3),
      ...pods.map(([k, j]) => this.pod(k, j)),
    ]) {
      await run('ip', ['netns', 'add', ns]);
      this.namespaces.push(ns);
      await this.in(ns, 'ip', 'link', 'set', 'lo', 'up');
      await this.sysctl(ns, 'net.ipv6.conf.all.disable_ipv6', '1');
    }
    await this.in(this.router, 'ip', 'link', 'add', 'br0', 'type', 'bridge');
    await this.in(this.router, 'ip', 'link', 'set', 'br0', 'up');
    await this.in(this.router, 'ip', 'addr', 'add', `${ROUTER}/24`, 'dev', 'br0');
    await this.link(this.router, 's0', this.server, 'eth0');
    await this.in(this.router, 'ip', 'addr', 'add', '203.0.113.1/24', 'dev', 's0');
    await this.in(this.server, 'ip', 'addr', 'add', `${SERVER}/24`, 'dev', 'eth0');
    for (const [ns, dev] of [
      [this.router, 's0'],
      [this.server, 'eth0'],
    ])
      await this.in(ns, 'ip', 'link', 'set', dev, 'mtu', String(SERVER_MTU));
    // advmss: the server announces an MSS of its 1500-byte peers, so the pods send segments the
    // 1280 hop must refuse (frag-needed), rather than learning the hop from the handshake.
    await this.in(this.server, 'ip', 'route', 'add', 'default', 'via', '203.0.113.1', 'advmss', '1460');
    await this.sysctl(this.router, 'net.ipv4.ip_forward', '1');
    for (const k of [1, 2, 3]) {
      const node = this.node(k);
      await this.link(this.router, `n${k}`, node, 'eth0');
      await this.in(this.router, 'ip', 'link', 'set', `n${k}`, 'master', 'br0');
      await this.in(node, 'ip', 'addr', 'add', `${nodeAddress(k)}/24`, 'dev', 'eth0');
      await this.in(node, 'ip', 'route', 'add', 'default', 'via', ROUTER);
      await this.sysctl(node, 'net.ipv4.ip_forward', '1');
      await this.in(this.router, 'ip', 'route', 'add', `10.244.${k}.0/24`, 'via', nodeAddress(k));
      for (const other of [1, 2, 3].filter((o) => o !== k))
        await this.in(node, 'ip', 'route', 'add', `10.244.${other}.0/24`, 'via', nodeAddress(other));
    }
    for (const [k, j] of pods) {
      const pod = this.pod(k, j);
      await this.link(this.node(k), `p${j}`, pod, 'eth0');
      await this.sysctl(this.node(k), `net.ipv4.conf.p${j}.proxy_arp`, '1');
      await this.in(this.node(k), 'ip', 'route', 'add', `${podAddress(k, j)}/32`, 'dev', `p${j}`);
      await this.in(pod, 'ip', 'addr', 'add', `${podAddress(k, j)}/32`, 'dev', 'eth0');
      await this.in(pod, 'ip', 'route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link');
      await this.in(pod, 'ip', 'route', 'add', 'default', 'via', '169.254.1.1');
    }
  }

  /** Points the router's neighbour entry for `address` at node k's MAC (what ARP would do). */
  async answer(address: string, k: number): Promise<void> {
    const mac = await macIn(this.node(k), 'eth0');
    await this.in(this.router, 'ip', 'neigh', 'replace', address, 'lladdr', mac, 'dev', 'br0', 'nud', 'permanent');
  }

  /** The agent's pure function and sync on node k, in its namespace. */
  apply(k: number, input: Omit<NgwNodeInput, 'nodeAddress'>): NgwDesired {
    const desired = desiredNgw({ ...input, nodeAddress: nodeAddress(k) });
    let dp = this.dataplanes.get(k);
    if (!dp) this.dataplanes.set(k, (dp = new NgwDataplane({ underlayDevice: 'eth0', underlayMtu: 1500 })));
    inNetnsSync(this.node(k), () => dp.sync(desired));
    this.desired.set(k, desired);
    return desired;
  }

  private link(nsA: string, devA: string, nsB: string, devB: string): Promise<void> {
    return vethBetween({ prefix: `ngwp${this.id}`, offloads: false }, nsA, devA, nsB, devB);
  }

  async sysctl(ns: string, key: string, value: string): Promise<void> {
    await this.in(ns, 'sh', '-c', `echo ${value} > /proc/sys/${key.replace(/\./g, '/')}`);
  }

  in(ns: string, cmd: string, ...args: string[]): Promise<string> {
    return inNs(ns, cmd, ...args);
  }

  /** Runs nat_tool.py (`nat`) or ngw_tool.py to completion; its last JSON line. */
  async tool<T>(ns: string, which: 'nat' | 'ngw', ...args: string[]): Promise<T> {
    const stdout = await this.in(ns, 'python3', which === 'nat' ? NAT_TOOL : NGW_TOOL, ...args);
    return JSON.parse(stdout.trim().split('\n').pop()!) as T;
  }

  /** Starts a tool; resolves once it printed `ready`; `result` is its last JSON line. */
  start<T>(ns: string, which: 'nat' | 'ngw', ready: string, ...args: string[]): Promise<{ result: Promise<T> }> {
    return startTool<T>(this.children, ns, which === 'nat' ? NAT_TOOL : NGW_TOOL, ready, args);
  }

  async destroy(): Promise<void> {
    for (const child of this.children) child.kill('SIGKILL');
    for (const ns of this.namespaces) await deleteNetns(ns);
  }
}
