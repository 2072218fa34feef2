/**
 * IPv4 addresses as unsigned 32-bit integers. Strict dotted-quad only: no leading zeros (which
 * some parsers read as octal), no shorthand forms, so one address has exactly one spelling.
 */
const OCTET = /^(0|[1-9][0-9]{0,2})$/;

export function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
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
