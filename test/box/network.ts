// The box's network: a bridge in the host namespace holding the nodes' L2 segment (the API server
// binds to the host's address on it), one network namespace per node plugged into it with a veth
// (`eth0` inside), routes so pods on different nodes and the host reach each other without NAT,
// and each node's CNI configuration (bridge + host-local, pods on `cni0` inside the node).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cmd, CommandError, inNetns } from './exec';
import { BoxRecorder, BoxState, HOST_DIR, NodeRecord } from './state';

/** `ip` errors that mean "already gone": cleanup of something never created, or removed with its namespace. */
const MISSING = /Cannot find device|No such file|No such process|does not exist|not found/i;

async function ignoreMissing(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof CommandError && MISSING.test(e.stderr))) throw e;
  }
}

export async function createBridge(state: BoxState): Promise<void> {
  // The nodes set bridge-nf-call-iptables (below); where br_netfilter is a module, load it.
  if (!fs.existsSync('/proc/sys/net/bridge')) await cmd('modprobe', ['br_netfilter']);
  await cmd('ip', ['link', 'add', state.bridge, 'type', 'bridge']);
  await cmd('ip', ['addr', 'add', `${state.hostIp}/24`, 'dev', state.bridge]);
  await cmd('ip', ['link', 'set', state.bridge, 'up']);
}

/** Node i's namespace, its eth0 on the bridge, forwarding on, routes to the other nodes' pods. */
export async function createNodeNetwork(rec: BoxRecorder, node: NodeRecord): Promise<void> {
  const { state } = rec;
  await cmd('ip', ['netns', 'add', node.netns]);
  await inNetns(node.netns, 'ip', ['link', 'set', 'lo', 'up']);
  const inner = `${node.hostVeth}i`;
  await cmd('ip', ['link', 'add', node.hostVeth, 'type', 'veth', 'peer', 'name', inner, 'netns', node.netns]);
  await cmd('ip', ['link', 'set', node.hostVeth, 'master', state.bridge]);
  await cmd('ip', ['link', 'set', node.hostVeth, 'up']);
  await inNetns(node.netns, 'ip', ['link', 'set', inner, 'name', 'eth0']);
  await inNetns(node.netns, 'ip', ['addr', 'add', `${node.ip}/24`, 'dev', 'eth0']);
  await inNetns(node.netns, 'ip', ['link', 'set', 'eth0', 'up']);
  await inNetns(node.netns, 'ip', ['route', 'add', 'default', 'via', state.hostIp]);
  // A node routes its pods' traffic; bridged pod-to-pod traffic on cni0 must meet kube-proxy's
  // conntrack too, or a Service backend on the same node answers its client unNATed.
  await sysctlIn(node.netns, 'net.ipv4.ip_forward', '1');
  await sysctlIn(node.netns, 'net.bridge.bridge-nf-call-iptables', '1');
  for (const other of state.nodes) {
    if (other === node) continue;
    await inNetns(node.netns, 'ip', ['route', 'add', other.podCidr, 'via', other.ip]);
  }
  // The host (API server, tests) reaches pods directly, and answers them.
  const route = [node.podCidr, 'via', node.ip, 'dev', state.bridge];
  rec.record((s) => s.hostRoutes.push(route.join(' ')));
  await cmd('ip', ['route', 'add', ...route]);
}

async function sysctlIn(netns: string, key: string, value: string): Promise<void> {
  await inNetns(netns, 'sh', ['-c', `echo ${value} > /proc/sys/${key.replace(/\./g, '/')}`]);
}

/** The CNI network's name: libcni caches results in /var/lib/cni/results/<name>-<container>-<if>,
 * so a name of the node's own lets `down` find what a killed containerd left there. */
export const cniNetworkName = (node: NodeRecord) => node.netns;
export const CNI_CACHE_DIR = '/var/lib/cni/results';

/** bridge + host-local, the node's pod CIDR; IPAM state in the node's directory. */
export function writeCniConfig(node: NodeRecord): string {
  const confDir = path.join(node.dir, 'cni', 'net.d');
  fs.mkdirSync(confDir, { recursive: true });
  const conf = {
    cniVersion: '0.4.0',
    name: cniNetworkName(node),
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: node.podCidr, ...podRange(node) }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: path.join(node.dir, 'cni', 'ipam'),
        },
      },
    ],
  };
  fs.writeFileSync(path.join(confDir, '10-box.conflist'), JSON.stringify(conf, null, 2) + '\n');
  return confDir;
}

/** host-local's rangeStart/rangeEnd for `up --pod-ips N`: .2 to .(N+1) of the node's pod range. */
function podRange(node: NodeRecord): { rangeStart?: string; rangeEnd?: string } {
  if (!node.podIPs) return {};
  const base = node.podCidr.replace(/\.0\/24$/, '');
  return { rangeStart: `${base}.2`, rangeEnd: `${base}.${node.podIPs + 1}` };
}

/** Removes the nodes' namespaces (with everything inside: links, routes, nftables), the host veths,
 * routes and bridge. Anything already gone is skipped. */
export async function removeNetwork(state: BoxState): Promise<void> {
  for (const node of state.nodes) {
    if (fs.existsSync(CNI_CACHE_DIR)) {
      for (const f of fs.readdirSync(CNI_CACHE_DIR))
        if (f.startsWith(`${cniNetworkName(node)}-`)) fs.rmSync(path.join(CNI_CACHE_DIR, f), { force: true });
    }
    await ignoreMissing(cmd('ip', ['netns', 'del', node.netns]));
    await ignoreMissing(cmd('ip', ['link', 'del', node.hostVeth]));
  }
  for (const route of state.hostRoutes) await ignoreMissing(cmd('ip', ['route', 'del', ...route.split(' ')]));
  await ignoreMissing(cmd('ip', ['link', 'del', state.bridge]));
}

// ---------------------------------------------------------------------------------------------
// Kernel settings the kubelet changes host-wide (it insists on vm.overcommit_memory=1,
// kernel.panic=10, kernel.panic_on_oops=1, ...; with protectKernelDefaults it refuses to start
// instead). The first box saves the host's values; the last box's `down` puts them back.

const KUBELET_SYSCTLS = [
  'vm.overcommit_memory',
  'vm.panic_on_oom',
  'kernel.panic',
  'kernel.panic_on_oops',
  'kernel.keys.root_maxkeys',
  'kernel.keys.root_maxbytes',
];
const SAVED_SYSCTLS = path.join(HOST_DIR, 'sysctls.json');
const sysctlFile = (key: string) => `/proc/sys/${key.replace(/\./g, '/')}`;

export function saveHostSysctls(): void {
  if (fs.existsSync(SAVED_SYSCTLS)) return; // another box saved the host's own values first
  const values = Object.fromEntries(KUBELET_SYSCTLS.map((k) => [k, fs.readFileSync(sysctlFile(k), 'utf8').trim()]));
  fs.mkdirSync(HOST_DIR, { recursive: true });
  fs.writeFileSync(SAVED_SYSCTLS, JSON.stringify(values, null, 2) + '\n');
}

/** Puts the saved values back when no box claims a subnet any more. */
export function restoreHostSysctls(): void {
  if (!fs.existsSync(SAVED_SYSCTLS)) return;
  if (fs.readdirSync(HOST_DIR).some((f) => f.startsWith('subnet-'))) return;
  const values = JSON.parse(fs.readFileSync(SAVED_SYSCTLS, 'utf8')) as Record<string, string>;
  for (const [k, v] of Object.entries(values)) fs.writeFileSync(sysctlFile(k), v);
  fs.rmSync(SAVED_SYSCTLS);
}
