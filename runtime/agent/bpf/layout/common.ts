// What every layout file shares: struct layouts built from their fields, u32 map keys, and
// per-CPU values (bpf/juneau_maps.h, the header of every program's maps).
//
// Byte order: fields named __be32 in C hold IPv4 addresses in network order; every other integer
// is host order, which is little-endian on every platform the agent ships for (x86_64, arm64).

/** A field of a C struct: byte offset and size. Arrays give the whole array's size. */
export interface FieldLayout {
  readonly offset: number;
  readonly size: number;
}

export interface StructLayout {
  readonly name: string;
  readonly size: number;
  readonly fields: Readonly<Record<string, FieldLayout>>;
}

/** A C struct from its fields in declaration order, `[name, bytes]`: each field starts where the
 * previous one ends, because every struct in bpf/juneau_maps.h names its holes as pad fields (the
 * layout tests check offsets and sizes against the BTF and the header). */
export function cStruct(name: string, fields: ReadonlyArray<readonly [string, number]>): StructLayout {
  let offset = 0;
  const out: Record<string, FieldLayout> = {};
  for (const [field, size] of fields) {
    out[field] = { offset, size };
    offset += size;
  }
  return { name, size: offset, fields: out };
}

/** The byte offset of `field` in `s`. */
export const fieldOffset = (s: StructLayout, field: string): number => s.fields[field].offset;

/** enum bpf_map_type values of the maps whose type the agent checks on a pin (linux/bpf.h). */
export const MAP_TYPES = {
  BPF_MAP_TYPE_HASH: 1,
  BPF_MAP_TYPE_ARRAY: 2,
  BPF_MAP_TYPE_PERCPU_HASH: 5,
  BPF_MAP_TYPE_PERCPU_ARRAY: 6,
  BPF_MAP_TYPE_LRU_PERCPU_HASH: 10,
} as const;

/** Whether a map of `type` holds one value per possible CPU. */
export function isPerCpu(type: number): boolean {
  return (
    type === MAP_TYPES.BPF_MAP_TYPE_PERCPU_HASH ||
    type === MAP_TYPES.BPF_MAP_TYPE_PERCPU_ARRAY ||
    type === MAP_TYPES.BPF_MAP_TYPE_LRU_PERCPU_HASH
  );
}

/** A u32 key: an array index (a stats reason, a slot, entry 0 of a one-entry array). */
export function u32Key(index: number): Buffer {
  const key = Buffer.alloc(4);
  key.writeUInt32LE(index);
  return key;
}

/** The index a u32Key holds. */
export function decodeU32Key(key: Buffer): number {
  return key.readUInt32LE(0);
}

export const STATS_VALUE = cStruct('juneau_stats_value', [['packets', 8]]);

/** A per-CPU value buffer holds one 8-byte-aligned slot per possible CPU; the sum is the count. */
export function sumPerCpuStats(value: Buffer, cpus: number): bigint {
  const stride = alignUp(STATS_VALUE.size, 8);
  let total = 0n;
  for (let cpu = 0; cpu < cpus; cpu++)
    total += value.readBigUInt64LE(cpu * stride + fieldOffset(STATS_VALUE, 'packets'));
  return total;
}

export function perCpuValueSize(valueSize: number, cpus: number): number {
  return alignUp(valueSize, 8) * cpus;
}

export function alignUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}
