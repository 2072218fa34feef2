/**
 * IPv4 addresses as unsigned 32-bit integers. Strict dotted-quad only: no leading zeros (which
 * some parsers read as octal), no shorthand forms, so one address has exactly one spelling.
 */
export function parseIPv4(text: string): number | undefined {
  // One pass over the characters (a hot path: every address of a 10,000-address pass goes through it).
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || ++dots > 3) return undefined;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      // No leading zero (0 alone is an octet), at most three digits, at most 255.
      if (digits === 1 && octet === 0) return undefined;
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return undefined;
    } else return undefined;
  }
  if (dots !== 3 || digits === 0) return undefined;
  return value * 256 + octet;
}

export function formatIPv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

export const isIPv4 = (text: string): boolean => parseIPv4(text) !== undefined;

/** An inclusive range of addresses, as integers. */
export interface AddressRange {
  readonly first: number;
  readonly last: number;
}

export const rangeSize = (r: AddressRange): number => r.last - r.first + 1;
export const rangesOverlap = (a: AddressRange, b: AddressRange): boolean => a.first <= b.last && b.first <= a.last;
export const rangeContains = (r: AddressRange, address: number): boolean => address >= r.first && address <= r.last;
export const formatRange = (r: AddressRange): string =>
  r.first === r.last ? formatIPv4(r.first) : `${formatIPv4(r.first)}-${formatIPv4(r.last)}`;
