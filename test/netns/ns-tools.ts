// What the namespace rigs (test/netns rig.ts and nat-rig.ts, the box's router-view.ts) do in a network namespace the same way: run a command, read a MAC, capture.
// Every command enters only the network namespace (nsenter --net): `ip netns exec` would hide bpffs.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { promisify } from 'node:util';
import { koffi } from '../../runtime/agent/koffi';

const run = promisify(execFile);

const CLONE_NEWNET = 0x40000000;
let setns: ((fd: number, nstype: number) => number) | undefined;

/**
 * Runs `fn` (synchronous) with this thread in the network namespace `ns`, and back: for the
 * agent's own netlink code (a socket is of the namespace it was made in), called from a test
 * process that stays in the root namespace. Nothing else runs on the thread meanwhile.
 */
export function inNetnsSync<T>(ns: string, fn: () => T): T {
  setns ??= koffi.load('libc.so.6').func('int setns(int fd, int nstype)') as (fd: number, nstype: number) => number;
  const home = fs.openSync('/proc/self/ns/net', 'r');
  const there = fs.openSync(`/var/run/netns/${ns}`, 'r');
  try {
    if (setns(there, CLONE_NEWNET) !== 0) throw new Error(`setns into ${ns} failed (errno ${koffi.errno()})`);
    try {
      return fn();
    } finally {
      if (setns(home, CLONE_NEWNET) !== 0) throw new Error(`setns back from ${ns} failed (errno ${koffi.errno()})`);
    }
  } finally {
    fs.closeSync(there);
    fs.closeSync(home);
  }
}

/** Runs `cmd args` in the network namespace `ns` (a name under /var/run/netns); its stdout. */
export async function inNs(ns: string, cmd: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('nsenter', [`--net=/var/run/netns/${ns}`, cmd, ...args], { maxBuffer: 16 << 20 });
  return stdout;
}

/** Deletes the network namespace `ns`, and with it its veths and their XDP and TC programs; one that
 * was never made (a setup that failed before it) is no error. */
export async function deleteNetns(ns: string): Promise<void> {
  if (fs.existsSync(`/var/run/netns/${ns}`)) await run('ip', ['netns', 'del', ns]);
}

/**
 * A veth pair between namespaces: `devA` in `nsA`, `devB` in `nsB`, both up. Made in the root
 * namespace under temporary names `<prefix><4 hex>` (unique, at most 15 characters), then moved
 * and renamed. `offloads: false` turns checksum offloads and GSO/GRO/TSO off on both ends, so
 * every checksum is computed in software and verified by the receiver, and a packet counted is a
 * packet on the wire.
 */
export async function vethBetween(
  link: { readonly prefix: string; readonly offloads: boolean },
  nsA: string,
  devA: string,
  nsB: string,
  devB: string,
): Promise<void> {
  const a = `${link.prefix}${randomBytes(2).toString('hex')}`;
  const b = `${link.prefix}${randomBytes(2).toString('hex')}`;
  await run('ip', ['link', 'add', a, 'type', 'veth', 'peer', 'name', b]);
  await run('ip', ['link', 'set', a, 'netns', nsA]);
  await run('ip', ['link', 'set', b, 'netns', nsB]);
  await inNs(nsA, 'ip', 'link', 'set', a, 'name', devA);
  await inNs(nsB, 'ip', 'link', 'set', b, 'name', devB);
  for (const [ns, dev] of [
    [nsA, devA],
    [nsB, devB],
  ]) {
    if (!link.offloads)
      await inNs(ns, 'ethtool', '-K', dev, 'rx', 'off', 'tx', 'off', 'gso', 'off', 'gro', 'off', 'tso', 'off');
    await inNs(ns, 'ip', 'link', 'set', dev, 'up');
  }
}

/**
 * Starts the Python tool `script` with `args` in the network namespace `ns` (kept in `children`
 * until it exits, for the rig to kill); resolves once its stdout holds `ready`; `result` resolves
 * with its last stdout line as JSON when it exits 0, and rejects with its stderr otherwise.
 */
export async function startTool<T>(
  children: Set<ChildProcess>,
  ns: string,
  script: string,
  ready: string,
  args: readonly string[],
): Promise<{ result: Promise<T> }> {
  const child = spawn('nsenter', [`--net=/var/run/netns/${ns}`, 'python3', script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const result = new Promise<T>((resolve, reject) => {
    child.once('exit', (code) => {
      children.delete(child);
      if (code === 0) resolve(JSON.parse(stdout.trim().split('\n').pop()!) as T);
      else reject(new Error(`${path.basename(script)} ${args.join(' ')} in ${ns} exited ${code}: ${stderr}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes(ready)) resolve();
    });
    result.then(() => resolve(), reject);
  });
  return { result };
}

/** The MAC of `ifname` in the network namespace `ns`. */
export async function macIn(ns: string, ifname: string): Promise<string> {
  const [link] = JSON.parse(await inNs(ns, 'ip', '-j', 'link', 'show', 'dev', ifname)) as Array<{ address: string }>;
  return link.address;
}

/** A running capture: stop() ends it (SIGINT, so the file is complete); stderr is what tcpdump said. */
export interface Tcpdump {
  stop(): Promise<void>;
  stderr(): string;
}

/**
 * tcpdump writing every frame `ifname` in `ns` sees to `file` (immediate mode, written as it
 * comes), with a kernel buffer of `bufferKiB` when given and only what `filter` matches;
 * resolves once it listens.
 */
export async function startTcpdump(
  ns: string,
  ifname: string,
  file: string,
  o: { readonly filter?: readonly string[]; readonly bufferKiB?: number } = {},
): Promise<Tcpdump> {
  const buffer = o.bufferKiB ? ['-B', String(o.bufferKiB)] : [];
  const args = ['tcpdump', '-Z', 'root', '--immediate-mode', ...buffer, '-U', '-n', '-i', ifname, '-w', file];
  const tcpdump = spawn('nsenter', [`--net=/var/run/netns/${ns}`, ...args, ...(o.filter ?? [])], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tcpdump in ${ns} did not start: ${stderr}`)), 10_000);
    tcpdump.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      if (stderr.includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    tcpdump.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`tcpdump in ${ns} exited ${code}: ${stderr}`));
    });
  });
  return {
    stderr: () => stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (tcpdump.exitCode !== null) return resolve();
        tcpdump.once('exit', () => resolve());
        tcpdump.kill('SIGINT');
      }),
  };
}
