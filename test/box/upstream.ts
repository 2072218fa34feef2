// What the box's Juneau tests share: the upstream router namespace on the nodes' segment, and
// finding a container's process from the host (to read its capabilities or SIGKILL it).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT } from '../cluster/paths';
import { cmd, inNetns } from './exec';
import { BoxState } from './state';

const XDP_PASS = path.join(REPO_ROOT, 'build', 'bpf', 'xdp_pass.bpf.o');

/**
 * A router namespace `jr-<id>` plugged into the box's bridge with `ip/24` on its eth0; returns its
 * name (delete it with `ip netns del`, which takes the veth along). The bridge ports get a
 * pass-everything XDP program: a native XDP_TX on a veth (the agent's answer on a node's eth0) is
 * dropped unless the peer has an XDP program — a veth quirk (FACTS.md), not something a NIC does.
 */
export async function addRouter(box: BoxState, ip: string): Promise<string> {
  const router = `jr-${box.id}`;
  await cmd('ip', ['netns', 'add', router]);
  await cmd('ip', ['link', 'add', `jr${box.id}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', router]);
  await cmd('ip', ['link', 'set', `jr${box.id}`, 'master', box.bridge, 'up']);
  await inNetns(router, 'ip', ['link', 'set', 'lo', 'up']);
  await inNetns(router, 'ip', ['addr', 'add', `${ip}/24`, 'dev', 'eth0']);
  await inNetns(router, 'ip', ['link', 'set', 'eth0', 'up']);
  for (const n of box.nodes)
    await cmd('ip', ['link', 'set', 'dev', n.hostVeth, 'xdpdrv', 'obj', XDP_PASS, 'sec', 'xdp']);
  return router;
}

/** Pids (as listed in /proc) whose command line contains `command` and that `also` accepts. */
export function pidsOf(command: string, also: (pid: string) => boolean): string[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(command) && also(pid);
      } catch {
        return false; // exited while listed
      }
    });
}

/** `pidsOf` in one node's network namespace (hostNetwork pods: the agent). */
export function pidsInNetns(netns: string, command: string): string[] {
  const inode = fs.statSync(`/var/run/netns/${netns}`).ino;
  return pidsOf(command, (pid) => fs.statSync(`/proc/${pid}/ns/net`).ino === inode);
}

/** The juneau-agent processes of one node, without their NAT child (`--nat-child`, SEC-4: same
 * command, forked by the agent): the agent itself. */
export function agentPidsInNetns(netns: string): string[] {
  return pidsInNetns(netns, 'juneau-agent').filter((pid) => {
    try {
      return !fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('--nat-child');
    } catch {
      return false; // exited while listed
    }
  });
}
