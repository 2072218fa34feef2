/**
 * SEC-16: cleaning a node whose agent missed the uninstall (down, crashlooping, its Pod
 * force-deleted while the DaemonSet went), from what is pinned alone: no agent, no API server, no
 * flags. Every version directory under <bpffs>/juneau holds the program pins `<program>_if<ifindex>`
 * of each interface Juneau attached to; each one's XDP responder or NAT filter is detached (only a
 * program that is ours: the same checks as the agent's own uninstall), the agent's VXLAN device
 * deleted, and every pin removed, which frees the maps. `kubectl juneau cleanup-node` runs it on
 * the node (runtime/cli/). Without it, such a node fails open by itself once orphaned (xdp_arp:
 * `--orphan-after`), but keeps the NAT filters.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { detachArpResponder, PIN_ROOT, removePins } from '../bpf';
import { detachNat } from '../bpf/nat';
import { NAT_PROGRAMS, PROGRAM_NAME } from '../bpf/layout';
import { deleteVxlanDevice, VXLAN_DEVICE } from '../nat/vxlan';

export interface NodeCleanup {
  /** The pin directory cleaned (<bpffs>/juneau), or undefined when there was none. */
  readonly pinRoot: string | undefined;
  /** Interfaces the XDP responder was detached from. */
  readonly responderDetached: number[];
  /** Interfaces and the NAT filter roles removed from them. */
  readonly natDetached: Array<{ readonly ifindex: number; readonly roles: string[] }>;
  /** Program pins whose interface is gone or whose program is not ours: only unpinned, and why. */
  readonly unpinned: Array<{ readonly pin: string; readonly why: string }>;
  readonly vxlanDeleted: boolean;
}

const PROGRAM_PIN = /^(.+)_if(\d+)$/;
const NAT_PROGRAM_NAMES: ReadonlySet<string> = new Set(Object.values(NAT_PROGRAMS));

/** Detaches every program Juneau pinned under `bpffs` and removes the pins (see above). */
export function cleanupNode(bpffs: string): NodeCleanup {
  const pinRoot = path.join(bpffs, PIN_ROOT);
  const result = {
    pinRoot: fs.existsSync(pinRoot) ? pinRoot : undefined,
    responderDetached: [] as number[],
    natDetached: [] as Array<{ ifindex: number; roles: string[] }>,
    unpinned: [] as Array<{ pin: string; why: string }>,
    vxlanDeleted: false,
  };
  if (!result.pinRoot) return { ...result, vxlanDeleted: deleteVxlanDevice(VXLAN_DEVICE) };
  const versions = fs.readdirSync(pinRoot, { withFileTypes: true }).filter((e) => e.isDirectory());
  for (const version of versions) {
    const dir = path.join(pinRoot, version.name);
    for (const name of fs.readdirSync(dir)) {
      const match = PROGRAM_PIN.exec(name);
      if (!match) continue;
      const [, program, index] = match;
      const ifindex = Number(index);
      try {
        if (program === PROGRAM_NAME) {
          if (detachArpResponder(ifindex, dir)) result.responderDetached.push(ifindex);
          else result.unpinned.push({ pin: path.join(dir, name), why: 'not the XDP program on its interface' });
        } else if (NAT_PROGRAM_NAMES.has(program)) {
          const roles = detachNat(ifindex, dir);
          if (roles.length > 0) result.natDetached.push({ ifindex, roles });
        }
      } catch (err) {
        // The interface is gone (its attachment went with it): the pin is all that is left.
        result.unpinned.push({ pin: path.join(dir, name), why: err instanceof Error ? err.message : String(err) });
      }
    }
  }
  result.vxlanDeleted = deleteVxlanDevice(VXLAN_DEVICE);
  removePins(pinRoot);
  return result;
}
