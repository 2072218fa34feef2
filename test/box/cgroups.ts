// One cgroup per node, the same relative path in every hierarchy of this cgroup v1 (cgroupfs,
// no systemd) machine — or in the one unified hierarchy of a cgroup v2 host (written for CI
// runners, not tried here). It is the kubelet's cgroupRoot (kubepods below it) and holds the
// node's daemons in `daemons/`, so containerd's shims — which leave containerd's process group —
// and every container stay findable: `down` kills whatever is left in the tree, then removes it.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sleep } from '../sleep';
import { isAlive } from '../cluster/processes';

const CGROUP_FS = '/sys/fs/cgroup';

const UNIFIED = fs.existsSync(path.join(CGROUP_FS, 'cgroup.controllers'));

/** Mounted hierarchies (v1: cpu, memory, pids, name=systemd, the hybrid unified one, ...). */
function hierarchies(): string[] {
  if (UNIFIED) return [CGROUP_FS];
  return fs
    .readdirSync(CGROUP_FS)
    .map((h) => path.join(CGROUP_FS, h))
    .filter((dir) => fs.existsSync(path.join(dir, 'cgroup.procs')));
}

/** Creates `<cgroup>/daemons` in every hierarchy; v1 cpuset needs cpus/mems before it takes
 * tasks, v2 needs the controllers delegated to the node's children (it holds no process itself). */
export function createNodeCgroup(cgroup: string): void {
  if (UNIFIED) {
    // The kubelet wants cpuset, cpu, memory and pids in its cgroupRoot; systemd may leave cpuset
    // undelegated at the root (the root may have processes and still delegate, so this is safe).
    delegateAll(CGROUP_FS);
    const dir = path.join(CGROUP_FS, cgroup);
    fs.mkdirSync(path.join(dir, 'daemons'), { recursive: true });
    delegateAll(dir);
    return;
  }
  for (const h of hierarchies()) {
    let parent = h;
    for (const dir of [path.join(h, cgroup), path.join(h, cgroup, 'daemons')]) {
      fs.mkdirSync(dir, { recursive: true });
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        if (fs.existsSync(path.join(dir, f)))
          fs.writeFileSync(path.join(dir, f), fs.readFileSync(path.join(parent, f), 'utf8').trim());
      }
      parent = dir;
    }
  }
}

/** v2: enables every controller a cgroup has for its children. */
function delegateAll(dir: string): void {
  const controllers = fs.readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/).filter(Boolean);
  if (controllers.length)
    fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), controllers.map((c) => `+${c}`).join(' '));
}

/** A shell prefix that moves itself into the node's `daemons` cgroup, then execs the rest. */
export function joinCgroupCommand(cgroup: string, argv: string[]): [string, string[]] {
  const procs = hierarchies().map((h) => path.join(h, cgroup, 'daemons', 'cgroup.procs'));
  const script = 'for f in $JOIN; do echo $$ > "$f" || exit 1; done; exec "$@"';
  return ['sh', ['-c', script.replace('$JOIN', procs.map((p) => `'${p}'`).join(' ')), 'join-cgroup', ...argv]];
}

/** Every directory of the tree in one hierarchy, deepest first. */
function treeDeepestFirst(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(dir, e.name));
    out.push(dir);
  };
  walk(root);
  return out;
}

function pidsIn(cgroup: string): number[] {
  const pids = new Set<number>();
  for (const h of hierarchies()) {
    for (const dir of treeDeepestFirst(path.join(h, cgroup))) {
      for (const p of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (p) pids.add(Number(p));
    }
  }
  return [...pids];
}

/** SIGKILLs every process in the node's tree (thawing frozen cgroups first) until none is left. */
export async function killCgroupTree(cgroup: string, timeoutMs = 10_000): Promise<void> {
  for (const dir of treeDeepestFirst(path.join(CGROUP_FS, 'freezer', cgroup))) {
    if (fs.readFileSync(path.join(dir, 'freezer.state'), 'utf8').trim() !== 'THAWED')
      fs.writeFileSync(path.join(dir, 'freezer.state'), 'THAWED');
  }
  const until = Date.now() + timeoutMs;
  for (;;) {
    const pids = pidsIn(cgroup).filter(isAlive);
    if (pids.length === 0) return;
    if (Date.now() > until)
      throw new Error(`processes ${pids.join(', ')} in cgroup ${cgroup} survived SIGKILL for ${timeoutMs} ms`);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* exited meanwhile */
      }
    }
    await sleep(50);
  }
}

/** Removes the (empty) tree from every hierarchy; a cgroup still busy is an error naming it. */
export async function removeCgroupTree(cgroup: string): Promise<void> {
  for (const h of hierarchies()) {
    for (const dir of treeDeepestFirst(path.join(h, cgroup))) {
      // A cgroup whose last task just died may report EBUSY for a moment.
      for (let attempt = 0; ; attempt++) {
        try {
          fs.rmdirSync(dir);
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') break;
          if ((e as NodeJS.ErrnoException).code !== 'EBUSY' || attempt >= 40)
            throw new Error(`cannot remove cgroup ${dir}: ${(e as Error).message}`);
          await sleep(50);
        }
      }
    }
  }
}
