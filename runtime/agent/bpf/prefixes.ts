// AddressPool items (AP-2: CIDRs like `10.225.51.0/24` and inclusive ranges like
// `10.225.51.10-10.225.51.20`) -> the minimal set of CIDR prefixes covering exactly the same
// addresses, for the guard LPM trie. Pure; the agent feeds the result to ArpDatapath.setGuard().
import { ipv4FromNumber, ipv4ToNumber } from './addr';
import type { Prefix } from './layout';

/** An inclusive interval of addresses as unsigned 32-bit numbers. */
interface Interval {
  readonly first: number;
  readonly last: number;
}

const TWO_32 = 2 ** 32;

/** Parses one AddressPool item; throws naming the item when it is malformed. */
export function parsePoolItem(item: string): Interval {
  const text = item.trim();
  if (text.includes('/')) return parseCidr(text);
  if (text.includes('-')) return parseRange(text);
  throw new Error(`address pool item '${item}' is neither a CIDR (a.b.c.d/n) nor a range (a.b.c.d-e.f.g.h)`);
}

function parseCidr(text: string): Interval {
  const [address, lengthText, extra] = text.split('/');
  const length = Number(lengthText);
  if (extra !== undefined || !/^\d{1,2}$/.test(lengthText) || length > 32) {
    throw new Error(`address pool item '${text}' has an invalid prefix length '${lengthText}'`);
  }
  const base = ipv4ToNumber(address);
  const size = 2 ** (32 - length);
  if (base % size !== 0)
    throw new Error(
      `address pool item '${text}' has host bits set (network is ${ipv4FromNumber(base - (base % size))}/${length})`,
    );
  return { first: base, last: base + size - 1 };
}

function parseRange(text: string): Interval {
  const parts = text.split('-');
  if (parts.length !== 2) throw new Error(`address pool item '${text}' is not a range a.b.c.d-e.f.g.h`);
  const first = ipv4ToNumber(parts[0].trim());
  const last = ipv4ToNumber(parts[1].trim());
  if (first > last) throw new Error(`address pool item '${text}' ends before it starts`);
  return { first, last };
}

/** Sorts and merges overlapping or adjacent intervals. */
function mergeIntervals(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a.first - b.first);
  const merged: Interval[] = [];
  for (const next of sorted) {
    const last = merged[merged.length - 1];
    if (last && next.first <= last.last + 1)
      merged[merged.length - 1] = { first: last.first, last: Math.max(last.last, next.last) };
    else merged.push(next);
  }
  return merged;
}

/** The fewest aligned blocks covering [first, last]: at each step the largest block that starts at
 * `first`, is aligned to its size, and does not pass `last`. */
function intervalToPrefixes({ first, last }: Interval): Prefix[] {
  const prefixes: Prefix[] = [];
  let start = first;
  while (start <= last) {
    let size = start === 0 ? TWO_32 : largestPowerOfTwoDividing(start);
    while (start + size - 1 > last) size /= 2;
    prefixes.push({ address: ipv4FromNumber(start), prefixLength: 32 - Math.log2(size) });
    start += size;
  }
  return prefixes;
}

function largestPowerOfTwoDividing(n: number): number {
  let size = 1;
  while (n % (size * 2) === 0 && size * 2 <= TWO_32) size *= 2;
  return size;
}

/** Minimal CIDR prefixes covering exactly the union of the items, sorted by address. */
export function poolItemsToPrefixes(items: readonly string[]): Prefix[] {
  return mergeIntervals(items.map(parsePoolItem)).flatMap(intervalToPrefixes);
}

export function formatPrefix(prefix: Prefix): string {
  return `${prefix.address}/${prefix.prefixLength}`;
}

/** Whether `address` lies inside `prefix`. */
export function prefixContains(prefix: Prefix, address: string): boolean {
  const size = 2 ** (32 - prefix.prefixLength);
  const base = ipv4ToNumber(prefix.address);
  const n = ipv4ToNumber(address);
  return n >= base && n < base + size;
}
