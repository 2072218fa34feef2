// One node of the box: its cgroup, network namespace, containerd (with the pause image and any
// extra images imported), kubelet, kube-proxy and the kube-ipvs0 loop (ipvs.ts) — each daemon started inside the node's network
// namespace and `daemons` cgroup, and recorded before anything waits on it. Also its teardown.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isAlive, Managed, spawnManaged, tail } from '../cluster/processes';
import { createNodeCgroup, joinCgroupCommand, killCgroupTree, removeCgroupTree } from './cgroups';
import {
  containerdPaths,
  importImages,
  sandboxIdsOf,
  shimSocketsOf,
  waitForContainerd,
  writeContainerdConfig,
} from './containerd';
import { allSteps, cmd } from './exec';
import { createKubeIpvs0, KUBE_IPVS0, writeIpvsSyncScript } from './ipvs';
import { ControlPlaneAccess, kubeletArgs, writeKubeletFiles, writeKubeProxyConfig } from './kubelet';
import { createNodeMountNs, mountNsFile, NODE_CNI_CONF_DIR, removeNodeMountNs } from './mounts';
import { CNI_CACHE_DIR, createNodeNetwork, writeCniConfig } from './network';
import { BoxRecorder, NodeRecord } from './state';

export interface NodeStartOptions {
  binDir: string;
  controlPlane: ControlPlaneAccess;
  /** OCI archives imported into the node's containerd, the pause image first. */
  images: string[];
  deadline: number;
  log: (line: string) => void;
}

export async function startNode(rec: BoxRecorder, node: NodeRecord, opts: NodeStartOptions): Promise<void> {
  const t0 = Date.now();
  fs.mkdirSync(node.dir, { recursive: true });
  createNodeCgroup(node.cgroup);
  await createNodeNetwork(rec, node);
  await createNodeMountNs(node);

  writeCniConfig(node);
  const containerd = writeContainerdConfig(node, NODE_CNI_CONF_DIR);
  const ctrd = startDaemon(rec, node, 'containerd', '/usr/bin/containerd', ['--config', containerd.config]);
  await waitForContainerd(containerd, () => !ctrd.exited, opts.deadline).catch((e) => {
    throw withLog(e, ctrd);
  });
  await importImages(containerd, opts.images);
  opts.log(
    `box: ${node.name}: containerd up, ${opts.images.length} image archive(s) imported after ${Date.now() - t0} ms`,
  );

  const kubelet = await writeKubeletFiles(opts.controlPlane, node, containerd);
  startDaemon(rec, node, 'kubelet', path.join(opts.binDir, 'kubelet'), kubeletArgs(node, kubelet));
  const proxyConfig = await writeKubeProxyConfig(opts.controlPlane, node, rec.state.clusterCidr);
  startDaemon(rec, node, 'kube-proxy', path.join(opts.binDir, 'kube-proxy'), [`--config=${proxyConfig}`]);
  // ipvs mode's kube-ipvs0 beside the nftables proxier (ipvs.ts says why), with kube-proxy's identity.
  await createKubeIpvs0(node);
  startDaemon(rec, node, KUBE_IPVS0, '/bin/sh', [
    writeIpvsSyncScript(node),
    path.join(opts.binDir, 'kubectl'),
    path.join(node.dir, 'kube-proxy', 'kubeconfig'),
  ]);
}

function withLog(e: Error, m: Managed): Error {
  return new Error(`${e.message}\n--- last lines of ${m.logFile} ---\n${tail(m.logFile, 30)}`);
}

/** Starts `bin` in the node's network and mount namespaces and `daemons` cgroup, in its own process group. */
function startDaemon(rec: BoxRecorder, node: NodeRecord, name: string, bin: string, args: string[]): Managed {
  const logFile = path.join(node.dir, 'logs', `${name}.log`);
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const [sh, shArgs] = joinCgroupCommand(node.cgroup, [
    'nsenter',
    `--net=/var/run/netns/${node.netns}`,
    `--mount=${mountNsFile(node)}`,
    bin,
    ...args,
  ]);
  const m = spawnManaged(sh, name, shArgs, logFile, true);
  rec.record((s) => s.processes.push({ name, node: node.name, pid: m.child.pid!, bin, logFile }));
  return m;
}

/** Mount points at or below `dir`, most recently mounted first (so stacked mounts come off in order). */
function mountsUnder(dir: string): string[] {
  const unescape = (s: string) => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => unescape(line.split(' ')[4]))
    .filter((mp) => mp === dir || mp.startsWith(`${dir}/`))
    .reverse();
}

export async function unmountUnder(dir: string): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const mounts = mountsUnder(dir);
    if (mounts.length === 0) return;
    for (const mp of mounts) {
      await cmd('umount', [mp]).catch(() => cmd('umount', ['-l', mp]).catch(() => undefined)); // gone with a parent: checked next round
    }
  }
  const left = mountsUnder(dir);
  if (left.length) throw new Error(`still mounted after 5 rounds of umount: ${left.join(', ')}`);
}

/**
 * Everything of one node except its network namespace (removed with the box network): processes
 * left in its cgroup tree (containers, shims), its mount namespace (with the rootfs, volume and
 * pod network namespace mounts inside; anything under its directory on the host too),
 * shim sockets, the cgroup tree, the kubelet's /var/log/containers links into the node's logs.
 */
export async function removeNode(node: NodeRecord): Promise<string[]> {
  const containerd = containerdPaths(node);
  return allSteps([
    [`${node.name}: kill processes in cgroup ${node.cgroup}`, () => killCgroupTree(node.cgroup)],
    [`${node.name}: mount namespace`, () => removeNodeMountNs(node)],
    [`${node.name}: unmount under ${node.dir}`, () => unmountUnder(node.dir)],
    [`${node.name}: shim sockets`, () => shimSocketsOf(containerd).forEach((s) => fs.rmSync(s, { force: true }))],
    [`${node.name}: CNI loopback results`, () => removeLoopbackResults(sandboxIdsOf(containerd))],
    [`${node.name}: remove cgroup ${node.cgroup}`, () => removeCgroupTree(node.cgroup)],
    [`${node.name}: /var/log/containers links`, () => removeLinksInto('/var/log/containers', node.dir)],
  ]);
}

/** containerd's go-cni also runs the `cni-loopback` network per sandbox; libcni caches its result
 * as /var/lib/cni/results/cni-loopback-<sandbox>-lo, left behind when no CNI DEL ran. */
function removeLoopbackResults(sandboxIds: string[]): void {
  for (const id of sandboxIds) fs.rmSync(path.join(CNI_CACHE_DIR, `cni-loopback-${id}-lo`), { force: true });
}

function removeLinksInto(dir: string, target: string): void {
  if (!fs.existsSync(dir)) return;
  for (const f of fs.readdirSync(dir)) {
    const p = path.join(dir, f);
    try {
      if (fs.readlinkSync(p).startsWith(`${target}/`)) fs.rmSync(p);
    } catch {
      /* not a link */
    }
  }
}

/** Resident memory of a process in MiB (for the figures), undefined once it is gone. */
export function rssMiB(pid: number): number | undefined {
  if (!isAlive(pid)) return undefined;
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : undefined;
}
