import { AddressRange, formatIPv4, parseIPv4, rangeContains, rangesOverlap } from './ipv4';
import { issue, ValidationIssue } from './issue';

export type ParsedItem = { ok: true; range: AddressRange } | { ok: false; reason: string };

/**
 * AP-2: one item of `spec.addresses` — a CIDR (`10.225.51.0/24`) or an inclusive range
 * (`10.225.51.10-10.225.51.20`). A CIDR with host bits set is refused rather than silently
 * widened, because the user most likely meant something else.
 */
export function parseAddressItem(item: string): ParsedItem {
  if (typeof item !== 'string' || item.trim() !== item || item === '') return { ok: false, reason: 'is not a CIDR or an a-b range of IPv4 addresses' };
  if (item.includes('/')) return parseCidr(item);
  if (item.includes('-')) return parseRange(item);
  return { ok: false, reason: 'is not a CIDR (a.b.c.d/n) or an inclusive range (a.b.c.d-e.f.g.h)' };
}

function parseCidr(item: string): ParsedItem {
  const [addressText, prefixText, ...rest] = item.split('/');
  const address = parseIPv4(addressText);
  if (address === undefined || rest.length) return { ok: false, reason: `is not a valid IPv4 CIDR: ${JSON.stringify(addressText)} is not an IPv4 address` };
  if (!/^(0|[1-9][0-9]?)$/.test(prefixText) || Number(prefixText) > 32) return { ok: false, reason: 'is not a valid IPv4 CIDR: the prefix length must be 0..32' };
  const hostBits = 32 - Number(prefixText);
  const size = 2 ** hostBits;
  const first = address - (address % size);
  if (first !== address) return { ok: false, reason: `has host bits set: write the network address ${formatIPv4(first)}/${prefixText}` };
  return { ok: true, range: { first, last: first + size - 1 } };
}

function parseRange(item: string): ParsedItem {
  const parts = item.split('-');
  if (parts.length !== 2) return { ok: false, reason: 'is not an inclusive range a.b.c.d-e.f.g.h' };
  const first = parseIPv4(parts[0]);
  const last = parseIPv4(parts[1]);
  if (first === undefined) return { ok: false, reason: `is not a valid range: ${JSON.stringify(parts[0])} is not an IPv4 address` };
  if (last === undefined) return { ok: false, reason: `is not a valid range: ${JSON.stringify(parts[1])} is not an IPv4 address` };
  if (first > last) return { ok: false, reason: `is reversed: ${parts[0]} comes after ${parts[1]}` };
  return { ok: true, range: { first, last } };
}

/** An AddressPool reduced to what validation and allocation need. */
export interface PoolAddresses {
  readonly name: string;
  readonly addresses: readonly string[];
}

export interface ParsedPool {
  readonly name: string;
  /** The ranges in the order of `spec.addresses`, for items that parsed. */
  readonly ranges: readonly AddressRange[];
  readonly issues: readonly ValidationIssue[];
}

/** AP-2 within one pool: non-empty, every item well-formed, no two items overlapping. */
export function parsePoolAddresses(pool: PoolAddresses, field = 'spec.addresses'): ParsedPool {
  const issues: ValidationIssue[] = [];
  const parsed: Array<{ index: number; item: string; range: AddressRange }> = [];
  if (!Array.isArray(pool.addresses) || pool.addresses.length === 0) {
    issues.push(issue(field, undefined, `of AddressPool ${pool.name} must list at least one CIDR or range (AP-2)`));
    return { name: pool.name, ranges: [], issues };
  }
  pool.addresses.forEach((item, index) => {
    const result = parseAddressItem(item);
    if (!result.ok) return issues.push(issue(`${field}[${index}]`, item, `${result.reason} (AP-2)`));
    const clash = parsed.find((p) => rangesOverlap(p.range, result.range));
    if (clash) return issues.push(issue(`${field}[${index}]`, item, `overlaps ${field}[${clash.index}] ${JSON.stringify(clash.item)} (AP-2)`));
    parsed.push({ index, item, range: result.range });
  });
  return { name: pool.name, ranges: parsed.map((p) => p.range), issues };
}

/**
 * AP-2 across pools: an item of `pool` must not overlap an item of any other pool, or two pools
 * could hand out one address. The message names the other pool and its item.
 */
export function findOverlapsWithOtherPools(pool: PoolAddresses, others: readonly PoolAddresses[], field = 'spec.addresses'): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const mine = pool.addresses.map((item) => parseAddressItem(item));
  for (const other of others) {
    if (other.name === pool.name) continue;
    other.addresses.forEach((otherItem) => {
      const theirs = parseAddressItem(otherItem);
      if (!theirs.ok) return;
      mine.forEach((m, index) => {
        if (m.ok && rangesOverlap(m.range, theirs.range)) {
          issues.push(issue(`${field}[${index}]`, pool.addresses[index], `overlaps ${JSON.stringify(otherItem)} of AddressPool ${other.name} (AP-2)`));
        }
      });
    });
  }
  return issues;
}

/** Whether an address lies in any of the ranges. */
export const rangesContain = (ranges: readonly AddressRange[], address: number): boolean => ranges.some((r) => rangeContains(r, address));
