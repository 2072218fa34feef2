// Loads, adopts, attaches and detaches the XDP ARP responder (ARCHITECTURE.md "Answer").
//
// Lifecycle, one step a function: ensure bpffs -> open the object -> point every map at its pin
// (libbpf reuses a compatible pinned map, or creates and pins a new one) -> load -> configure the
// interface -> attach: atomically replace a responder already on the interface
// (XDP_FLAGS_REPLACE, no gap), or attach fresh (native, else generic) -> pin the program -> close
// the object. Program and maps outlive the process: a netlink XDP attachment stays after exit and
// the maps are pinned, so answering continues while the agent restarts, and the next start adopts
// them (OPS-1: one node keeps answering for its addresses throughout).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import * as libbpf from './libbpf';
import { XDP_ATTACHED, XDP_FLAGS, LibbpfError } from './libbpf';
import { ArpMaps } from './arp-maps';
import { BpfObject } from './object';
import { BpfMap } from './map';
import {
  ARP_KEY,
  ARP_TABLE_TYPE,
  ARP_VALUE,
  CONFIG_TYPE,
  CONFIG_VALUE,
  MAP_NAMES,
  MAP_TYPES,
  PROGRAM_NAME,
  REASONS,
  decodeArpKey,
  decodeArpValue,
  decodeConfigValue,
} from './layout';
import type { ArpEntry, InterfaceConfig } from './layout';
import { monotonicNowNs } from './clock';

export const DEFAULT_PIN_DIR = '/sys/fs/bpf/juneau';
const BPF_FS_MAGIC = 0xcafe4a11;

export type XdpMode = 'native' | 'generic';
export type XdpModeRequest = XdpMode | 'auto';

export interface AttachOptions {
  /** Interface to answer on (EN-12), in the caller's network namespace. */
  readonly ifindex: number;
  /** Its MAC: the sender hardware address of every reply. */
  readonly mac: string;
  /** bpffs directory holding the maps and the program. @default '/sys/fs/bpf/juneau' */
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
   * heartbeat (ArpMaps.refreshHeartbeat). A heartbeat already pinned is kept, so a restarted
   * agent does not extend the answers of one that could not prove its view; a fresh entry starts
   * with one expiry of grace for the first sync. @default 0: never expires */
  readonly answerExpiryMs?: number;
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

/** Loads the responder onto `ifindex`, adopting whatever is pinned in `pinDir`. */
export function attachArpResponder(options: AttachOptions): AttachResult {
  const pinDir = options.pinDir ?? DEFAULT_PIN_DIR;
  ensureBpffs(pinDir);
  unpinOutgrownStats(pinDir);
  unpinOutgrownConfig(pinDir);
  const olderTable = setAsideOlderTable(pinDir);
  let olderConfig: SetAside<number, InterfaceConfig> | undefined;
  try {
    olderConfig = setAsideOlderConfig(pinDir);
    const result = attachWith(options, pinDir, { table: olderTable.entries, config: olderConfig.entries });
    olderTable.drop();
    olderConfig.drop();
    return result;
  } catch (err) {
    olderTable.restore();
    olderConfig?.restore();
    throw err;
  }
}

/** What an older agent's pins held, moved into this version's maps before the program attaches. */
interface Carried {
  readonly table: ReadonlyMap<string, ArpEntry>;
  readonly config: ReadonlyMap<number, InterfaceConfig>;
}

function attachWith(options: AttachOptions, pinDir: string, carried: Carried): AttachResult {
  const adoptedMaps = Object.values(MAP_NAMES).filter((name) => fs.existsSync(path.join(pinDir, name)));
  const obj = BpfObject.open(options.objectPath ?? findBuiltObject('xdp_arp.bpf.o'));
  try {
    obj.setPinDir(pinDir);
    loadExplaining(obj, pinDir, adoptedMaps);
    const progFd = obj.programFd(PROGRAM_NAME);
    const maps = ArpMaps.openPinned(pinDir);
    try {
      // Before the program attaches: the older table's addresses (with their counters) in the
      // new one, and the filter matching the table (a new filter map starts empty, and an empty
      // filter answers nothing). Rebuilt first too: addAddress trusts a clear bit to mean absent.
      maps.rebuildFilter();
      for (const [address, entry] of carried.table) maps.addAddress(address, entry);
      maps.rebuildFilter();
      for (const [ifindex, config] of carried.config) maps.setInterfaceConfig(ifindex, config);
      // Configure before attaching, so the program answers from its first packet.
      maps.setInterfaceConfig(options.ifindex, {
        mac: options.mac,
        guard: options.guard ?? true,
        conflictDetection: options.conflictDetection ?? true,
        heartbeatNs: maps.interfaceConfig(options.ifindex)?.heartbeatNs ?? monotonicNowNs(),
        expiryNs: BigInt(Math.round(options.answerExpiryMs ?? 0)) * 1_000_000n,
      });
      // What external_arp_table holds goes into the slots too, where this program looks first; it
      // leaves the table only once this program answers from the slots (a program before the
      // slots reads only the table).
      const moved = maps.moveTableIntoSlots();
      let attached: ReturnType<typeof attachOrReplace>;
      try {
        attached = attachOrReplace(options, progFd);
      } catch (err) {
        maps.dropMoved(moved, true);
        throw err;
      }
      maps.dropMoved(moved);
      const { mode, replacedProgramId } = attached;
      pinProgram(progFd, programPinPath(pinDir, options.ifindex));
      return { maps, mode, programId: libbpf.progInfo(progFd).id, replacedProgramId, adoptedMaps };
    } catch (err) {
      maps.close();
      throw err;
    }
  } finally {
    obj.close();
  }
}

/** load(), with the likely cause spelled out when pinned maps were being reused: libbpf refuses a
 * pinned map whose type, key/value size, entries or flags differ from the object's. */
function loadExplaining(obj: BpfObject, pinDir: string, adoptedMaps: string[]): void {
  try {
    obj.load();
  } catch (err) {
    if (err instanceof LibbpfError && err.code === 'EPERM') {
      // libbpf raises RLIMIT_MEMLOCK by itself only on kernels that charge BPF memory to it (before
      // 5.11; later ones charge the memory cgroup), and that needs CAP_SYS_RESOURCE, which the
      // install manifest does not grant (README "Security and limits").
      err.message +=
        ' (the kernel refused to create a map or load the program: the agent needs CAP_BPF and CAP_NET_ADMIN, ' +
        'and on kernels before 5.11, which charge BPF memory to RLIMIT_MEMLOCK, a memlock limit large enough for its maps: ' +
        'Juneau supports Linux 5.11 and later)';
    }
    if (err instanceof LibbpfError && adoptedMaps.length > 0) {
      err.message +=
        ` (reusing pinned maps ${adoptedMaps.join(', ')} in ${pinDir}: if bpf/juneau_maps.h changed, ` +
        'those pins are incompatible and must be removed, which drops their contents)';
    }
    throw err;
  }
}

/**
 * juneau_stats has one slot per reason and grows when a reason is appended to enum juneau_reason
 * (ARP-12 added three). libbpf refuses to reuse a pin of another size, which would stop an
 * upgraded agent from loading at all; the map holds only counters, so its pin is dropped and a new
 * one created (a running older program keeps counting into the old map until it is replaced).
 * The maps that hold what is answered are never dropped here.
 */
function unpinOutgrownStats(pinDir: string): void {
  const pin = path.join(pinDir, MAP_NAMES.stats);
  if (!fs.existsSync(pin)) return;
  const map = BpfMap.openPinned(pin);
  const slots = map.info.maxEntries;
  map.close();
  if (slots !== REASONS.JUNEAU_REASON_MAX) unlinkIfPresent(pin);
}

/**
 * juneau_config grew for FO-2 (heartbeat and expiry). Its entries are written by the agent at
 * every attach (MAC and flags come from the agent's options), so an older pin is dropped like an
 * outgrown stats map: the running older program keeps its map until it is replaced without a gap,
 * and the new entry starts with a fresh heartbeat (an older agent had none to keep).
 */
function unpinOutgrownConfig(pinDir: string): void {
  const pin = path.join(pinDir, MAP_NAMES.config);
  if (!fs.existsSync(pin)) return;
  const map = BpfMap.openPinned(pin);
  const valueSize = map.valueSize;
  map.close();
  if (valueSize !== CONFIG_VALUE.size) unlinkIfPresent(pin);
}

/** An older agent's pinned map, read and renamed aside: dropped once the new responder is
 * attached, put back if attaching fails. */
interface SetAside<K, V> {
  readonly entries: Map<K, V>;
  drop(): void;
  restore(): void;
}

/**
 * Sets aside the pin `name` when `older(map)` says an older agent made it, reading its entries
 * with `decode` first. A pin that neither this nor an older agent made is refused by name.
 */
function setAsideOlder<K, V>(
  pinDir: string,
  name: string,
  older: (map: BpfMap) => boolean | 'current',
  decode: (key: Buffer, value: Buffer) => [K, V],
): SetAside<K, V> {
  const pin = path.join(pinDir, name);
  const aside = `${pin}_older`; // bpffs refuses dots in names
  const entries = new Map<K, V>();
  const nothing = { entries, drop: () => undefined, restore: () => undefined };
  if (!fs.existsSync(pin)) return nothing;
  const map = BpfMap.openPinned(pin);
  try {
    const verdict = older(map);
    if (verdict === 'current') return nothing;
    if (!verdict) {
      throw new Error(
        `${pin}: pinned map has type ${map.info.type} and key/value ${map.keySize}/${map.valueSize} bytes, ` +
          `which no Juneau agent wrote; remove it (the agent rewrites its contents)`,
      );
    }
    for (const [key, value] of map.entries()) {
      const [k, v] = decode(key, value);
      entries.set(k, v);
    }
  } finally {
    map.close();
  }
  // Renamed, not removed, until the new responder is attached: a failed attach puts it back.
  fs.renameSync(pin, aside);
  return {
    entries,
    drop: () => unlinkIfPresent(aside),
    restore: () => {
      if (!fs.existsSync(pin)) fs.renameSync(aside, pin);
    },
  };
}

/** The verdict on a pin whose current type is `current` and which an older agent made as a plain
 * hash with the same key and value sizes. */
function olderHash(current: number, keySize: number, valueSize: number): (map: BpfMap) => boolean | 'current' {
  return (map) =>
    map.info.type === current
      ? 'current'
      : map.info.type === MAP_TYPES.BPF_MAP_TYPE_HASH && map.keySize === keySize && map.valueSize === valueSize;
}

/**
 * external_arp_table became per-CPU (no shared-line atomics per request). An older agent pinned it
 * as a plain hash with the same key and value sizes, which libbpf would refuse to reuse (another
 * type) and which must never be read as per-CPU. Its entries are read here with their counters
 * and its pin set aside; attachArpResponder writes them into the new table before the new program
 * replaces the old one, which keeps answering from the old map until that moment (OPS-1).
 * Requests the old program counts between this read and the replace are not carried over.
 */
function setAsideOlderTable(pinDir: string): SetAside<string, ArpEntry> {
  return setAsideOlder(
    pinDir,
    MAP_NAMES.arpTable,
    (map) =>
      map.info.type === ARP_TABLE_TYPE
        ? 'current'
        : map.info.type === MAP_TYPES.BPF_MAP_TYPE_HASH &&
          map.keySize === ARP_KEY.size &&
          map.valueSize === ARP_VALUE.size,
    (key, value) => [decodeArpKey(key), decodeArpValue(value)],
  );
}

/**
 * juneau_config became an array of slots (read without a call). An older agent pinned it as a
 * hash keyed by ifindex with the same key and value sizes (the slot's ifindex field was padding).
 * Its entries, heartbeats included, are carried into the new array like the older table's: the
 * old program keeps reading the old map until it is replaced without a gap (OPS-1, FO-2).
 */
function setAsideOlderConfig(pinDir: string): SetAside<number, InterfaceConfig> {
  return setAsideOlder(pinDir, MAP_NAMES.config, olderHash(CONFIG_TYPE, 4, CONFIG_VALUE.size), (key, value) => [
    key.readUInt32LE(0),
    decodeConfigValue(value),
  ]);
}

/** Removes the responder from `ifindex` (only if it is ours) and unpins its program. Maps stay
 * pinned; removePins() deletes them. Returns false when no responder was attached. */
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

/** Deletes every pin in `pinDir` and the directory (uninstall, tests). */
export function removePins(pinDir: string = DEFAULT_PIN_DIR): void {
  if (!fs.existsSync(pinDir)) return;
  for (const name of fs.readdirSync(pinDir)) unlinkIfPresent(path.join(pinDir, name));
  fs.rmdirSync(pinDir);
}

// Pins are unlinked one by one: fs.rmSync stats paths in ways bpffs refuses.
export function unlinkIfPresent(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
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

/** Pins under a temporary name and renames over the old pin, so the path always names a program. */
function pinProgram(progFd: number, pinPath: string): void {
  const tmp = `${pinPath}_new`; // bpffs refuses dots in names (EPERM)
  unlinkIfPresent(tmp);
  libbpf.objPin(progFd, tmp);
  fs.renameSync(tmp, pinPath);
}

/** Mounts bpffs on /sys/fs/bpf when nothing is mounted there, and creates `pinDir`. */
export function ensureBpffs(pinDir: string): void {
  const root = '/sys/fs/bpf';
  if (!pinDir.startsWith(`${root}/`)) throw new Error(`pin directory '${pinDir}' must be under ${root}`);
  if (fs.statfsSync(root).type !== BPF_FS_MAGIC) {
    execFileSync('mount', ['-t', 'bpf', 'bpf', root], { stdio: 'pipe' });
  }
  fs.mkdirSync(pinDir, { recursive: true, mode: 0o700 });
}

/** build/bpf/<name> of this package, from source (runtime/agent/bpf) or built (build/...) layouts. */
export function findBuiltObject(name: string): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    for (const candidate of [path.join(dir, 'build', 'bpf', name), path.join(dir, 'bpf', name)]) {
      if (candidate.includes(`${path.sep}build${path.sep}bpf${path.sep}`) && fs.existsSync(candidate)) return candidate;
    }
    if (path.dirname(dir) === dir) throw new Error(`${name} not found above ${__dirname}: run npm run build:bpf`);
  }
}
