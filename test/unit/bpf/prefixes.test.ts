// AddressPool items (AP-2: CIDRs and inclusive ranges) -> the minimal CIDR set for the guard trie.
import { formatPrefix, parsePoolItem, poolItemsToPrefixes, prefixContains } from '../../../runtime/agent/bpf/prefixes';
import { ipv4FromNumber } from '../../../runtime/agent/bpf/addr';
import type { Prefix } from '../../../runtime/agent/bpf/layout';

const cidrs = (items: string[]) => poolItemsToPrefixes(items).map(formatPrefix);

describe('poolItemsToPrefixes', () => {
  test.each([
    [['10.225.51.0/24'], ['10.225.51.0/24']],
    [['10.225.51.10-10.225.51.20'], ['10.225.51.10/31', '10.225.51.12/30', '10.225.51.16/30', '10.225.51.20/32']],
    [['10.0.0.5-10.0.0.5'], ['10.0.0.5/32']],
    [['10.0.0.0-10.0.0.255'], ['10.0.0.0/24']],
    [['0.0.0.0-255.255.255.255'], ['0.0.0.0/0']],
    [['0.0.0.0/0'], ['0.0.0.0/0']],
    [['255.255.255.255/32'], ['255.255.255.255/32']],
    [
      ['10.0.0.1-10.0.0.254'],
      [
        '10.0.0.1/32',
        '10.0.0.2/31',
        '10.0.0.4/30',
        '10.0.0.8/29',
        '10.0.0.16/28',
        '10.0.0.32/27',
        '10.0.0.64/26',
        '10.0.0.128/26',
        '10.0.0.192/27',
        '10.0.0.224/28',
        '10.0.0.240/29',
        '10.0.0.248/30',
        '10.0.0.252/31',
        '10.0.0.254/32',
      ],
    ],
  ])('%j -> %j', (items, expected) => {
    expect(cidrs(items)).toEqual(expected);
  });

  test('adjacent items merge into one prefix', () => {
    expect(cidrs(['10.0.0.128/25', '10.0.0.0/25'])).toEqual(['10.0.0.0/24']);
    expect(cidrs(['10.0.0.0-10.0.0.99', '10.0.0.100-10.0.0.255'])).toEqual(['10.0.0.0/24']);
  });

  test('overlapping items (which AP-2 forbids, but the guard must not mis-handle) give their union', () => {
    expect(cidrs(['10.0.0.0/24', '10.0.0.10-10.0.0.20'])).toEqual(['10.0.0.0/24']);
  });

  test('disjoint items are sorted by address', () => {
    expect(cidrs(['192.0.2.0/28', '10.0.0.0/8'])).toEqual(['10.0.0.0/8', '192.0.2.0/28']);
  });

  test('an empty pool list guards nothing', () => {
    expect(cidrs([])).toEqual([]);
  });

  test.each([
    ['10.0.0.1/24', /host bits set \(network is 10\.0\.0\.0\/24\)/],
    ['10.0.0.0/33', /invalid prefix length '33'/],
    ['10.0.0.0/', /invalid prefix length ''/],
    ['10.0.0.20-10.0.0.10', /ends before it starts/],
    ['10.0.0.1-10.0.0.2-10.0.0.3', /not a range/],
    ['10.0.0.256/32', /not an IPv4 address/],
    ['10.0.0.1', /neither a CIDR .* nor a range/],
  ])('rejects %s', (item, message) => {
    expect(() => parsePoolItem(item)).toThrow(message);
  });
});

// An independent way to the minimal cover of one interval: walk the binary trie of all prefixes
// from /0; a node fully inside the interval is one prefix, a node outside is none, otherwise split.
function trieCover(first: number, last: number, base = 0, length = 0): Prefix[] {
  const size = 2 ** (32 - length);
  const end = base + size - 1;
  if (end < first || base > last) return [];
  if (base >= first && end <= last) return [{ address: ipv4FromNumber(base), prefixLength: length }];
  return [...trieCover(first, last, base, length + 1), ...trieCover(first, last, base + size / 2, length + 1)];
}

function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
}

describe('poolItemsToPrefixes on random ranges (seeded)', () => {
  test('covers exactly the range, with the fewest prefixes (equal to the trie cover)', () => {
    const next = random(20240611);
    for (let i = 0; i < 500; i++) {
      const first = next();
      const span = i % 2 === 0 ? next() % 5000 : next() % 2 ** 20;
      const last = Math.min(0xffffffff, first + span);
      const got = poolItemsToPrefixes([`${ipv4FromNumber(first)}-${ipv4FromNumber(last)}`]);
      expect(got).toEqual(trieCover(first, last));
      const covered = got.reduce((n, p) => n + 2 ** (32 - p.prefixLength), 0);
      expect(covered).toBe(last - first + 1);
      expect(prefixContains(got[0], ipv4FromNumber(first))).toBe(true);
      expect(prefixContains(got[got.length - 1], ipv4FromNumber(last))).toBe(true);
      expect(got.length).toBeLessThanOrEqual(62);
    }
  });
});
