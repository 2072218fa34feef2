// Loads, adopts, attaches and detaches the XDP ARP responder (ARCHITECTURE.md "Answer").
//
// Lifecycle, one step a function: open the object -> point every map at its pin (libbpf reuses a
// pinned map of the same shape, pins.ts decides about one of another) -> load -> configure the
// interface -> attach: atomically replace a responder already on the interface
// (XDP_FLAGS_REPLACE, no gap), or attach fresh (native, else generic) -> pin the program -> close
// the object. Program and maps outlive the process: a netlink XDP attachment stays after exit and
// the maps are pinned, so answering continues while the agent restarts, and the next start adopts
// them (OPS-1: one node keeps answering for its addresses throughout).
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as libbpf from './libbpf';
import { XDP_ATTACHED, XDP_FLAGS, LibbpfError } from './libbpf';
import { ArpMaps } from './arp-maps';
import { BpfObject, findBuiltObject } from './object';
import { PROGRAM_NAME, orphanExpiries } from './layout';
import { monotonicNowNs } from './clock';
import { PIN_SUBDIR, loadPinned, pinProgram, unlinkIfPresent } from './pins';

export const DEFAULT_PIN_DIR = path.join('/sys/fs/bpf', PIN_SUBDIR);

export type XdpMode = 'native' | 'generic';
export type XdpModeRequest = XdpMode | 'auto';

export interface AttachOptions {
  /** Interface to answer on (EN-12), in the caller's network namespace. */
  readonly ifindex: number;
  /** Its MAC: the sender hardware address of every reply. */
  readonly mac: string;
  /** bpffs directory holding the maps and the program. @default DEFAULT_PIN_DIR, /sys/fs/bpf/juneau/v1 */
  readonly pinDir?: string;
  /** The built object. @default build/bpf/xdp_arp.bpf.o of this package */
  readonly objectPath?: string;
  /** `auto` tries native and falls back to generic when the driver has no native XDP. When a
   * responder is already attached, `auto` keeps its mode. @default 'auto' */
  readonly mode?: XdpModeRequest;
  /** @default true */
  readonly guard?: boolean;
  /** @default true */
  readonly conflictDetection?: boolean;
  /** Replace an XDP program that is not a Juneau responder. @default false */
  readonly replaceForeign?: boolean;
  /** FO-2: the program stops answering on the interface this long after the agent's last
   * heartbeat (ArpMaps.refreshHeartbeat), but for its held addresses (SEC-11). A heartbeat already
   * pinned is kept, so a restarted agent does not extend the answers of one that could not prove
   * its view; a fresh entry starts expired (SEC-15): nothing is answered before the agent's first
   * proof. @default 0: never expires */
  readonly answerExpiryMs?: number;
  /** SEC-16: the interface is orphaned, nothing answered and nothing guarded, once the heartbeat is
   * this much older than its last proof; rounded up to whole expiries (at most 65535). Needs an
   * expiry. @default 0: never */
  readonly orphanAfterMs?: number;
}

/** SEC-15: the heartbeat of a fresh config entry: one expiry (and a nanosecond) before `nowNs`, so
 * the entry is expired, not orphaned, until the agent's first proof moves it. */
export function expiredHeartbeatNs(nowNs: bigint, expiryNs: bigint): bigint {
  const at = nowNs - expiryNs - 1n;
  return at > 0n ? at : 0n;
}

export interface AttachResult {
  readonly maps: ArpMaps;
  readonly mode: XdpMode;
  readonly programId: number;
  /** The responder program this one replaced without a gap, if any. */
  readonly replacedProgramId: number | undefined;
  /** Maps that were already pinned and were reused with their contents. */
  readonly adoptedMaps: string[];
}

/** Loads the responder onto `ifindex`, adopting whatever is pinned in `pinDir` (pins.ts). */
export function attachArpResponder(options: AttachOptions): AttachResult {
  const pinDir = options.pinDir ?? DEFAULT_PIN_DIR;
  const obj = BpfObject.open(options.objectPath ?? findBuiltObject('xdp_arp.bpf.o'));
  try {
    return loadPinned(obj, pinDir, (adoptedMaps) => {
      const progFd = obj.programFd(PROGRAM_NAME);
      const maps = ArpMaps.openPinned(pinDir);
      try {
        // The filter matching the table before the program attaches: a new filter map starts
        // empty, and an empty filter answers nothing.
        maps.rebuildFilter();
        // Configure before attaching, so the program guards from its first packet.
        const expiryNs = BigInt(Math.round(options.answerExpiryMs ?? 0)) * 1_000_000n;
        maps.setInterfaceConfig(options.ifindex, {
          mac: options.mac,
          guard: options.guard ?? true,
          conflictDetection: options.conflictDetection ?? true,
          heartbeatNs:
            maps.interfaceConfig(options.ifindex)?.heartbeatNs ?? expiredHeartbeatNs(monotonicNowNs(), expiryNs),
          expiryNs,
          orphanExpiries: orphanExpiries(options.orphanAfterMs ?? 0, options.answerExpiryMs ?? 0),
        });
        const { mode, replacedProgramId } = attachOrReplace(options, progFd);
        pinProgram(progFd, programPinPath(pinDir, options.ifindex));
        return { maps, mode, programId: libbpf.progInfo(progFd).id, replacedProgramId, adoptedMaps };
      } catch (err) {
        maps.close();
        throw err;
      }
    });
  } finally {
    obj.close();
  }
}

/** Removes the responder from `ifindex` (only if it is ours) and unpins its program. Maps stay
 * pinned; pins.ts removePins() deletes them. Returns false when no responder was attached. */
export function detachArpResponder(ifindex: number, pinDir: string = DEFAULT_PIN_DIR): boolean {
  const attached = attachedProgram(ifindex, pinDir);
  if (!attached || attached.name !== PROGRAM_NAME) {
    unlinkIfPresent(programPinPath(pinDir, ifindex));
    return false;
  }
  const fd = openAttached(attached, pinDir, ifindex);
  try {
    libbpf.xdpDetach(ifindex, modeFlag(attached.mode) | XDP_FLAGS.REPLACE, fd);
  } finally {
    libbpf.closeFd(fd);
  }
  unlinkIfPresent(programPinPath(pinDir, ifindex));
  return true;
}

export interface AttachedProgram {
  readonly id: number;
  /** The program's name; undefined when it is not the responder pinned in the pin directory and
   * the agent lacks CAP_SYS_ADMIN, which the kernel requires to open a program by id. */
  readonly name: string | undefined;
  readonly mode: XdpMode;
}

/**
 * The XDP program on `ifindex` and its mode, or undefined. The agent runs with CAP_BPF and
 * CAP_NET_ADMIN but not CAP_SYS_ADMIN, and BPF_PROG_GET_FD_BY_ID needs CAP_SYS_ADMIN: so the
 * program is recognised through its pin in `pinDir` (opening a pin needs only access to the file),
 * and only a program that is not our pin is opened by id — which fails without CAP_SYS_ADMIN and
 * then leaves the name unknown.
 */
export function attachedProgram(ifindex: number, pinDir: string = DEFAULT_PIN_DIR): AttachedProgram | undefined {
  const q = libbpf.xdpQuery(ifindex);
  if (q.attachMode === XDP_ATTACHED.NONE) return undefined;
  if (q.attachMode !== XDP_ATTACHED.DRV && q.attachMode !== XDP_ATTACHED.SKB) {
    throw new Error(
      `ifindex ${ifindex}: XDP attach mode ${q.attachMode} (offload or several programs) is not supported`,
    );
  }
  const mode: XdpMode = q.attachMode === XDP_ATTACHED.DRV ? 'native' : 'generic';
  let fd: number;
  try {
    fd = openAttached({ id: q.progId }, pinDir, ifindex);
  } catch (err) {
    if (err instanceof LibbpfError && err.code === 'EPERM') return { id: q.progId, name: undefined, mode };
    throw err;
  }
  try {
    return { id: q.progId, name: libbpf.progInfo(fd).name, mode };
  } finally {
    libbpf.closeFd(fd);
  }
}

/** An fd of the attached program: its pin when the pin is that program, else by id (CAP_SYS_ADMIN). */
function openAttached(attached: { readonly id: number }, pinDir: string, ifindex: number): number {
  const pin = programPinPath(pinDir, ifindex);
  if (fs.existsSync(pin)) {
    const fd = libbpf.objGet(pin);
    if (libbpf.progInfo(fd).id === attached.id) return fd;
    libbpf.closeFd(fd);
  }
  return libbpf.progGetFdById(attached.id);
}

export function programPinPath(pinDir: string, ifindex: number): string {
  return path.join(pinDir, `${PROGRAM_NAME}_if${ifindex}`);
}

function attachOrReplace(options: AttachOptions, progFd: number): { mode: XdpMode; replacedProgramId?: number } {
  const requested = options.mode ?? 'auto';
  const pinDir = options.pinDir ?? DEFAULT_PIN_DIR;
  const current = attachedProgram(options.ifindex, pinDir);
  if (!current) return { mode: attachFresh(options.ifindex, progFd, requested) };
  if (current.name === undefined) {
    throw new Error(
      `ifindex ${options.ifindex} already runs XDP program id ${current.id}, which is not the responder pinned in ${pinDir}; ` +
        'its name cannot be read without CAP_SYS_ADMIN, so it is not replaced: detach it (ip link set dev IFACE xdp off) and restart the agent',
    );
  }
  if (current.name !== PROGRAM_NAME && !options.replaceForeign) {
    throw new Error(
      `ifindex ${options.ifindex} already runs XDP program '${current.name}' (id ${current.id}); refusing to replace it`,
    );
  }
  if (requested !== 'auto' && requested !== current.mode) {
    throw new Error(
      `ifindex ${options.ifindex} runs the responder in ${current.mode} mode, ${requested} was asked: ` +
        'switching modes cannot be done without a gap; detach first',
    );
  }
  const oldFd = openAttached(current, pinDir, options.ifindex);
  try {
    libbpf.xdpAttach(options.ifindex, progFd, modeFlag(current.mode) | XDP_FLAGS.REPLACE, oldFd);
  } finally {
    libbpf.closeFd(oldFd);
  }
  return { mode: current.mode, replacedProgramId: current.id };
}

function attachFresh(ifindex: number, progFd: number, requested: XdpModeRequest): XdpMode {
  if (requested !== 'auto') {
    libbpf.xdpAttach(ifindex, progFd, modeFlag(requested) | XDP_FLAGS.UPDATE_IF_NOEXIST);
    return requested;
  }
  try {
    libbpf.xdpAttach(ifindex, progFd, XDP_FLAGS.DRV_MODE | XDP_FLAGS.UPDATE_IF_NOEXIST);
    return 'native';
  } catch (err) {
    // The driver has no native XDP: the kernel answers EOPNOTSUPP.
    if (!(err instanceof LibbpfError) || err.code !== 'EOPNOTSUPP') throw err;
  }
  libbpf.xdpAttach(ifindex, progFd, XDP_FLAGS.SKB_MODE | XDP_FLAGS.UPDATE_IF_NOEXIST);
  return 'generic';
}

function modeFlag(mode: XdpMode): number {
  return mode === 'native' ? XDP_FLAGS.DRV_MODE : XDP_FLAGS.SKB_MODE;
}
