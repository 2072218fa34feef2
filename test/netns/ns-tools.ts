// What the namespace rigs (test/netns rig.ts and nat-rig.ts, the box's router-view.ts) do in a network namespace the same way: run a command, read a MAC, capture.
// Every command enters only the network namespace (nsenter --net): `ip netns exec` would hide bpffs.
import { execFile, spawn } from 'node:child_process';
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
