// The XDP responder's maps (bpf/xdp_arp.bpf.c; structs in bpf/juneau_maps.h).
import { ipv4ToBytes, ipv4FromBytes, macToBytes, macFromBytes } from '../addr';
import {
  MAP_TYPES,
  STATS_VALUE,
  alignUp,
  cStruct,
  fieldOffset as f,
  perCpuValueSize,
  type StructLayout,
} from './common';

export const MAP_NAMES = {
  arpTable: 'external_arp_table',
  guard: 'juneau_guard',
  config: 'juneau_config',
  stats: 'juneau_stats',
  filter: 'juneau_arp_filter',
  slots: 'juneau_arp_slots',
  counters: 'juneau_arp_counters',
  classes: 'juneau_arp_class',
} as const;

/** external_arp_table's type and flags: per-CPU values (no shared-line atomics), not preallocated. */
export const ARP_TABLE_TYPE = MAP_TYPES.BPF_MAP_TYPE_PERCPU_HASH;
export const BPF_F_NO_PREALLOC = 1 << 0;

/** juneau_config's type: an array of slots, read by the program without a call. */
export const CONFIG_TYPE = MAP_TYPES.BPF_MAP_TYPE_ARRAY;

export const PROGRAM_NAME = 'xdp_arp';

export const LIMITS = {
  JUNEAU_ARP_TABLE_MAX: 65536,
  JUNEAU_GUARD_MAX: 4096,
  JUNEAU_CONFIG_MAX: 64,
  JUNEAU_CONFIG_PROBES: 4,
  JUNEAU_ARP_FILTER_BITS: 65536,
  JUNEAU_ARP_SLOTS: 16384,
  JUNEAU_ARP_PROBES: 8,
} as const;

export const GUARD_ACTION = { JUNEAU_GUARD_DROP: 1, JUNEAU_GUARD_ALLOW: 2 } as const;

export const CONFIG_FLAGS = { JUNEAU_CFG_GUARD_OFF: 1 << 0, JUNEAU_CFG_CONFLICT_OFF: 1 << 1 } as const;

/** enum juneau_expiry_class (SEC-11): an address without a juneau_arp_class entry is moveable. */
export const EXPIRY_CLASSES = { JUNEAU_EXPIRY_MOVEABLE: 0, JUNEAU_EXPIRY_HELD: 1 } as const;

/** How an answered address outlives its agent's heartbeat: `moveable` expires with it (FO-2),
 * `held` (an ElasticIP's, never moved by FO-3) is answered until the interface is orphaned. */
export type ExpiryClass = 'moveable' | 'held';

/** enum juneau_reason: slot numbers of juneau_stats. */
export const REASONS = {
  JUNEAU_PASS_NOT_ARP: 0,
  JUNEAU_PASS_TRUNCATED: 1,
  JUNEAU_PASS_NOT_IPV4_ARP: 2,
  JUNEAU_PASS_NO_CONFIG: 3,
  JUNEAU_PASS_NOT_REQUEST: 4,
  JUNEAU_PASS_NOT_FOR_US: 5,
  JUNEAU_PASS_BAD_SENDER: 6,
  JUNEAU_PASS_UNMAPPED: 7,
  JUNEAU_PASS_GRATUITOUS: 8,
  JUNEAU_DROP_GUARDED: 9,
  JUNEAU_TX_REPLY: 10,
  JUNEAU_TX_PROBE_REPLY: 11,
  JUNEAU_EVENT_CONFLICT: 12,
  JUNEAU_PASS_VLAN_TOO_DEEP: 13,
  JUNEAU_PASS_VLAN_OURS: 14,
  JUNEAU_DROP_GUARDED_VLAN: 15,
  JUNEAU_PASS_EXPIRED: 16,
  JUNEAU_DROP_EXPIRED: 17,
  JUNEAU_PASS_ORPHANED: 18,
  JUNEAU_EVENT_HELD_ANSWERED: 19,
  JUNEAU_REASON_MAX: 20,
} as const;

export type ReasonName = Exclude<keyof typeof REASONS, 'JUNEAU_REASON_MAX'>;

export const ARP_KEY = cStruct('juneau_arp_key', [['addr', 4]]);

export const ARP_VALUE = cStruct('juneau_arp_value', [
  ['requests', 8],
  ['replies', 8],
  ['conflicts', 8],
  ['last_conflict_ns', 8],
  ['last_conflict_mac', 6],
  ['pad', 2],
]);

export const GUARD_KEY = cStruct('juneau_guard_key', [
  ['prefixlen', 4],
  ['addr', 4],
]);

export const GUARD_VALUE = cStruct('juneau_guard_value', [
  ['action', 4],
  ['pad', 4],
  ['hits', 8],
]);

export const CONFIG_VALUE = cStruct('juneau_config_value', [
  ['mac', 6],
  ['orphan_expiries', 2],
  ['flags', 4],
  ['ifindex', 4],
  ['heartbeat_ns', 8],
  ['expiry_ns', 8],
]);

export const ARP_SLOT = cStruct('juneau_arp_slot', [['addr', 4]]);

export const ARP_CLASS = cStruct('juneau_arp_class', [['expiry_class', 4]]);

export const ARP_FILTER = cStruct('juneau_arp_filter', [['bits', LIMITS.JUNEAU_ARP_FILTER_BITS / 8]]);

export const STRUCTS: readonly StructLayout[] = [
  ARP_KEY,
  ARP_VALUE,
  GUARD_KEY,
  GUARD_VALUE,
  CONFIG_VALUE,
  STATS_VALUE,
  ARP_FILTER,
  ARP_SLOT,
  ARP_CLASS,
];

// ---- external_arp_table ------------------------------------------------------------------

export function encodeArpKey(address: string): Buffer {
  const key = Buffer.alloc(ARP_KEY.size);
  ipv4ToBytes(address).copy(key, f(ARP_KEY, 'addr'));
  return key;
}

export function decodeArpKey(key: Buffer): string {
  return ipv4FromBytes(key.subarray(f(ARP_KEY, 'addr'), f(ARP_KEY, 'addr') + 4));
}

export interface ArpEntry {
  readonly requests: bigint;
  readonly replies: bigint;
  readonly conflicts: bigint;
  /** bpf_ktime_get_ns() (CLOCK_MONOTONIC) of the last conflict; 0n when none. */
  readonly lastConflictNs: bigint;
  /** The last conflicting sender's MAC; undefined when no conflict was seen. */
  readonly lastConflictMac: string | undefined;
}

/** A fresh entry: all counters zero (the agent inserts it with BPF_NOEXIST to keep counters). */
export function encodeArpValue(entry?: Partial<ArpEntry>): Buffer {
  const value = Buffer.alloc(ARP_VALUE.size);
  value.writeBigUInt64LE(entry?.requests ?? 0n, f(ARP_VALUE, 'requests'));
  value.writeBigUInt64LE(entry?.replies ?? 0n, f(ARP_VALUE, 'replies'));
  value.writeBigUInt64LE(entry?.conflicts ?? 0n, f(ARP_VALUE, 'conflicts'));
  value.writeBigUInt64LE(entry?.lastConflictNs ?? 0n, f(ARP_VALUE, 'last_conflict_ns'));
  if (entry?.lastConflictMac) macToBytes(entry.lastConflictMac).copy(value, f(ARP_VALUE, 'last_conflict_mac'));
  return value;
}

export function decodeArpValue(value: Buffer): ArpEntry {
  const conflicts = value.readBigUInt64LE(f(ARP_VALUE, 'conflicts'));
  const macAt = f(ARP_VALUE, 'last_conflict_mac');
  return {
    requests: value.readBigUInt64LE(f(ARP_VALUE, 'requests')),
    replies: value.readBigUInt64LE(f(ARP_VALUE, 'replies')),
    conflicts,
    lastConflictNs: value.readBigUInt64LE(f(ARP_VALUE, 'last_conflict_ns')),
    lastConflictMac: conflicts > 0n ? macFromBytes(value.subarray(macAt, macAt + 6)) : undefined,
  };
}

/**
 * Sums a per-CPU external_arp_table value (one 40-byte slot per possible CPU): the counters add
 * up; the last conflict is the one with the latest timestamp, with that CPU's MAC.
 */
export function sumArpValues(value: Buffer, cpus: number): ArpEntry {
  const stride = alignUp(ARP_VALUE.size, 8);
  if (value.length < stride * cpus)
    throw new Error(`per-CPU arp value is ${value.length} bytes, ${cpus} CPUs need ${stride * cpus}`);
  let requests = 0n,
    replies = 0n,
    conflicts = 0n,
    latest: ArpEntry | undefined;
  for (let cpu = 0; cpu < cpus; cpu++) {
    const slot = decodeArpValue(value.subarray(cpu * stride, cpu * stride + ARP_VALUE.size));
    requests += slot.requests;
    replies += slot.replies;
    conflicts += slot.conflicts;
    if (slot.conflicts > 0n && (!latest || slot.lastConflictNs > latest.lastConflictNs)) latest = slot;
  }
  return {
    requests,
    replies,
    conflicts,
    lastConflictNs: latest?.lastConflictNs ?? 0n,
    lastConflictMac: latest?.lastConflictMac,
  };
}

/** A per-CPU value holding `entry` in CPU 0's slot and zeros elsewhere: its sums are `entry`. */
export function encodeArpValues(cpus: number, entry?: Partial<ArpEntry>): Buffer {
  const value = Buffer.alloc(perCpuValueSize(ARP_VALUE.size, cpus));
  encodeArpValue(entry).copy(value, 0);
  return value;
}

// ---- juneau_arp_class --------------------------------------------------------------------

export function encodeArpClass(expiryClass: ExpiryClass): Buffer {
  const value = Buffer.alloc(ARP_CLASS.size);
  const code = expiryClass === 'held' ? EXPIRY_CLASSES.JUNEAU_EXPIRY_HELD : EXPIRY_CLASSES.JUNEAU_EXPIRY_MOVEABLE;
  value.writeUInt32LE(code, f(ARP_CLASS, 'expiry_class'));
  return value;
}

/** An unknown code reads as moveable: the program answers past the expiry only JUNEAU_EXPIRY_HELD. */
export function decodeArpClass(value: Buffer): ExpiryClass {
  return value.readUInt32LE(f(ARP_CLASS, 'expiry_class')) === EXPIRY_CLASSES.JUNEAU_EXPIRY_HELD ? 'held' : 'moveable';
}

// ---- juneau_arp_slots --------------------------------------------------------------------

/** The `probe`-th slot of an address: juneau_arp_slot() in bpf/juneau_slots.h. */
export function arpSlot(address: string, probe: number): number {
  const hash = Math.imul(encodeArpKey(address).readUInt32LE(0), 0x9e3779b1) >>> 18;
  return (hash + probe) & (LIMITS.JUNEAU_ARP_SLOTS - 1);
}

/** A juneau_arp_slots value: the address (network order), or undefined for 0.0.0.0 (free). */
export function decodeArpSlot(value: Buffer): string | undefined {
  return value.readUInt32LE(f(ARP_SLOT, 'addr')) === 0 ? undefined : decodeArpKey(value);
}

// ---- juneau_arp_filter -------------------------------------------------------------------

/** The filter bit of an address: juneau_arp_filter_bit() in bpf/juneau_slots.h (the key's four
 * bytes read as a little-endian word, times 0x9e3779b1 mod 2^32, top 16 bits). */
export function arpFilterBit(address: string): number {
  return (Math.imul(encodeArpKey(address).readUInt32LE(0), 0x9e3779b1) >>> 16) & 0xffff;
}

/** juneau_arp_filter[0] with the bit of every address set. */
export function encodeArpFilter(addresses: Iterable<string>): Buffer {
  const value = Buffer.alloc(ARP_FILTER.size);
  for (const address of addresses) {
    const bit = arpFilterBit(address);
    value[bit >> 3] |= 1 << (bit & 7);
  }
  return value;
}

/** Whether the filter may hold `address` (its bit is set). */
export function arpFilterHas(filter: Buffer, address: string): boolean {
  const bit = arpFilterBit(address);
  return (filter[bit >> 3] & (1 << (bit & 7))) !== 0;
}

// ---- juneau_guard ------------------------------------------------------------------------

export interface Prefix {
  /** Network address, host bits zero. */
  readonly address: string;
  readonly prefixLength: number;
}

export function encodeGuardKey(prefix: Prefix): Buffer {
  const key = Buffer.alloc(GUARD_KEY.size);
  key.writeUInt32LE(prefix.prefixLength, f(GUARD_KEY, 'prefixlen'));
  ipv4ToBytes(prefix.address).copy(key, f(GUARD_KEY, 'addr'));
  return key;
}

export function decodeGuardKey(key: Buffer): Prefix {
  const at = f(GUARD_KEY, 'addr');
  return {
    prefixLength: key.readUInt32LE(f(GUARD_KEY, 'prefixlen')),
    address: ipv4FromBytes(key.subarray(at, at + 4)),
  };
}

export type GuardAction = 'drop' | 'allow';

export interface GuardEntry {
  readonly action: GuardAction;
  readonly hits: bigint;
}

export function encodeGuardValue(action: GuardAction): Buffer {
  const value = Buffer.alloc(GUARD_VALUE.size);
  const code = action === 'drop' ? GUARD_ACTION.JUNEAU_GUARD_DROP : GUARD_ACTION.JUNEAU_GUARD_ALLOW;
  value.writeUInt32LE(code, f(GUARD_VALUE, 'action'));
  return value;
}

export function decodeGuardValue(value: Buffer): GuardEntry {
  const code = value.readUInt32LE(f(GUARD_VALUE, 'action'));
  if (code !== GUARD_ACTION.JUNEAU_GUARD_DROP && code !== GUARD_ACTION.JUNEAU_GUARD_ALLOW) {
    throw new Error(`juneau_guard value has unknown action ${code}`);
  }
  return {
    action: code === GUARD_ACTION.JUNEAU_GUARD_DROP ? 'drop' : 'allow',
    hits: value.readBigUInt64LE(f(GUARD_VALUE, 'hits')),
  };
}

// ---- juneau_config -----------------------------------------------------------------------

/** The juneau_config slot of `ifindex`'s `probe`-th place: juneau_config_slot() in the header. */
export function configSlot(ifindex: number, probe: number): number {
  return (ifindex + probe) & (LIMITS.JUNEAU_CONFIG_MAX - 1);
}

export interface InterfaceConfig {
  /** The ingress interface's MAC, e.g. `02:00:00:00:00:01`: the sender of every reply. */
  readonly mac: string;
  /** Drop requests for guarded addresses we do not answer for. @default true */
  readonly guard: boolean;
  /** Count RFC 5227 conflicts. @default true */
  readonly conflictDetection: boolean;
  /** FO-2: CLOCK_MONOTONIC ns (bpf_ktime_get_ns) of the agent's last heartbeat. @default 0n */
  readonly heartbeatNs?: bigint;
  /** FO-2: answers stop this long after the heartbeat; 0n never. @default 0n */
  readonly expiryNs?: bigint;
  /** SEC-16: the interface is orphaned (nothing answered, nothing guarded) once the heartbeat is
   * older than this many expiries; 0 never. @default 0 */
  readonly orphanExpiries?: number;
}

/** The most expiries juneau_config_value.orphan_expiries holds (a __u16). */
export const MAX_ORPHAN_EXPIRIES = 0xffff;

/** SEC-16: `orphanAfterMs` in whole expiries, rounded up; 0 when either is 0 (never). */
export function orphanExpiries(orphanAfterMs: number, answerExpiryMs: number): number {
  if (orphanAfterMs <= 0 || answerExpiryMs <= 0) return 0;
  const expiries = Math.ceil(orphanAfterMs / answerExpiryMs);
  if (expiries > MAX_ORPHAN_EXPIRIES)
    throw new Error(
      `--orphan-after (${orphanAfterMs}ms) is ${expiries} times --answer-expiry (${answerExpiryMs}ms); at most ${MAX_ORPHAN_EXPIRIES} fit: raise --answer-expiry or lower --orphan-after`,
    );
  return expiries;
}

/** A juneau_config slot's value; `ifindex` 0 marks the slot free (the first of the two writes
 * that place an entry, see bpf/juneau_slots.h). */
export function encodeConfigValue(config: InterfaceConfig, ifindex = 0): Buffer {
  const value = Buffer.alloc(CONFIG_VALUE.size);
  value.writeUInt32LE(ifindex, f(CONFIG_VALUE, 'ifindex'));
  macToBytes(config.mac).copy(value, f(CONFIG_VALUE, 'mac'));
  const flags =
    (config.guard ? 0 : CONFIG_FLAGS.JUNEAU_CFG_GUARD_OFF) |
    (config.conflictDetection ? 0 : CONFIG_FLAGS.JUNEAU_CFG_CONFLICT_OFF);
  value.writeUInt32LE(flags, f(CONFIG_VALUE, 'flags'));
  value.writeBigUInt64LE(config.heartbeatNs ?? 0n, f(CONFIG_VALUE, 'heartbeat_ns'));
  value.writeBigUInt64LE(config.expiryNs ?? 0n, f(CONFIG_VALUE, 'expiry_ns'));
  value.writeUInt16LE(config.orphanExpiries ?? 0, f(CONFIG_VALUE, 'orphan_expiries'));
  return value;
}

/** The interface a juneau_config slot belongs to; 0: free. */
export function decodeConfigIfindex(value: Buffer): number {
  return value.readUInt32LE(f(CONFIG_VALUE, 'ifindex'));
}

export function decodeConfigValue(value: Buffer): InterfaceConfig {
  const at = f(CONFIG_VALUE, 'mac');
  const flags = value.readUInt32LE(f(CONFIG_VALUE, 'flags'));
  return {
    mac: macFromBytes(value.subarray(at, at + 6)),
    guard: (flags & CONFIG_FLAGS.JUNEAU_CFG_GUARD_OFF) === 0,
    conflictDetection: (flags & CONFIG_FLAGS.JUNEAU_CFG_CONFLICT_OFF) === 0,
    heartbeatNs: value.readBigUInt64LE(f(CONFIG_VALUE, 'heartbeat_ns')),
    expiryNs: value.readBigUInt64LE(f(CONFIG_VALUE, 'expiry_ns')),
    orphanExpiries: value.readUInt16LE(f(CONFIG_VALUE, 'orphan_expiries')),
  };
}
