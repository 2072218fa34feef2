// A BPF map reached by file descriptor: typed byte-level operations over the libbpf binding.
// Knows nothing of what the bytes mean; layout/ does.
import * as libbpf from './libbpf';
import * as layout from './layout';

/** What the kernel reports of a map (bpf_map_info); the name is at most 15 characters (external_arp_table shows as external_arp_ta). */
export type MapInfo = libbpf.BpfMapInfo;

export class BpfMap {
  /** Opens a map pinned on bpffs; the handle owns its own fd. */
  static openPinned(path: string): BpfMap {
    const fd = libbpf.objGet(path);
    try {
      return new BpfMap(fd, path, libbpf.mapInfo(fd));
    } catch (err) {
      libbpf.closeFd(fd);
      throw err;
    }
  }

  private constructor(
    private fd: number,
    /** Where it was opened from, for messages. */
    readonly path: string,
    readonly info: MapInfo,
  ) {}

  get keySize(): number {
    return this.info.keySize;
  }

  get valueSize(): number {
    return this.info.valueSize;
  }

  update(key: Buffer, value: Buffer, flags: number = libbpf.BPF_UPDATE.ANY): void {
    libbpf.mapUpdate(this.liveFd(), this.sized(key, this.keySize, 'key'), value, flags);
  }

  /** Inserts only when absent; returns false (and changes nothing) when the key exists. */
  insert(key: Buffer, value: Buffer): boolean {
    try {
      this.update(key, value, libbpf.BPF_UPDATE.NOEXIST);
      return true;
    } catch (err) {
      if (err instanceof libbpf.LibbpfError && err.code === 'EEXIST') return false;
      throw err;
    }
  }

  /** The value, or undefined when absent. `valueBytes` overrides the size (per-CPU maps). */
  lookup(key: Buffer, valueBytes: number = this.valueSize): Buffer | undefined {
    const value = Buffer.alloc(valueBytes);
    return libbpf.mapLookup(this.liveFd(), this.sized(key, this.keySize, 'key'), value) ? value : undefined;
  }

  delete(key: Buffer): boolean {
    return libbpf.mapDelete(this.liveFd(), this.sized(key, this.keySize, 'key'));
  }

  /** All keys, read before returning so callers may delete while they walk the list. */
  keys(): Buffer[] {
    const keys: Buffer[] = [];
    let previous: Buffer | null = null;
    for (;;) {
      const next = Buffer.alloc(this.keySize);
      if (!libbpf.mapNextKey(this.liveFd(), previous, next)) return keys;
      keys.push(next);
      previous = next;
      if (keys.length > this.info.maxEntries)
        throw new Error(`${this.path}: iteration did not end after ${keys.length} keys`);
    }
  }

  /** Key/value pairs; a key deleted between the walk and its lookup is skipped. */
  entries(valueBytes: number = this.valueSize): Array<[Buffer, Buffer]> {
    const out: Array<[Buffer, Buffer]> = [];
    for (const key of this.keys()) {
      const value = this.lookup(key, valueBytes);
      if (value) out.push([key, value]);
    }
    return out;
  }

  /**
   * Key/value pairs as entries() gives them, read in batches (BPF_MAP_LOOKUP_BATCH): one system
   * call per `batch` entries instead of two per entry, which at 10,000 entries (bench/scale) held
   * the agent's event loop for tens of milliseconds per poll. Falls back to entries() where the
   * kernel cannot batch the map. For hash maps; the cursor is the kernel's bucket index.
   */
  entriesBatched(valueBytes: number = this.valueSize, batch = 1024): Array<[Buffer, Buffer]> {
    const out: Array<[Buffer, Buffer]> = [];
    let cursor: Buffer | null = null;
    let max = Math.max(1, Math.min(batch, this.info.maxEntries));
    for (;;) {
      const keys = Buffer.alloc(max * this.keySize);
      const values = Buffer.alloc(max * valueBytes);
      const next = Buffer.alloc(Math.max(8, this.keySize));
      let read;
      try {
        read = libbpf.mapLookupBatch(this.liveFd(), cursor, next, keys, values, max);
      } catch (err) {
        // ENOSPC: a bucket holds more entries than fit; read it again with room for more.
        if (!(err instanceof libbpf.LibbpfError) || err.code !== 'ENOSPC' || max >= this.info.maxEntries) throw err;
        max = Math.min(max * 2, this.info.maxEntries);
        continue;
      }
      if (!read) return this.entries(valueBytes);
      for (let i = 0; i < read.count; i++)
        out.push([
          keys.subarray(i * this.keySize, (i + 1) * this.keySize),
          values.subarray(i * valueBytes, (i + 1) * valueBytes),
        ]);
      if (read.done) return out;
      cursor = next;
    }
  }

  close(): void {
    libbpf.closeFd(this.fd);
    this.fd = -1;
  }

  private liveFd(): number {
    if (this.fd < 0) throw new Error(`${this.path}: map handle is closed`);
    return this.fd;
  }

  private sized(buf: Buffer, size: number, what: string): Buffer {
    if (buf.length !== size) throw new Error(`${this.path}: ${what} is ${buf.length} bytes, map expects ${size}`);
    return buf;
  }
}

/** A per-CPU stats map (ARP or NAT) read as packets per exit reason, summed over CPUs; `max` (the
 * number of reasons) is no reason and is skipped. */
export function reasonStats<R extends Readonly<Record<string, number>>, M extends keyof R>(
  statsMap: BpfMap,
  reasons: R,
  max: M,
  cpus: number,
): Record<Exclude<keyof R, M>, bigint> {
  const bytes = layout.perCpuValueSize(layout.STATS_VALUE.size, cpus);
  const out = {} as Record<Exclude<keyof R, M>, bigint>;
  for (const [name, slot] of Object.entries(reasons)) {
    if (name === max) continue;
    const value = statsMap.lookup(layout.u32Key(slot), bytes);
    out[name as Exclude<keyof R, M>] = value ? layout.sumPerCpuStats(value, cpus) : 0n;
  }
  return out;
}
