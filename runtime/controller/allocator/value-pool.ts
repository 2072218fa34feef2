/**
 * One pool of integers (an AddressPool's addresses as 32-bit numbers, or an AllocationPool's
 * range) with a bitset of the values taken. Ranges are kept sorted, and a value maps to an
 * offset by binary search, so a pool of any size costs memory only for what is taken.
 */
import type { AddressRange } from '../../../api/validation';
import { SparseBitset } from './sparse-bitset';

export class ValuePool {
  /** Sorted, non-overlapping. */
  readonly ranges: readonly AddressRange[];
  /** `starts[i]` = offset of `ranges[i].first`. */
  private readonly starts: readonly number[];
  private readonly taken: SparseBitset;
  private readonly skipBuggy: boolean;

  /**
   * @param options.avoidBuggyIPs ADDR-2: values ending in .0 or .255 are not part of the pool.
   *   They are skipped by arithmetic on offsets (254 usable values per 256), not by listing them,
   *   so a large pool costs no more.
   */
  constructor(ranges: readonly AddressRange[], options: { readonly avoidBuggyIPs?: boolean } = {}) {
    this.skipBuggy = !!options.avoidBuggyIPs;
    const sorted = [...ranges].sort((a, b) => a.first - b.first);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i].first <= sorted[i - 1].last)
        throw new Error(
          `ranges ${sorted[i - 1].first}-${sorted[i - 1].last} and ${sorted[i].first}-${sorted[i].last} overlap`,
        );
    }
    const kept = sorted.filter((r) => this.countBelow(r.last + 1) > this.countBelow(r.first));
    const starts: number[] = [];
    let size = 0;
    for (const r of kept) {
      starts.push(size);
      size += this.countBelow(r.last + 1) - this.countBelow(r.first);
    }
    this.ranges = kept;
    this.starts = starts;
    this.taken = new SparseBitset(Math.min(size, 2 ** 32));
  }

  /** How many values the pool holds (AP-3 `size`). */
  get size(): number {
    return this.taken.size;
  }

  /** How many values are taken (AP-3 `used`). */
  get used(): number {
    return this.taken.count;
  }

  contains(value: number): boolean {
    return this.offsetOf(value) !== undefined;
  }

  isTaken(value: number): boolean {
    const offset = this.offsetOf(value);
    return offset !== undefined && this.taken.has(offset);
  }

  /** Marks `value` taken; false when it is outside the pool or already taken. */
  take(value: number): boolean {
    const offset = this.offsetOf(value);
    return offset !== undefined && this.taken.set(offset);
  }

  /** Marks `value` free; false when it was not taken. */
  release(value: number): boolean {
    const offset = this.offsetOf(value);
    return offset !== undefined && this.taken.clear(offset);
  }

  /** The lowest free value, or undefined when the pool is full. Deterministic; does not take it. */
  lowestFree(): number | undefined {
    const offset = this.taken.firstClear(0);
    return offset === undefined ? undefined : this.valueAt(offset);
  }

  /** How many pool values (ignoring ranges) lie in [0, n): all of them, or 254 of every 256 when skipping .0/.255. */
  private countBelow(n: number): number {
    if (!this.skipBuggy) return n;
    return Math.floor(n / 256) * 254 + Math.max(0, Math.min(n % 256, 255) - 1);
  }

  /** The inverse of countBelow: the value with `index` pool values below it. */
  private nthValue(index: number): number {
    return this.skipBuggy ? Math.floor(index / 254) * 256 + (index % 254) + 1 : index;
  }

  private offsetOf(value: number): number | undefined {
    if (this.skipBuggy && ((value & 255) === 0 || (value & 255) === 255)) return undefined;
    let lo = 0;
    let hi = this.ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const r = this.ranges[mid];
      if (value < r.first) hi = mid - 1;
      else if (value > r.last) lo = mid + 1;
      else return this.starts[mid] + this.countBelow(value) - this.countBelow(r.first);
    }
    return undefined;
  }

  private valueAt(offset: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return this.nthValue(this.countBelow(this.ranges[lo].first) + (offset - this.starts[lo]));
  }
}
