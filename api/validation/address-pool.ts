import { AddressRange, formatIPv4, parseIPv4, rangeContains, rangesOverlap } from './ipv4';
import { issue, ValidationIssue } from './issue';

/**
 * `range` is every address the item covers (what overlap checks compare); `usable` is what may be
 * handed out: a CIDR shorter than /31 loses its network and broadcast addresses (ADDR-2), because
 * hosts on that segment treat them as the segment itself, not as a host.
 */
export type ParsedItem =
  { ok: true; range: AddressRange; usable: AddressRange | undefined } | { ok: false; reason: string };

/**
 * ADDR-1: blocks no AddressPool may contain — "this network", loopback, link-local, multicast,
 * reserved (240/4, which holds the limited broadcast 255.255.255.255). An address from these is
 * never reachable as a unicast host address from outside, so a pool holding one is a mistake.
 */
export const REFUSED_BLOCKS: ReadonlyArray<{
  readonly cidr: string;
  readonly what: string;
  readonly range: AddressRange;
}> = [
  ['0.0.0.0/8', '"this network"'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'limited broadcast'],
].map(([cidr, what]) => {
  const [address, prefix] = cidr.split('/');
  const first = parseIPv4(address)!;
  return { cidr, what, range: { first, last: first + 2 ** (32 - Number(prefix)) - 1 } };
});

/** ADDR-1: why an item's range may not be in a pool, or undefined when it may. */
export function refusedBlockOf(range: AddressRange): string | undefined {
  const hit = REFUSED_BLOCKS.find((b) => rangesOverlap(b.range, range));
  return hit && `overlaps ${hit.cidr} (${hit.what}), which an AddressPool may not contain (ADDR-1)`;
}

/**
 * AP-2: one item of `spec.addresses` — a CIDR (`10.225.51.0/24`) or an inclusive range
 * (`10.225.51.10-10.225.51.20`). A CIDR with host bits set is refused rather than silently
 * widened, because the user most likely meant something else.
 */
export function parseAddressItem(item: string): ParsedItem {
  if (typeof item !== 'string' || item.trim() !== item || item === '')
    return { ok: false, reason: 'is not a CIDR or an a-b range of IPv4 addresses' };
  if (item.includes('/')) return parseCidr(item);
  if (item.includes('-')) return parseRange(item);
  return { ok: false, reason: 'is not a CIDR (a.b.c.d/n) or an inclusive range (a.b.c.d-e.f.g.h)' };
}

function parseCidr(item: string): ParsedItem {
  const [addressText, prefixText, ...rest] = item.split('/');
  const address = parseIPv4(addressText);
  if (address === undefined || rest.length)
    return { ok: false, reason: `is not a valid IPv4 CIDR: ${JSON.stringify(addressText)} is not an IPv4 address` };
  if (!/^(0|[1-9][0-9]?)$/.test(prefixText) || Number(prefixText) > 32)
    return { ok: false, reason: 'is not a valid IPv4 CIDR: the prefix length must be 0..32' };
  const hostBits = 32 - Number(prefixText);
  const size = 2 ** hostBits;
  const first = address - (address % size);
  if (first !== address)
    return { ok: false, reason: `has host bits set: write the network address ${formatIPv4(first)}/${prefixText}` };
  const last = first + size - 1;
  // ADDR-2: /31 (RFC 3021) and /32 have no network or broadcast address to skip.
  const usable = hostBits < 2 ? { first, last } : { first: first + 1, last: last - 1 };
  return { ok: true, range: { first, last }, usable };
}

function parseRange(item: string): ParsedItem {
  const parts = item.split('-');
  if (parts.length !== 2) return { ok: false, reason: 'is not an inclusive range a.b.c.d-e.f.g.h' };
  const first = parseIPv4(parts[0]);
  const last = parseIPv4(parts[1]);
  if (first === undefined)
    return { ok: false, reason: `is not a valid range: ${JSON.stringify(parts[0])} is not an IPv4 address` };
  if (last === undefined)
    return { ok: false, reason: `is not a valid range: ${JSON.stringify(parts[1])} is not an IPv4 address` };
  if (first > last) return { ok: false, reason: `is reversed: ${parts[0]} comes after ${parts[1]}` };
  return { ok: true, range: { first, last }, usable: { first, last } };
}

/** An AddressPool reduced to what validation and allocation need. */
export interface PoolAddresses {
  readonly name: string;
  readonly addresses: readonly string[];
  /** ADDR-2: `spec.avoidBuggyIPs` — no address ending in .0 or .255 is handed out. */
  readonly avoidBuggyIPs?: boolean;
}

export interface ParsedPool {
  readonly name: string;
  /** The ranges in the order of `spec.addresses`, for items that parsed and are allowed (ADDR-1). */
  readonly ranges: readonly AddressRange[];
  /** What may be handed out (ADDR-2): `ranges` without the network/broadcast address of CIDRs shorter than /31. */
  readonly usable: readonly AddressRange[];
  /** ADDR-2: skip every address ending in .0 or .255 (applied by the allocator, and by `refusalOf`). */
  readonly avoidBuggyIPs: boolean;
  readonly issues: readonly ValidationIssue[];
}

/** AP-2 within one pool: non-empty, every item well-formed, no two items overlapping. */
export function parsePoolAddresses(pool: PoolAddresses, field = 'spec.addresses'): ParsedPool {
  const issues: ValidationIssue[] = [];
  const parsed: Array<{ index: number; item: string; range: AddressRange }> = [];
  if (!Array.isArray(pool.addresses) || pool.addresses.length === 0) {
    issues.push(issue(field, undefined, `of AddressPool ${pool.name} must list at least one CIDR or range (AP-2)`));
    return { name: pool.name, ranges: [], usable: [], avoidBuggyIPs: !!pool.avoidBuggyIPs, issues };
  }
  const usable: AddressRange[] = [];
  pool.addresses.forEach((item, index) => {
    const result = parseAddressItem(item);
    if (!result.ok) return issues.push(issue(`${field}[${index}]`, item, `${result.reason} (AP-2)`));
    const refused = refusedBlockOf(result.range);
    if (refused) return issues.push(issue(`${field}[${index}]`, item, refused));
    const clash = parsed.find((p) => rangesOverlap(p.range, result.range));
    if (clash)
      return issues.push(
        issue(`${field}[${index}]`, item, `overlaps ${field}[${clash.index}] ${JSON.stringify(clash.item)} (AP-2)`),
      );
    parsed.push({ index, item, range: result.range });
    if (result.usable) usable.push(result.usable);
  });
  return { name: pool.name, ranges: parsed.map((p) => p.range), usable, avoidBuggyIPs: !!pool.avoidBuggyIPs, issues };
}

/** ADDR-2: whether an address ends in .0 or .255 (what `spec.avoidBuggyIPs` skips). */
export const isBuggyIP = (address: number): boolean => (address & 255) === 0 || (address & 255) === 255;

/**
 * ADDR-2: why an address inside the pool's items is never handed out, or undefined when it may
 * be. A requested address (EIP-3, SLB-2) gets this as its error, so the user learns the rule.
 */
export function refusalOf(pool: ParsedPool, address: number): string | undefined {
  if (!rangesContain(pool.ranges, address)) return undefined;
  if (!rangesContain(pool.usable, address)) {
    const item = pool.ranges.find((r) => rangeContains(r, address))!;
    const which = address === item.first ? 'network' : 'broadcast';
    return `is the ${which} address of ${formatIPv4(item.first)}/${32 - Math.log2(item.last - item.first + 1)} in AddressPool ${pool.name}, which is never handed out (ADDR-2)`;
  }
  if (pool.avoidBuggyIPs && isBuggyIP(address))
    return `ends in .${address & 255}, which AddressPool ${pool.name} skips (spec.avoidBuggyIPs, ADDR-2)`;
  return undefined;
}

/**
 * AP-2 across pools: an item of `pool` must not overlap an item of any other pool, or two pools
 * could hand out one address. The message names the other pool and its item.
 */
export function findOverlapsWithOtherPools(
  pool: PoolAddresses,
  others: readonly PoolAddresses[],
  field = 'spec.addresses',
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const mine = pool.addresses.map((item) => parseAddressItem(item));
  for (const other of others) {
    if (other.name === pool.name) continue;
    other.addresses.forEach((otherItem) => {
      const theirs = parseAddressItem(otherItem);
      if (!theirs.ok) return;
      mine.forEach((m, index) => {
        if (m.ok && rangesOverlap(m.range, theirs.range)) {
          issues.push(
            issue(
              `${field}[${index}]`,
              pool.addresses[index],
              `overlaps ${JSON.stringify(otherItem)} of AddressPool ${other.name} (AP-2)`,
            ),
          );
        }
      });
    });
  }
  return issues;
}

/** Whether an address lies in any of the ranges. */
export const rangesContain = (ranges: readonly AddressRange[], address: number): boolean =>
  ranges.some((r) => rangeContains(r, address));
