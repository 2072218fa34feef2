/**
 * A bitset over `[0, size)` for sizes up to 2^32 that allocates memory only where bits are set.
 * Bits live in chunks of 65,536 (8 KiB each), created on first use; a per-chunk count lets
 * `firstClear` skip full chunks without scanning them. A /16 pool costs at most one chunk, a /8
 * at most 256, and an empty /0 costs nothing. (A plain array of addresses would not fit: AP-2
 * allows pools of any prefix length.)
 */

const CHUNK_BITS = 16;
const CHUNK_SIZE = 1 << CHUNK_BITS; // 65,536 bits
const WORDS_PER_CHUNK = CHUNK_SIZE / 32;
const FULL_WORD = 0xffffffff;

interface Chunk {
  readonly words: Uint32Array;
  count: number;
}

export class SparseBitset {
  private readonly chunks = new Map<number, Chunk>();
  private total = 0;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 0 || size > 2 ** 32)
      throw new Error(`bitset size ${size} must be an integer in 0..2^32`);
  }

  /** How many bits are set. */
  get count(): number {
    return this.total;
  }

  has(index: number): boolean {
    if (!this.inRange(index)) return false;
    const chunk = this.chunks.get(Math.floor(index / CHUNK_SIZE));
    if (!chunk) return false;
    const bit = index % CHUNK_SIZE;
    return (chunk.words[bit >>> 5] & (1 << (bit & 31))) !== 0;
  }

  /** Sets the bit; returns false when it was already set or is out of range. */
  set(index: number): boolean {
    if (!this.inRange(index)) return false;
    const key = Math.floor(index / CHUNK_SIZE);
    let chunk = this.chunks.get(key);
    if (!chunk) {
      chunk = { words: new Uint32Array(WORDS_PER_CHUNK), count: 0 };
      this.chunks.set(key, chunk);
    }
    const bit = index % CHUNK_SIZE;
    const mask = 1 << (bit & 31);
    if ((chunk.words[bit >>> 5] & mask) !== 0) return false;
    chunk.words[bit >>> 5] |= mask;
    chunk.count++;
    this.total++;
    return true;
  }

  /** Clears the bit; returns false when it was not set. Empty chunks are freed. */
  clear(index: number): boolean {
    if (!this.has(index)) return false;
    const key = Math.floor(index / CHUNK_SIZE);
    const chunk = this.chunks.get(key)!;
    const bit = index % CHUNK_SIZE;
    chunk.words[bit >>> 5] &= ~(1 << (bit & 31));
    chunk.count--;
    this.total--;
    if (chunk.count === 0) this.chunks.delete(key);
    return true;
  }

  /** The lowest clear bit at or after `from`, or undefined when every bit from there is set. */
  firstClear(from = 0): number | undefined {
    if (from < 0) from = 0;
    if (from >= this.size) return undefined;
    const lastChunk = Math.floor((this.size - 1) / CHUNK_SIZE);
    for (let key = Math.floor(from / CHUNK_SIZE); key <= lastChunk; key++) {
      const base = key * CHUNK_SIZE;
      const start = Math.max(from, base) - base;
      const chunk = this.chunks.get(key);
      const found = chunk ? (chunk.count === CHUNK_SIZE ? undefined : firstClearInChunk(chunk.words, start)) : start;
      if (found !== undefined) return base + found < this.size ? base + found : undefined;
    }
    return undefined;
  }

  private inRange(index: number): boolean {
    return Number.isInteger(index) && index >= 0 && index < this.size;
  }
}

function firstClearInChunk(words: Uint32Array, start: number): number | undefined {
  let word = start >>> 5;
  // Bits below `start` in its first word count as set, so they are not returned.
  let value = (words[word] | ((1 << (start & 31)) - 1)) >>> 0;
  for (;;) {
    if (value !== FULL_WORD) {
      const free = ~value & (value + 1); // lowest clear bit of value, as a one-bit mask
      return word * 32 + (31 - Math.clz32(free));
    }
    if (++word >= WORDS_PER_CHUNK) return undefined;
    value = words[word];
  }
}
