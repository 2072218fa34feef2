// A small typed binding over Debian's libbpf.so.1 (libbpf 1.1), through koffi. There is no
// maintained libbpf package on npm (ARCHITECTURE.md), so this binding is ours and stays small:
// only the calls the agent needs. Every failure throws a LibbpfError naming the libbpf call and
// the errno. libbpf >= 1.0 returns -errno from int functions and NULL + errno from pointer ones.
import { constants as osConstants } from 'node:os';
import type { LibraryHandle } from 'koffi';
import { koffi } from '../koffi';

/** bpf_xdp_attach() flags, from linux/if_link.h. */
export const XDP_FLAGS = {
  UPDATE_IF_NOEXIST: 1,
  SKB_MODE: 2,
  DRV_MODE: 4,
  HW_MODE: 8,
  REPLACE: 16,
} as const;

/** bpf_xdp_query() attach_mode values, from linux/if_link.h. */
export const XDP_ATTACHED = { NONE: 0, DRV: 1, SKB: 2, HW: 3, MULTI: 4 } as const;

/** bpf_map_update_elem() flags, from linux/bpf.h. */
export const BPF_UPDATE = { ANY: 0, NOEXIST: 1, EXIST: 2 } as const;

const ERRNO_NAMES = new Map<number, string>(Object.entries(osConstants.errno).map(([name, value]) => [value, name]));

/** A failed libbpf (or libc) call: which call, on what, and the errno it reported. */
export class LibbpfError extends Error {
  readonly call: string;
  readonly errno: number;
  readonly code: string;

  constructor(call: string, errno: number, what?: string) {
    const code = ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
    super(`${call}${what ? `(${what})` : ''} failed: ${code} (${errno})`);
    this.name = 'LibbpfError';
    this.call = call;
    this.errno = errno;
    this.code = code;
  }
}

/** An opaque C pointer (struct bpf_object *, struct bpf_map *, ...). */
export type CPointer = unknown;

const LIBBPF_PATHS = ['libbpf.so.1', '/usr/lib/x86_64-linux-gnu/libbpf.so.1', '/usr/lib/aarch64-linux-gnu/libbpf.so.1'];

function loadFirst(paths: readonly string[]): LibraryHandle {
  const failures: string[] = [];
  for (const path of paths) {
    try {
      return koffi.load(path);
    } catch (err) {
      failures.push(`${path}: ${(err as Error).message}`);
    }
  }
  throw new Error(`cannot load libbpf (install Debian's libbpf1): ${failures.join('; ')}`);
}

function declare(lib: LibraryHandle) {
  // Anonymous types: koffi's type names are process-wide, and a module evaluated twice (Jest
  // gives every test file its own module registry) must not register them again.
  const obj = koffi.pointer(koffi.opaque());
  const prog = koffi.pointer(koffi.opaque());
  const map = koffi.pointer(koffi.opaque());
  return {
    libbpf_set_print: lib.func('void *libbpf_set_print(void *fn)'),
    libbpf_num_possible_cpus: lib.func('int libbpf_num_possible_cpus()'),
    bpf_object__open_file: lib.func('bpf_object__open_file', obj, ['str', 'void *']),
    bpf_object__load: lib.func('bpf_object__load', 'int', [obj]),
    bpf_object__close: lib.func('bpf_object__close', 'void', [obj]),
    bpf_object__find_program_by_name: lib.func('bpf_object__find_program_by_name', prog, [obj, 'str']),
    bpf_object__next_map: lib.func('bpf_object__next_map', map, [obj, map]),
    bpf_program__fd: lib.func('bpf_program__fd', 'int', [prog]),
    bpf_map__name: lib.func('bpf_map__name', 'str', [map]),
    bpf_map__set_pin_path: lib.func('bpf_map__set_pin_path', 'int', [map, 'str']),
    bpf_map__type: lib.func('bpf_map__type', 'int', [map]),
    bpf_map__key_size: lib.func('bpf_map__key_size', 'uint32_t', [map]),
    bpf_map__value_size: lib.func('bpf_map__value_size', 'uint32_t', [map]),
    bpf_map__max_entries: lib.func('bpf_map__max_entries', 'uint32_t', [map]),
    bpf_map__map_flags: lib.func('bpf_map__map_flags', 'uint32_t', [map]),
    bpf_xdp_attach: lib.func('int bpf_xdp_attach(int ifindex, int prog_fd, uint32_t flags, void *opts)'),
    bpf_xdp_detach: lib.func('int bpf_xdp_detach(int ifindex, uint32_t flags, void *opts)'),
    bpf_xdp_query: lib.func('int bpf_xdp_query(int ifindex, int flags, void *opts)'),
    bpf_map_update_elem: lib.func('int bpf_map_update_elem(int fd, void *key, void *value, uint64_t flags)'),
    bpf_map_lookup_elem: lib.func('int bpf_map_lookup_elem(int fd, void *key, void *value)'),
    bpf_map_delete_elem: lib.func('int bpf_map_delete_elem(int fd, void *key)'),
    bpf_map_get_next_key: lib.func('int bpf_map_get_next_key(int fd, void *key, void *next_key)'),
    bpf_map_lookup_batch: lib.func(
      'int bpf_map_lookup_batch(int fd, void *in_batch, void *out_batch, void *keys, void *values, void *count, void *opts)',
    ),
    bpf_obj_pin: lib.func('int bpf_obj_pin(int fd, str path)'),
    bpf_obj_get: lib.func('int bpf_obj_get(str path)'),
    bpf_prog_get_fd_by_id: lib.func('int bpf_prog_get_fd_by_id(uint32_t id)'),
    bpf_obj_get_info_by_fd: lib.func('int bpf_obj_get_info_by_fd(int fd, void *info, void *info_len)'),
    bpf_tc_hook_create: lib.func('int bpf_tc_hook_create(void *hook)'),
    bpf_tc_attach: lib.func('int bpf_tc_attach(void *hook, void *opts)'),
    bpf_tc_detach: lib.func('int bpf_tc_detach(void *hook, void *opts)'),
    bpf_tc_query: lib.func('int bpf_tc_query(void *hook, void *opts)'),
  };
}

function declareLibc(lib: LibraryHandle) {
  return {
    close: lib.func('int close(int fd)'),
    if_nametoindex: lib.func('uint32_t if_nametoindex(str name)'),
  };
}

type Libbpf = ReturnType<typeof declare>;
type Libc = ReturnType<typeof declareLibc>;

interface Loaded {
  readonly bpf: Libbpf;
  readonly libc: Libc;
}

// One binding per process, shared by every copy of this module (see declare()).
const LOADED = Symbol.for('juneau.agent.bpf.libbpf');

/** Loads libbpf once; silences its stderr logger unless JUNEAU_LIBBPF_LOG=1. */
function lib(): Loaded {
  const store = globalThis as { [LOADED]?: Loaded };
  if (!store[LOADED]) {
    const bpf = declare(loadFirst(LIBBPF_PATHS));
    const libc = declareLibc(loadFirst(['libc.so.6']));
    if (process.env.JUNEAU_LIBBPF_LOG !== '1') bpf.libbpf_set_print(null);
    store[LOADED] = { bpf, libc };
  }
  return store[LOADED];
}

/** Throws for an int-returning libbpf call that failed (-errno). */
function check(call: string, rc: number, what?: string): number {
  if (rc < 0) throw new LibbpfError(call, -rc, what);
  return rc;
}

/** Throws for a pointer-returning libbpf call that returned NULL (errno set). */
function checkPtr(call: string, ptr: CPointer, what?: string): CPointer {
  if (ptr === null || ptr === undefined) throw new LibbpfError(call, koffi.errno() || 1, what);
  return ptr;
}

// ---- objects, programs, maps -------------------------------------------------------------

export function objectOpenFile(path: string): CPointer {
  return checkPtr('bpf_object__open_file', lib().bpf.bpf_object__open_file(path, null), path);
}

export function objectLoad(obj: CPointer, what?: string): void {
  check('bpf_object__load', lib().bpf.bpf_object__load(obj), what);
}

export function objectClose(obj: CPointer): void {
  lib().bpf.bpf_object__close(obj);
}

export function objectFindProgram(obj: CPointer, name: string): CPointer {
  return checkPtr('bpf_object__find_program_by_name', lib().bpf.bpf_object__find_program_by_name(obj, name), name);
}

/** The maps of an opened object, in ELF order. */
export function objectMaps(obj: CPointer): CPointer[] {
  const maps: CPointer[] = [];
  for (let m = lib().bpf.bpf_object__next_map(obj, null); m; m = lib().bpf.bpf_object__next_map(obj, m)) maps.push(m);
  return maps;
}

export function programFd(prog: CPointer): number {
  return check('bpf_program__fd', lib().bpf.bpf_program__fd(prog));
}

export function mapName(map: CPointer): string {
  return lib().bpf.bpf_map__name(map) as string;
}

export function mapSetPinPath(map: CPointer, path: string): void {
  check('bpf_map__set_pin_path', lib().bpf.bpf_map__set_pin_path(map, path), path);
}

/** What an opened object declares for a map, before load(): what libbpf compares with a pin
 * before reusing it (the same fields as the kernel's bpf_map_info). */
export type MapDef = Pick<BpfMapInfo, 'type' | 'keySize' | 'valueSize' | 'maxEntries' | 'flags'>;

export function mapDef(map: CPointer): MapDef {
  const bpf = lib().bpf;
  return {
    type: bpf.bpf_map__type(map) as number,
    keySize: bpf.bpf_map__key_size(map) as number,
    valueSize: bpf.bpf_map__value_size(map) as number,
    maxEntries: bpf.bpf_map__max_entries(map) as number,
    flags: bpf.bpf_map__map_flags(map) as number,
  };
}

export function numPossibleCpus(): number {
  return check('libbpf_num_possible_cpus', lib().bpf.libbpf_num_possible_cpus());
}

// ---- map elements (by fd) ----------------------------------------------------------------

export function mapUpdate(fd: number, key: Buffer, value: Buffer, flags: number = BPF_UPDATE.ANY): void {
  check('bpf_map_update_elem', lib().bpf.bpf_map_update_elem(fd, key, value, flags));
}

/** Fills `value` and returns true, or returns false when the key is absent. */
export function mapLookup(fd: number, key: Buffer, value: Buffer): boolean {
  const rc = lib().bpf.bpf_map_lookup_elem(fd, key, value) as number;
  if (rc === -osConstants.errno.ENOENT) return false;
  check('bpf_map_lookup_elem', rc);
  return true;
}

export interface BatchRead {
  /** Entries read into keys/values. */
  readonly count: number;
  /** The map has no entry after these. */
  readonly done: boolean;
}

/**
 * BPF_MAP_LOOKUP_BATCH: up to `max` entries after the cursor `inBatch` (null: from the start)
 * into `keys` and `values`, the next cursor into `outBatch`. Undefined when the kernel cannot
 * batch this map (EINVAL, EOPNOTSUPP/ENOTSUPP): the caller walks it key by key.
 */
export function mapLookupBatch(
  fd: number,
  inBatch: Buffer | null,
  outBatch: Buffer,
  keys: Buffer,
  values: Buffer,
  max: number,
): BatchRead | undefined {
  const count = Buffer.alloc(4);
  count.writeUInt32LE(max);
  const rc = lib().bpf.bpf_map_lookup_batch(fd, inBatch, outBatch, keys, values, count, null) as number;
  if (rc === -osConstants.errno.ENOENT) return { count: count.readUInt32LE(), done: true };
  if (rc === -osConstants.errno.EINVAL || rc === -osConstants.errno.EOPNOTSUPP || rc === -ENOTSUPP) return undefined;
  check('bpf_map_lookup_batch', rc);
  return { count: count.readUInt32LE(), done: false };
}

/** The kernel's internal ENOTSUPP (524), which bpf() returns for an operation a map type lacks. */
const ENOTSUPP = 524;

/** Returns false when the key was absent. */
export function mapDelete(fd: number, key: Buffer): boolean {
  const rc = lib().bpf.bpf_map_delete_elem(fd, key) as number;
  if (rc === -osConstants.errno.ENOENT) return false;
  check('bpf_map_delete_elem', rc);
  return true;
}

/** Writes the key after `key` (the first one when `key` is null) into `next`; false at the end. */
export function mapNextKey(fd: number, key: Buffer | null, next: Buffer): boolean {
  const rc = lib().bpf.bpf_map_get_next_key(fd, key, next) as number;
  if (rc === -osConstants.errno.ENOENT) return false;
  check('bpf_map_get_next_key', rc);
  return true;
}

// ---- pinning and fds ---------------------------------------------------------------------

export function objPin(fd: number, path: string): void {
  check('bpf_obj_pin', lib().bpf.bpf_obj_pin(fd, path), path);
}

/** Opens a pinned object; the caller owns (and must close) the returned fd. */
export function objGet(path: string): number {
  return check('bpf_obj_get', lib().bpf.bpf_obj_get(path), path);
}

/** Opens a program by id; the caller owns (and must close) the returned fd. */
export function progGetFdById(id: number): number {
  return check('bpf_prog_get_fd_by_id', lib().bpf.bpf_prog_get_fd_by_id(id), String(id));
}

export interface ProgInfo {
  readonly id: number;
  readonly type: number;
  readonly tag: string;
  readonly name: string;
}

// struct bpf_prog_info (linux/bpf.h): type @0, id @4, tag[8] @8, name[16] @64. The kernel fills
// at most info_len bytes, so a prefix of the struct is enough.
const PROG_INFO_LEN = 80;

export function progInfo(fd: number): ProgInfo {
  const info = objectInfo(fd, PROG_INFO_LEN);
  return {
    type: info.readUInt32LE(0),
    id: info.readUInt32LE(4),
    tag: info.subarray(8, 16).toString('hex'),
    name: cString(info.subarray(64, 80)),
  };
}

/** bpf_obj_get_info_by_fd into a buffer of `length` bytes (a prefix of the kernel's struct). */
function objectInfo(fd: number, length: number): Buffer {
  const info = Buffer.alloc(length);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(length);
  check('bpf_obj_get_info_by_fd', lib().bpf.bpf_obj_get_info_by_fd(fd, info, len), `fd ${fd}`);
  return info;
}

/** A NUL-terminated char array (the whole array when it has no NUL). */
function cString(chars: Buffer): string {
  const nul = chars.indexOf(0);
  return chars.subarray(0, nul < 0 ? chars.length : nul).toString('latin1');
}

export interface BpfMapInfo {
  readonly type: number;
  readonly id: number;
  readonly keySize: number;
  readonly valueSize: number;
  readonly maxEntries: number;
  readonly flags: number;
  readonly name: string;
}

// struct bpf_map_info (linux/bpf.h): type @0, id @4, key_size @8, value_size @12,
// max_entries @16, map_flags @20, name[16] @24.
const MAP_INFO_LEN = 40;

export function mapInfo(fd: number): BpfMapInfo {
  const info = objectInfo(fd, MAP_INFO_LEN);
  return {
    type: info.readUInt32LE(0),
    id: info.readUInt32LE(4),
    keySize: info.readUInt32LE(8),
    valueSize: info.readUInt32LE(12),
    maxEntries: info.readUInt32LE(16),
    flags: info.readUInt32LE(20),
    name: cString(info.subarray(24, 40)),
  };
}

export function closeFd(fd: number): void {
  if (fd >= 0) lib().libc.close(fd);
}

/** if_nametoindex(3) in the calling thread's network namespace; throws when absent. */
export function ifNameToIndex(name: string): number {
  const index = lib().libc.if_nametoindex(name) as number;
  if (index === 0) throw new LibbpfError('if_nametoindex', koffi.errno() || osConstants.errno.ENODEV, name);
  return index;
}

// ---- XDP attach --------------------------------------------------------------------------

// struct bpf_xdp_attach_opts { size_t sz; int old_prog_fd; size_t :0; } -> 16 bytes.
function xdpAttachOpts(oldProgFd: number): Buffer {
  const opts = Buffer.alloc(16);
  opts.writeBigUInt64LE(16n, 0);
  opts.writeInt32LE(oldProgFd, 8);
  return opts;
}

/** bpf_xdp_attach(); with XDP_FLAGS.REPLACE, `oldProgFd` is the program expected to be there. */
export function xdpAttach(ifindex: number, progFd: number, flags: number, oldProgFd?: number): void {
  const opts = oldProgFd === undefined ? null : xdpAttachOpts(oldProgFd);
  check('bpf_xdp_attach', lib().bpf.bpf_xdp_attach(ifindex, progFd, flags, opts), `ifindex ${ifindex}`);
}

export function xdpDetach(ifindex: number, flags: number, oldProgFd?: number): void {
  const opts = oldProgFd === undefined ? null : xdpAttachOpts(oldProgFd);
  check('bpf_xdp_detach', lib().bpf.bpf_xdp_detach(ifindex, flags, opts), `ifindex ${ifindex}`);
}

export interface XdpQuery {
  /** XDP_ATTACHED.* */
  readonly attachMode: number;
  /** The single attached program's id (0 when none or several). */
  readonly progId: number;
  readonly drvProgId: number;
  readonly skbProgId: number;
  readonly hwProgId: number;
}

// struct bpf_xdp_query_opts { size_t sz; __u32 prog_id, drv_prog_id, hw_prog_id, skb_prog_id;
// __u8 attach_mode; size_t :0; } -> 32 bytes in libbpf 1.1.
export function xdpQuery(ifindex: number): XdpQuery {
  const opts = Buffer.alloc(32);
  opts.writeBigUInt64LE(32n, 0);
  check('bpf_xdp_query', lib().bpf.bpf_xdp_query(ifindex, 0, opts), `ifindex ${ifindex}`);
  return {
    progId: opts.readUInt32LE(8),
    drvProgId: opts.readUInt32LE(12),
    hwProgId: opts.readUInt32LE(16),
    skbProgId: opts.readUInt32LE(20),
    attachMode: opts.readUInt8(24),
  };
}

// ---- TC (clsact direct-action filters) ---------------------------------------------------

/** enum bpf_tc_attach_point (libbpf.h). */
export const TC_ATTACH = { INGRESS: 1, EGRESS: 2 } as const;
export type TcAttachPoint = (typeof TC_ATTACH)[keyof typeof TC_ATTACH];

/** Where a filter sits: interface, direction, and the handle/priority that name it. */
export interface TcFilter {
  readonly ifindex: number;
  readonly attachPoint: TcAttachPoint;
  readonly handle: number;
  readonly priority: number;
}

// struct bpf_tc_hook { size_t sz; int ifindex; enum attach_point; __u32 parent; size_t :0; } -> 24.
function tcHook(ifindex: number, attachPoint: number): Buffer {
  const hook = Buffer.alloc(24);
  hook.writeBigUInt64LE(24n, 0);
  hook.writeInt32LE(ifindex, 8);
  hook.writeUInt32LE(attachPoint, 12);
  return hook;
}

// struct bpf_tc_opts { size_t sz; int prog_fd; __u32 flags, prog_id, handle, priority; size_t :0; } -> 32.
function tcOpts(filter: TcFilter, progFd = 0, flags = 0): Buffer {
  const opts = Buffer.alloc(32);
  opts.writeBigUInt64LE(32n, 0);
  opts.writeInt32LE(progFd, 8);
  opts.writeUInt32LE(flags, 12);
  opts.writeUInt32LE(filter.handle, 20);
  opts.writeUInt32LE(filter.priority, 24);
  return opts;
}

const BPF_TC_F_REPLACE = 1;

/** Creates the clsact qdisc on `ifindex` unless it is there (it holds both directions). */
export function tcHookCreate(ifindex: number): void {
  const rc = lib().bpf.bpf_tc_hook_create(tcHook(ifindex, TC_ATTACH.INGRESS | TC_ATTACH.EGRESS)) as number;
  if (rc === -osConstants.errno.EEXIST) return;
  check('bpf_tc_hook_create', rc, `ifindex ${ifindex}`);
}

/** bpf_tc_attach(): a direct-action filter, replacing atomically whatever program holds the same
 * handle and priority. Returns the attached program's id. */
export function tcAttach(filter: TcFilter, progFd: number): number {
  const opts = tcOpts(filter, progFd, BPF_TC_F_REPLACE);
  check(
    'bpf_tc_attach',
    lib().bpf.bpf_tc_attach(tcHook(filter.ifindex, filter.attachPoint), opts),
    `ifindex ${filter.ifindex}`,
  );
  return opts.readUInt32LE(16);
}

/** Removes the filter; false when it was not there. */
export function tcDetach(filter: TcFilter): boolean {
  const rc = lib().bpf.bpf_tc_detach(tcHook(filter.ifindex, filter.attachPoint), tcOpts(filter)) as number;
  if (rc === -osConstants.errno.ENOENT || rc === -osConstants.errno.EINVAL) return false;
  check('bpf_tc_detach', rc, `ifindex ${filter.ifindex}`);
  return true;
}

/** The program id of the filter, or 0 when there is none (or no clsact qdisc). */
export function tcQuery(filter: TcFilter): number {
  const opts = tcOpts(filter);
  const rc = lib().bpf.bpf_tc_query(tcHook(filter.ifindex, filter.attachPoint), opts) as number;
  if (rc === -osConstants.errno.ENOENT || rc === -osConstants.errno.EINVAL) return 0;
  check('bpf_tc_query', rc, `ifindex ${filter.ifindex}`);
  return opts.readUInt32LE(16);
}
