// Each node's own mount namespace, so what one node mounts — and what its pods see through
// hostPath — is its own: above all /sys/fs/bpf, a fresh bpffs per node (an agent DaemonSet pins
// its maps under the same hostPath on every node; on one kernel with one bpffs they would
// collide). Container root filesystems, volumes and pod network namespaces are mounted inside it
// too, and go away with it. The namespace is held by a bind mount on a file in
// /run/juneau-box/mnt, a private mount (as `ip netns` does for /var/run/netns), so that hosts
// whose / is a shared mount accept it. The node's CNI bin and conf dirs are bound at the paths a
// real node has them (/opt/cni/bin, /etc/cni/net.d: the install's defaults), so the agent
// DaemonSet of the manifest as synthesized installs juneau-cni on each node as on any (CNI-1).
// Likewise the BGP daemon's directory (/run/juneau/bgp: BIRD's configuration and control socket,
// shared by the agent Pod's agent and bird containers): the nodes share the host's /run, so
// without a bind of its own per node the three BIRDs would read one file and race for one socket.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BIRD_HOST_DIR } from '../../constructs/shared/install/agent';
import { cmd, CommandError } from './exec';
import { HOST_DIR, NodeRecord } from './state';

const MNTNS_DIR = path.join(HOST_DIR, 'mnt');

/** Where a node's runtime and the agent see the node's CNI dirs (the install's cniBinDir, cniConfDir defaults). */
export const NODE_CNI_BIN_DIR = '/opt/cni/bin';
export const NODE_CNI_CONF_DIR = '/etc/cni/net.d';
/** The host's CNI plugins (Debian's containernetworking-plugins), linked into each node's bin dir. */
const HOST_CNI_PLUGINS = '/usr/lib/cni';

/** The node's own CNI dirs on the host, bound at NODE_CNI_BIN_DIR and NODE_CNI_CONF_DIR inside it. */
export const nodeCniDirs = (node: NodeRecord) => ({
  bin: path.join(node.dir, 'cni', 'bin'),
  conf: path.join(node.dir, 'cni', 'net.d'),
});

/** The node's own BGP daemon directory on the host, bound at BIRD_HOST_DIR inside it. */
export const nodeBgpDir = (node: NodeRecord) => path.join(node.dir, 'bgp');

export const mountNsFile = (node: NodeRecord) => path.join(MNTNS_DIR, node.netns);

function isMountPoint(dir: string): boolean {
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[4] === dir);
}

/** Once per box, before its nodes start in parallel (two binds at once would stack). */
export async function ensureMountNsDir(): Promise<void> {
  fs.mkdirSync(MNTNS_DIR, { recursive: true });
  if (!isMountPoint(MNTNS_DIR)) {
    await cmd('mount', ['--bind', MNTNS_DIR, MNTNS_DIR]);
    await cmd('mount', ['--make-private', MNTNS_DIR]);
  }
}

export async function createNodeMountNs(node: NodeRecord): Promise<void> {
  const file = mountNsFile(node);
  fs.writeFileSync(file, '');
  const cni = nodeCniDirs(node);
  const bgp = nodeBgpDir(node);
  for (const dir of [cni.bin, cni.conf, bgp, NODE_CNI_BIN_DIR, NODE_CNI_CONF_DIR, BIRD_HOST_DIR])
    fs.mkdirSync(dir, { recursive: true });
  for (const plugin of fs.readdirSync(HOST_CNI_PLUGINS)) {
    const link = path.join(cni.bin, plugin);
    if (!fs.existsSync(link)) fs.symlinkSync(path.join(HOST_CNI_PLUGINS, plugin), link);
  }
  // Slave: the node still sees what the host mounts later; nothing it mounts reaches the host.
  await cmd('unshare', [
    `--mount=${file}`,
    '--propagation',
    'slave',
    'sh',
    '-ec',
    'mount -t bpf bpf /sys/fs/bpf; mount --bind "$1" "$2"; mount --bind "$3" "$4"; mount --bind "$5" "$6"',
    'sh',
    cni.bin,
    NODE_CNI_BIN_DIR,
    cni.conf,
    NODE_CNI_CONF_DIR,
    bgp,
    BIRD_HOST_DIR,
  ]);
}

/** Drops the node's mount namespace (its mounts go when its last process has exited). */
export async function removeNodeMountNs(node: NodeRecord): Promise<void> {
  const file = mountNsFile(node);
  if (!fs.existsSync(file)) return;
  try {
    await cmd('umount', [file]);
  } catch (e) {
    if (!(e instanceof CommandError && /not mounted/.test(e.stderr))) throw e;
  }
  fs.rmSync(file);
}

/** Unmounts the shared /run/juneau-box/mnt once no node namespace is left in it. */
export async function releaseMountNsDir(): Promise<void> {
  if (!fs.existsSync(MNTNS_DIR) || fs.readdirSync(MNTNS_DIR).length > 0) return;
  while (isMountPoint(MNTNS_DIR)) await cmd('umount', [MNTNS_DIR]); // stacked binds, if ever
  fs.rmdirSync(MNTNS_DIR);
}
