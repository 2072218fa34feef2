// Where the agent pins its maps and programs, and what becomes of a pin the object being loaded
// cannot reuse: one policy per map.
//
// Pins live in <bpffs>/juneau/<PIN_VERSION>. Maps and programs outlive the agent, and the next
// agent adopts them (OPS-1): libbpf reuses a pinned map whose type, key and value sizes, entries
// and flags equal the object's. When a map's definition changes in bpf/juneau_maps.h, its pin no
// longer matches, and PIN_POLICY says what happens to it before the object loads:
//  - 'counters': nothing the datapath needs is lost by dropping it (counters, or what the loader
//    writes before the program attaches): the pin is removed and libbpf makes a fresh map. The
//    program being replaced keeps the old map until the replace.
//  - 'state': what the program answers or translates from. Its entries are read, its pin set
//    aside, and the entries written into the new map with the map's `carry` codec before the new
//    program attaches; a failed load or attach puts the old pin back. Without a codec the entries
//    are copied as they are, which holds when only the entries or flags changed; a change of the
//    key, the value or the type needs its codec here (decode the old layout, encode with
//    layout/). A change no codec can carry is a new PIN_VERSION: its pins start empty.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { LibbpfError, numPossibleCpus, objPin, type MapDef } from './libbpf';
import { BpfMap } from './map';
import type { BpfObject } from './object';
import {
  ANNOUNCE_MAP_NAME,
  MAP_NAMES,
  NAT_MAP_NAMES,
  NAT_VALUE,
  encodeNatValue,
  isPerCpu,
  perCpuValueSize,
} from './layout';
import { ipv4FromBytes } from './addr';
import { resolvePodDevice } from './pod-device';

/** The directory under bpffs holding every version's pins (uninstall removes it). */
export const PIN_ROOT = 'juneau';
/** The version of the pins' layout: a layout change no PIN_POLICY codec carries is a new one. */
export const PIN_VERSION = 'v1';
/** Where under `--bpffs` the agent pins its maps and programs. */
export const PIN_SUBDIR = path.join(PIN_ROOT, PIN_VERSION);

/** Rewrites an entry of a map whose definition changed: the pinned key and value in, the new map's out. */
export type Carry = (key: Buffer, value: Buffer) => readonly [Buffer, Buffer];

export type PinPolicy = { readonly kind: 'counters' } | { readonly kind: 'state'; readonly carry?: Carry };

const COUNTERS: PinPolicy = { kind: 'counters' };
const STATE: PinPolicy = { kind: 'state' };

type MapName =
  | (typeof MAP_NAMES)[keyof typeof MAP_NAMES]
  | (typeof NAT_MAP_NAMES)[keyof typeof NAT_MAP_NAMES]
  | typeof ANNOUNCE_MAP_NAME;

/**
 * juneau_nat_in/out/direct from before the values named the pod's device (4 bytes, the address
 * alone; security review H1/M3): each entry is carried with the device resolved now, from this
 * node's route to the pod address (in the key of juneau_nat_out, the value of the others), so
 * translation goes on through the upgrade (NAT-4).
 */
const natValueCarry =
  (podAddressIn: 'key' | 'value'): Carry =>
  (k, v) => {
    if (v.length === NAT_VALUE.size) return [k, v] as const;
    const pod = ipv4FromBytes(podAddressIn === 'key' ? k : v);
    return [k, encodeNatValue(v.subarray(0, 4), resolvePodDevice(pod))] as const;
  };

/** Every pinned map's policy; the next change of a map's layout is its entry here. */
export const PIN_POLICY: Readonly<Record<MapName, PinPolicy>> = {
  // The XDP responder (bpf/xdp_arp.bpf.c).
  external_arp_table: STATE,
  juneau_arp_slots: STATE,
  juneau_arp_counters: COUNTERS,
  juneau_arp_filter: COUNTERS, // rebuilt from the table before the program attaches
  juneau_arp_class: STATE, // SEC-11: which addresses outlive the heartbeat
  juneau_guard: STATE,
  juneau_config: STATE, // FO-2: the heartbeat a restarted agent keeps
  juneau_stats: COUNTERS,
  // The ElasticIP NAT programs (bpf/tc_nat.bpf.c).
  juneau_nat_in: { kind: 'state', carry: natValueCarry('value') },
  juneau_nat_out: { kind: 'state', carry: natValueCarry('key') },
  juneau_nat_direct: { kind: 'state', carry: natValueCarry('value') },
  juneau_nat_remote: STATE,
  juneau_nat_vni: STATE,
  juneau_nat_peers: STATE, // H3: the Nodes a restarted agent keeps accepting VXLAN from
  juneau_nat_skip: STATE, // NAT-2: the destinations that keep the pod address
  juneau_nat_cfg: COUNTERS, // written before the programs attach
  juneau_nat_cnt: COUNTERS,
  juneau_nat_stats: COUNTERS,
  // FO-1 (bpf/juneau_announce.bpf.c).
  juneau_announce: COUNTERS,
};

/**
 * Loads `obj` with its maps pinned in `pinDir`, after applying each map's policy to a pin the
 * object would not reuse, then runs `attach` (which attaches the programs) with the names of the
 * maps adopted as pinned. Carried entries are in the new maps before `attach` runs; a pin set
 * aside is removed once `attach` returns, and put back if loading or `attach` throws.
 */
export function loadPinned<T>(obj: BpfObject, pinDir: string, attach: (adopted: string[]) => T): T {
  ensureBpffs(pinDir);
  const asides: SetAside[] = [];
  try {
    for (const [name, def] of obj.mapDefs()) {
      const aside = applyPolicy(obj.file, path.join(pinDir, name), def);
      if (aside) asides.push(aside);
    }
    const adopted = [...obj.mapDefs().keys()].filter((name) => fs.existsSync(path.join(pinDir, name)));
    obj.setPinDir(pinDir);
    loadExplaining(obj, pinDir, adopted);
    for (const aside of asides) aside.carry();
    const result = attach(adopted);
    for (const aside of asides) unlinkIfPresent(aside.aside);
    return result;
  } catch (err) {
    for (const aside of asides) aside.restore();
    throw err;
  }
}

/** A state map's pin renamed aside, with the entries to write into the map that replaces it. */
interface SetAside {
  readonly aside: string;
  carry(): void;
  restore(): void;
}

function sameShape(pinned: MapDef, def: MapDef): boolean {
  return (
    pinned.type === def.type &&
    pinned.keySize === def.keySize &&
    pinned.valueSize === def.valueSize &&
    pinned.maxEntries === def.maxEntries &&
    pinned.flags === def.flags
  );
}

/** Applies the policy of the map pinned at `pin` when its shape differs from `def`. */
function applyPolicy(file: string, pin: string, def: MapDef): SetAside | undefined {
  if (!fs.existsSync(pin)) return undefined;
  const name = path.basename(pin);
  const policy = (PIN_POLICY as Readonly<Record<string, PinPolicy>>)[name];
  if (!policy) throw new Error(`${file}: map ${name} has no pin policy (runtime/agent/bpf/pins.ts)`);
  const map = BpfMap.openPinned(pin);
  let entries: Array<readonly [Buffer, Buffer]>;
  try {
    if (sameShape(map.info, def)) return undefined;
    if (policy.kind === 'counters') {
      unlinkIfPresent(pin);
      return undefined;
    }
    const unchanged = map.info.type === def.type && map.keySize === def.keySize && map.valueSize === def.valueSize;
    const carry = policy.carry ?? (unchanged ? (k: Buffer, v: Buffer) => [k, v] as const : undefined);
    if (!carry) {
      throw new Error(
        `${pin}: pinned map has type ${map.info.type} and key/value ${map.keySize}/${map.valueSize} bytes, ` +
          `${file} declares ${def.type} and ${def.keySize}/${def.valueSize}: its PIN_POLICY entry needs a carry codec`,
      );
    }
    const cpus = numPossibleCpus();
    const valueBytes = isPerCpu(map.info.type) ? perCpuValueSize(map.valueSize, cpus) : map.valueSize;
    entries = map.entries(valueBytes).map(([k, v]) => carry(k, v));
  } finally {
    map.close();
  }
  const aside = `${pin}_aside`; // bpffs refuses dots in names
  fs.renameSync(pin, aside);
  return {
    aside,
    carry: () => {
      const into = BpfMap.openPinned(pin);
      try {
        for (const [k, v] of entries) into.update(k, v);
      } finally {
        into.close();
      }
    },
    restore: () => {
      if (fs.existsSync(aside)) fs.renameSync(aside, pin);
    },
  };
}

/** load(), with the likely cause spelled out when pinned maps were being reused: libbpf refuses a
 * pinned map whose type, key/value size, entries or flags differ from the object's. */
function loadExplaining(obj: BpfObject, pinDir: string, adopted: string[]): void {
  try {
    obj.load();
  } catch (err) {
    if (err instanceof LibbpfError && err.code === 'EPERM') {
      // libbpf raises RLIMIT_MEMLOCK by itself only on kernels that charge BPF memory to it (before
      // 5.11; later ones charge the memory cgroup), and that needs CAP_SYS_RESOURCE, which the
      // install manifest does not grant (docs/security.md, "The install's privileges").
      err.message +=
        ' (the kernel refused to create a map or load the program: the agent needs CAP_BPF and CAP_NET_ADMIN, ' +
        'and on kernels before 5.11, which charge BPF memory to RLIMIT_MEMLOCK, a memlock limit large enough for its maps: ' +
        'Juneau supports Linux 5.11 and later)';
    }
    if (err instanceof LibbpfError && adopted.length > 0) {
      err.message += ` (reusing pinned maps ${adopted.join(', ')} in ${pinDir})`;
    }
    throw err;
  }
}

/** Pins under a temporary name and renames over the old pin, so the path always names a program. */
export function pinProgram(progFd: number, pinPath: string): void {
  const tmp = `${pinPath}_new`; // bpffs refuses dots in names (EPERM)
  unlinkIfPresent(tmp);
  objPin(progFd, tmp);
  fs.renameSync(tmp, pinPath);
}

const BPF_FS_MAGIC = 0xcafe4a11;

/** Mounts bpffs on /sys/fs/bpf when nothing is mounted there, and creates `pinDir`. */
export function ensureBpffs(pinDir: string): void {
  const root = '/sys/fs/bpf';
  if (!pinDir.startsWith(`${root}/`)) throw new Error(`pin directory '${pinDir}' must be under ${root}`);
  if (fs.statfsSync(root).type !== BPF_FS_MAGIC) {
    execFileSync('mount', ['-t', 'bpf', 'bpf', root], { stdio: 'pipe' });
  }
  fs.mkdirSync(pinDir, { recursive: true, mode: 0o700 });
}

/** Deletes every pin under `dir` (subdirectories too) and the directory; for a version's directory
 * (<bpffs>/juneau/v1), the PIN_ROOT above it too once no version is left there (tests). */
export function removePins(dir: string): void {
  if (!fs.existsSync(dir)) return;
  removeTree(dir);
  const root = path.dirname(dir);
  if (dir.endsWith(`${path.sep}${PIN_SUBDIR}`) && fs.readdirSync(root).length === 0) fs.rmdirSync(root);
}

function removeTree(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) removeTree(file);
    else unlinkIfPresent(file);
  }
  fs.rmdirSync(dir);
}

// Pins are unlinked one by one: fs.rmSync stats paths in ways bpffs refuses.
export function unlinkIfPresent(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
