// What a cluster in a box may leave on the host, looked up from the outside (not from box.json's
// own cleanup code): namespaces, links, routes, mounts, cgroups, processes, shim sockets, data,
// host nftables tables and the kernel settings the kubelet changes.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BoxState, HOST_DIR } from './state';

const sh = (bin: string, args: string[]) => execFileSync(bin, args, { encoding: 'utf8' });
const CNI_CACHE = '/var/lib/cni/results';
const SYSCTLS = ['vm.overcommit_memory', 'vm.panic_on_oom', 'kernel.panic', 'kernel.panic_on_oops'];

export interface HostSnapshot {
  nftTables: string;
  shimSockets: string[];
  cniCache: string[];
  sysctls: Record<string, string>;
}

export function snapshotHost(): HostSnapshot {
  return {
    nftTables: sh('nft', ['list', 'tables']),
    shimSockets: fs.existsSync('/run/containerd/s') ? fs.readdirSync('/run/containerd/s').sort() : [],
    cniCache: fs.existsSync(CNI_CACHE) ? fs.readdirSync(CNI_CACHE).sort() : [],
    sysctls: Object.fromEntries(
      SYSCTLS.map((k) => [k, fs.readFileSync(`/proc/sys/${k.replace(/\./g, '/')}`, 'utf8').trim()]),
    ),
  };
}

/** Everything of `box` still on the host, as readable lines (empty: nothing left); `alsoPaths`:
 * more directories (the control plane's) no process may still name on its command line. */
export function leftovers(box: BoxState, before: HostSnapshot, alsoPaths: string[] = []): string[] {
  const left: string[] = [];
  const netns = sh('ip', ['netns', 'list'])
    .split('\n')
    .filter((l) => l.includes(box.id));
  left.push(...netns.map((n) => `netns ${n}`));
  const links = (JSON.parse(sh('ip', ['-j', 'link', 'show'])) as Array<{ ifname: string }>).filter((l) =>
    l.ifname.includes(box.id),
  );
  left.push(...links.map((l) => `link ${l.ifname}`));
  const routes = (JSON.parse(sh('ip', ['-j', 'route', 'show'])) as Array<{ dst: string; dev?: string }>).filter(
    (r) =>
      r.dev === box.bridge ||
      box.nodes.some((n) => r.dst === n.podCidr) ||
      r.dst.startsWith(`${box.segment ?? `10.226.${box.subnet}`}.`),
  );
  left.push(...routes.map((r) => `route ${r.dst} dev ${r.dev}`));
  const mounts = fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.includes(box.dataDir) || l.includes(box.id));
  left.push(...mounts.map((m) => `mount ${m.split(' ')[4]}`));
  // cgroup v2: the node cgroups sit at the top of the one hierarchy; v1: one level down in each.
  left.push(
    ...fs
      .readdirSync('/sys/fs/cgroup')
      .filter((c) => c.includes(box.id))
      .map((c) => `cgroup ${c}`),
  );
  for (const h of fs.readdirSync('/sys/fs/cgroup')) {
    const dir = path.join('/sys/fs/cgroup', h);
    if (!fs.existsSync(path.join(dir, 'cgroup.procs'))) continue;
    left.push(
      ...fs
        .readdirSync(dir)
        .filter((c) => c.includes(box.id))
        .map((c) => `cgroup ${h}/${c}`),
    );
  }
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    const cmdline = cmdlineOf(Number(pid));
    if (cmdline && [box.dataDir, box.id, ...alsoPaths].some((p) => cmdline.includes(p)))
      left.push(`process ${pid}: ${cmdline.slice(0, 160)}`);
  }
  if (fs.existsSync(box.dataDir)) left.push(`directory ${box.dataDir}`);
  const mntns = path.join(HOST_DIR, 'mnt');
  if (fs.existsSync(mntns))
    left.push(
      ...fs
        .readdirSync(mntns)
        .filter((f) => f.includes(box.id))
        .map((f) => `mount namespace file ${mntns}/${f}`),
    );
  if (fs.existsSync(path.join(HOST_DIR, `subnet-${box.subnet}`)))
    left.push(`subnet claim ${HOST_DIR}/subnet-${box.subnet}`);
  const after = snapshotHost();
  if (after.nftTables !== before.nftTables)
    left.push(`host nftables tables changed:\n${before.nftTables}---\n${after.nftTables}`);
  // A socket name is a hash, so it names no box: one a live process of another box listens on
  // (another suite's box up at the same time) is not this box's; a stale one or this box's is.
  const listeners = shimSocketListeners();
  const ours = (pid: number | undefined) =>
    pid === undefined || [box.dataDir, box.id].some((p) => cmdlineOf(pid).includes(p));
  left.push(
    ...after.shimSockets
      .filter((s) => !before.shimSockets.includes(s) && ours(listeners.get(`/run/containerd/s/${s}`)))
      .map((s) => `shim socket /run/containerd/s/${s}`),
  );
  left.push(
    ...after.cniCache.filter((f) => !before.cniCache.includes(f)).map((f) => `CNI result cache ${CNI_CACHE}/${f}`),
  );
  for (const [k, v] of Object.entries(before.sysctls))
    if (after.sysctls[k] !== v) left.push(`sysctl ${k} = ${after.sysctls[k]} (was ${v})`);
  return left;
}

/** The process listening on each unix socket under /run/containerd/s (`ss -xlpn`). */
function shimSocketListeners(): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of sh('ss', ['-xlpn']).split('\n')) {
    const m = /(\/run\/containerd\/s\/\S+).*?pid=(\d+)/.exec(line);
    if (m) found.set(m[1], Number(m[2]));
  }
  return found;
}

/** A process's command line, '' once it exited. */
function cmdlineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return ''; // exited
  }
}
