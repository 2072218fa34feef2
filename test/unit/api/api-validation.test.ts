import {
  checkNetworkSpec,
  checkObjectName,
  checkPoolModes,
  findOverlapsWithOtherPools,
  findPoolForRequestedAddress,
  formatIPv4,
  formatIssue,
  parseAddressItem,
  parseIPv4,
  parsePoolAddresses,
  PoolView,
} from '../../../api/validation';

const pools = (...p: PoolView[]) => new Map(p.map((x) => [x.name, x]));
const arpPool: PoolView = { name: 'arp-pool', advertiseMode: 'arp', addresses: ['10.225.32.0/24'] };
const bgpPool: PoolView = { name: 'bgp-pool', advertiseMode: 'bgp', addresses: ['10.225.51.10-10.225.51.20'] };

describe('IPv4 parsing', () => {
  test('strict dotted quads round-trip', () => {
    for (const a of ['0.0.0.0', '10.225.32.241', '255.255.255.255']) expect(formatIPv4(parseIPv4(a)!)).toBe(a);
  });
  test.each(['', '10.0.0', '10.0.0.0.1', '256.0.0.1', '01.2.3.4', '1.2.3.-4', 'a.b.c.d', '::1', '1.2.3.4 '])(
    'rejects %j',
    (bad) => {
      expect(parseIPv4(bad)).toBeUndefined();
    },
  );
});

describe('AP-2: address items', () => {
  test('a CIDR covers its network', () => {
    // ADDR-2: the network and broadcast addresses are covered (for overlaps) but not usable.
    expect(parseAddressItem('10.225.32.0/24')).toEqual({
      ok: true,
      range: { first: parseIPv4('10.225.32.0'), last: parseIPv4('10.225.32.255') },
      usable: { first: parseIPv4('10.225.32.1'), last: parseIPv4('10.225.32.254') },
    });
    expect(parseAddressItem('10.0.0.7/32')).toEqual({
      ok: true,
      range: { first: parseIPv4('10.0.0.7'), last: parseIPv4('10.0.0.7') },
      usable: { first: parseIPv4('10.0.0.7'), last: parseIPv4('10.0.0.7') },
    });
  });
  test('an inclusive range, a single-address range', () => {
    const range = { first: parseIPv4('10.225.51.10'), last: parseIPv4('10.225.51.20') };
    expect(parseAddressItem('10.225.51.10-10.225.51.20')).toEqual({ ok: true, range, usable: range });
    expect(parseAddressItem('10.0.0.1-10.0.0.1')).toMatchObject({ ok: true });
  });
  test.each([
    ['10.225.32.0/33', 'prefix length'],
    ['10.225.32.1/24', 'host bits set: write the network address 10.225.32.0/24'],
    ['10.225.51.20-10.225.51.10', 'reversed'],
    ['10.225.51.300-10.225.51.310', '"10.225.51.300" is not an IPv4 address'],
    ['fd00::/64', 'not an IPv4 address'],
    ['10.225.51.1', 'is not a CIDR'],
    ['10.0.0.1-10.0.0.2-10.0.0.3', 'not an inclusive range'],
  ])('%j is refused: %s', (item, reason) => {
    const r = parseAddressItem(item);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(reason);
  });
  test('overlapping items in one pool name both items', () => {
    const r = parsePoolAddresses({ name: 'p', addresses: ['10.0.0.0/24', '10.0.1.0/24', '10.0.0.128-10.0.0.130'] });
    expect(r.issues.map(formatIssue)).toEqual([
      'spec.addresses[2]: "10.0.0.128-10.0.0.130" overlaps spec.addresses[0] "10.0.0.0/24" (AP-2)',
    ]);
  });
  test('an empty list is refused with the pool name', () => {
    expect(parsePoolAddresses({ name: 'empty', addresses: [] }).issues.map(formatIssue)).toEqual([
      'spec.addresses: of AddressPool empty must list at least one CIDR or range (AP-2)',
    ]);
  });
  test('overlap with another pool names that pool and its item', () => {
    const issues = findOverlapsWithOtherPools(
      { name: 'new', addresses: ['10.225.31.0/24', '10.225.32.200-10.225.33.5'] },
      [arpPool, bgpPool],
    );
    expect(issues.map(formatIssue)).toEqual([
      'spec.addresses[1]: "10.225.32.200-10.225.33.5" overlaps "10.225.32.0/24" of AddressPool arp-pool (AP-2)',
    ]);
  });
  test('a pool does not overlap itself', () => {
    expect(findOverlapsWithOtherPools(arpPool, [arpPool])).toEqual([]);
  });
});

describe('ExternalNetwork', () => {
  test('EN-1: type must be bgp or arp', () => {
    expect(checkNetworkSpec({ name: 'n', type: 'ospf', addressPools: ['a'] }).map(formatIssue)).toEqual([
      'spec.type: "ospf" must be "bgp" or "arp" (EN-1)',
    ]);
  });
  test('EN-2: at least one pool, no duplicates', () => {
    expect(checkNetworkSpec({ name: 'n', type: 'arp', addressPools: [] }).map(formatIssue)).toEqual([
      'spec.addressPools: of ExternalNetwork n must name at least one AddressPool (EN-2)',
    ]);
    expect(checkNetworkSpec({ name: 'n', type: 'arp', addressPools: ['a', 'b', 'a'] }).map(formatIssue)).toEqual([
      'spec.addressPools[2]: "a" duplicates spec.addressPools[0]: the list is a set (EN-2)',
    ]);
  });
  test('EN-3: a pool of the other mode is named with both modes', () => {
    expect(
      checkPoolModes(
        { name: 'ext-net-arp', type: 'arp', addressPools: ['arp-pool', 'bgp-pool'] },
        pools(arpPool, bgpPool),
      ).map(formatIssue),
    ).toEqual([
      'spec.addressPools[1]: "bgp-pool" is an AddressPool with advertiseMode bgp, but ExternalNetwork ext-net-arp has type arp (EN-3)',
    ]);
  });
});

describe('EIP-3 / SLB-2: requested addresses', () => {
  const net = { name: 'ext-net-arp', type: 'arp', addressPools: ['arp-pool', 'bgp-pool'] };
  test('inside a usable pool: that pool', () => {
    expect(findPoolForRequestedAddress('spec.requestedIP', '10.225.32.241', net, pools(arpPool, bgpPool))).toEqual({
      pool: arpPool,
    });
  });
  test('inside only a pool of the other mode (EIP-2): refused, naming the pools searched', () => {
    const r = findPoolForRequestedAddress('spec.requestedIP', '10.225.51.12', net, pools(arpPool, bgpPool));
    expect('issue' in r && formatIssue(r.issue)).toBe(
      'spec.requestedIP: "10.225.51.12" is not inside any arp AddressPool of ExternalNetwork ext-net-arp: arp-pool (10.225.32.0/24)',
    );
  });
  test('not an address', () => {
    const r = findPoolForRequestedAddress(
      'metadata.annotations[juneau.loutres.me/load-balancer-requested-ip]',
      'web',
      net,
      pools(arpPool),
    );
    expect('issue' in r && formatIssue(r.issue)).toBe(
      'metadata.annotations[juneau.loutres.me/load-balancer-requested-ip]: "web" is not an IPv4 address',
    );
  });
});

describe('names', () => {
  test.each(['Web', '-web', 'web_1', 'a'.repeat(254)])('%j is not an object name', (n) => {
    expect(checkObjectName('metadata.name', n)).toHaveLength(1);
  });
  test('web.eth0 is', () => expect(checkObjectName('metadata.name', 'web.eth0')).toEqual([]));
});
