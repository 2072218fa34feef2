// What an AddressPool may hold and hand out (ADDR-1, ADDR-2), and when a held address stays its
// holder's (ADDR-3): the shared validation the constructs and the webhook run, the allocation
// index the controller feeds from AddressPools, and the keep rule of the ServiceLoadBalancer path.
import * as pulumi from '@pulumi/pulumi';
import { Chart } from 'cdk8s';
import {
  findPoolForRequestedAddress,
  formatIPv4,
  parseIPv4,
  parsePoolAddresses,
  type PoolView,
} from '../../../api/validation';
import { AddressPool as Cdk8sAddressPool } from '../../../constructs/cdk8s';
import type * as Juneau from '../../../constructs/pulumi';
import { Allocator } from '../../../runtime/controller/allocator/allocator';
import { MemoryClaimStore } from '../memory-claim-store';
import { AllocatorIndex, type ClaimRecord, type Holder } from '../../../runtime/controller/allocator/allocator-index';
import { addressPoolRanges } from '../../../runtime/controller/allocator/claims';
import { mayKeepAddress, type RetainContext } from '../../../runtime/controller/allocator/retain';
import { decideAddressRequest } from '../../../runtime/controller/allocator/address-request';
import { toAdmissionResponse } from '../../../runtime/controller/webhook/admission';
import { checkAddressPoolAdmission } from '../../../runtime/controller/webhook/rules/networks';
import { testApp } from '../temp-dir';

void pulumi.runtime.setMocks(
  { newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }), call: (args) => args.inputs },
  'juneau-test',
  'unit',
  false,
);
const { AddressPool: PulumiAddressPool } = require('../../../constructs/pulumi') as typeof Juneau;

const ip = (s: string) => parseIPv4(s)!;

/** Every address the index hands out for a pool spec, lowest first, until it is full. */
function drain(spec: { addresses: string[]; avoidBuggyIPs?: boolean }, limit = 10_000): string[] {
  const index = new AllocatorIndex();
  const ref = { kind: 'AddressPool' as const, name: 'p' };
  index.setPool(ref, ...addressPoolRanges('p', spec));
  const out: string[] = [];
  for (let v = index.propose(ref); v !== undefined && out.length < limit; v = index.propose(ref))
    out.push(formatIPv4(v));
  return out;
}

const REFUSED: Array<[string, string]> = [
  ['0.0.0.0/8', '0.0.0.0/8'],
  ['127.0.0.1-127.0.0.9', '127.0.0.0/8'],
  ['169.254.10.0/24', '169.254.0.0/16'],
  ['224.0.0.0/24', '224.0.0.0/4'],
  ['239.255.255.250-239.255.255.250', '224.0.0.0/4'],
  ['240.0.0.0/4', '240.0.0.0/4'],
  ['255.255.255.255/32', '240.0.0.0/4'],
  ['126.255.255.0-128.0.0.5', '127.0.0.0/8'], // a range spanning the block
  ['192.0.0.0/2', '224.0.0.0/4'], // a CIDR containing the block
];

describe('ADDR-1: AddressPools refuse addresses nobody can use, naming the field', () => {
  it.each(REFUSED)('ADDR-1: the shared validation refuses %s (overlaps %s)', (item, block) => {
    const { issues, ranges } = parsePoolAddresses({ name: 'p', addresses: ['10.0.0.0/24', item] });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ field: 'spec.addresses[1]', value: item });
    expect(issues[0].message).toContain(`overlaps ${block}`);
    expect(issues[0].message).toContain('(ADDR-1)');
    expect(ranges).toEqual([{ first: ip('10.0.0.0'), last: ip('10.0.0.255') }]); // the refused item is never handed out
  });

  it.each([
    '1.0.0.0/8',
    '126.255.255.255-126.255.255.255',
    '128.0.0.0/3',
    '169.253.0.0/16',
    '169.255.0.0-169.255.0.9',
    '223.255.255.0/24',
  ])('ADDR-1: allows %s, next to a refused block', (item) => {
    expect(parsePoolAddresses({ name: 'p', addresses: [item] }).issues).toEqual([]);
  });

  it('ADDR-1: the admission webhook refuses it, naming the field and the block', () => {
    const v = checkAddressPoolAdmission(
      {
        uid: 'u',
        operation: 'CREATE',
        object: { metadata: { name: 'lo' }, spec: { advertiseMode: 'arp', addresses: ['127.0.0.0/8'] } },
      },
      { addressPools: [] },
    );
    if (v.allowed) throw new Error('expected a denial');
    expect(toAdmissionResponse('u', v).status!.message).toBe(
      'spec.addresses[0]: "127.0.0.0/8" overlaps 127.0.0.0/8 (loopback), which an AddressPool may not contain (ADDR-1)',
    );
  });

  it('ADDR-1: cdk8s synth fails naming the field and the pool', () => {
    const app = testApp();
    new Cdk8sAddressPool(new Chart(app, 'c'), 'mc', {
      advertiseMode: 'arp',
      addresses: ['10.0.0.0/24', '224.0.0.0/8'],
    });
    expect(() => app.synthYaml()).toThrow(
      /spec\.addresses\[1\]: "224\.0\.0\.0\/8" overlaps 224\.0\.0\.0\/4 \(multicast\).*\(ADDR-1\) \[AddressPool mc\]/,
    );
  });

  it('ADDR-1: the Pulumi component throws naming the field and the pool', () => {
    expect(() => new PulumiAddressPool('ll', { advertiseMode: 'arp', addresses: ['169.254.0.0/16'] })).toThrow(
      /spec\.addresses\[0\]: "169\.254\.0\.0\/16" overlaps 169\.254\.0\.0\/16 \(link-local\)/,
    );
  });
});

describe('ADDR-2: network and broadcast addresses, and avoidBuggyIPs', () => {
  it('ADDR-2: a CIDR shorter than /31 never hands out its network or broadcast address', () => {
    expect(drain({ addresses: ['10.0.0.0/30'] })).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(drain({ addresses: ['10.0.0.0/24'] })).toHaveLength(254);
    expect(drain({ addresses: ['10.0.0.0/24'] })).not.toContain('10.0.0.0');
    expect(drain({ addresses: ['10.0.0.0/24'] })).not.toContain('10.0.0.255');
  });

  it('ADDR-2: /31 and /32 hand out every address; a range is taken as written', () => {
    expect(drain({ addresses: ['10.0.0.0/31', '10.0.0.9/32'] })).toEqual(['10.0.0.0', '10.0.0.1', '10.0.0.9']);
    expect(drain({ addresses: ['10.0.1.0-10.0.1.1'] })).toEqual(['10.0.1.0', '10.0.1.1']);
  });

  it('ADDR-2: avoidBuggyIPs skips every .0 and .255, in ranges and across /24 boundaries, and the pool size says so', () => {
    const got = drain({ addresses: ['10.0.0.250-10.0.2.1', '10.0.10.0/23'], avoidBuggyIPs: true });
    expect(got.filter((a) => a.endsWith('.0') || a.endsWith('.255'))).toEqual([]);
    expect(got.slice(0, 7)).toEqual([
      '10.0.0.250',
      '10.0.0.251',
      '10.0.0.252',
      '10.0.0.253',
      '10.0.0.254',
      '10.0.1.1',
      '10.0.1.2',
    ]);
    expect(got).toContain('10.0.2.1');
    expect(got.filter((a) => a.startsWith('10.0.10.') || a.startsWith('10.0.11.'))).toHaveLength(254 * 2);
    expect(got).toHaveLength(5 + 254 + 1 + 254 * 2);
    const index = new AllocatorIndex();
    index.setPool(
      { kind: 'AddressPool', name: 'p' },
      ...addressPoolRanges('p', { addresses: ['10.0.0.0/16'], avoidBuggyIPs: true }),
    );
    expect(index.usage({ kind: 'AddressPool', name: 'p' })).toEqual({ size: 256 * 254, used: 0 });
    expect(index.contains({ kind: 'AddressPool', name: 'p' }, ip('10.0.7.255'))).toBe(false);
  });

  it('ADDR-2: avoidBuggyIPs on a large pool costs no listing (a /9 is set up and drained from the top quickly)', () => {
    const index = new AllocatorIndex();
    const ref = { kind: 'AddressPool' as const, name: 'big' };
    const started = Date.now();
    index.setPool(ref, ...addressPoolRanges('big', { addresses: ['10.0.0.0/9'], avoidBuggyIPs: true }));
    expect(index.usage(ref)?.size).toBe(2 ** 15 * 254);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  const pools = new Map<string, PoolView>([
    ['lan', { name: 'lan', advertiseMode: 'arp', addresses: ['10.225.32.0/24'] }],
    ['odd', { name: 'odd', advertiseMode: 'arp', addresses: ['10.225.40.0-10.225.41.255'], avoidBuggyIPs: true }],
  ]);
  const network = { name: 'net', type: 'arp', addressPools: ['lan', 'odd'] };

  it.each([
    ['10.225.32.0', 'is the network address of 10.225.32.0/24 in AddressPool lan, which is never handed out (ADDR-2)'],
    [
      '10.225.32.255',
      'is the broadcast address of 10.225.32.0/24 in AddressPool lan, which is never handed out (ADDR-2)',
    ],
    ['10.225.41.0', 'ends in .0, which AddressPool odd skips (spec.avoidBuggyIPs, ADDR-2)'],
    ['10.225.40.255', 'ends in .255, which AddressPool odd skips (spec.avoidBuggyIPs, ADDR-2)'],
  ])('ADDR-2: a requested %s is a clear error naming the field and the rule', (address, message) => {
    expect(findPoolForRequestedAddress('spec.requestedIP', address, network, pools)).toEqual({
      issue: { field: 'spec.requestedIP', value: address, message },
    });
    const decision = decideAddressRequest({ externalNetwork: 'net', requestedIP: address }, network, pools);
    expect(decision).toMatchObject({
      ok: false,
      reason: 'RequestedIPNotInPool',
      message: `spec.requestedIP: "${address}" ${message} (EIP-3)`,
    });
  });

  it('ADDR-2: an address next to them may be requested', () => {
    expect(findPoolForRequestedAddress('spec.requestedIP', '10.225.32.1', network, pools)).toEqual({
      pool: pools.get('lan'),
    });
    expect(findPoolForRequestedAddress('spec.requestedIP', '10.225.41.1', network, pools)).toEqual({
      pool: pools.get('odd'),
    });
  });

  it('ADDR-2: the cdk8s and Pulumi front-ends render spec.avoidBuggyIPs', () => {
    const app = testApp();
    const pool = new Cdk8sAddressPool(new Chart(app, 'c'), 'odd', {
      advertiseMode: 'arp',
      addresses: ['10.0.0.0/24'],
      avoidBuggyIPs: true,
    });
    expect(pool.toObject().spec).toEqual({ advertiseMode: 'arp', addresses: ['10.0.0.0/24'], avoidBuggyIPs: true });
    expect(app.synthYaml()).toContain('avoidBuggyIPs: true');
    expect(
      new PulumiAddressPool('odd-p', {
        advertiseMode: 'arp',
        addresses: ['10.0.1.0/24'],
        avoidBuggyIPs: true,
      }).toObject().spec,
    ).toEqual({ advertiseMode: 'arp', addresses: ['10.0.1.0/24'], avoidBuggyIPs: true });
  });
});

// ---- ADDR-3 ---------------------------------------------------------------------------------------

const LAN = { kind: 'AddressPool' as const, name: 'lan' };
const web: Holder = { kind: 'ServiceLoadBalancer', namespace: 'ns', name: 'web', uid: 'u1' };
const claimOf = (value: string, pool = 'lan'): ClaimRecord => ({
  claimName: `ipv4.${value}`,
  pool: { kind: 'AddressPool', name: pool },
  value: ip(value),
  holder: web,
});

/** An Allocator over the pool lan (10.0.0.0/28) with its claims in memory. */
const lanAllocator = () => {
  const index = new AllocatorIndex();
  index.setPool(LAN, ...addressPoolRanges('lan', { addresses: ['10.0.0.0/28'] }));
  const store = new MemoryClaimStore();
  return { store, allocator: new Allocator(index, store) };
};

describe("ADDR-3: when a held address stays its holder's", () => {
  const index = new AllocatorIndex();
  index.setPool(LAN, ...addressPoolRanges('lan', { addresses: ['10.0.0.0/28'] }));
  const lanView: PoolView = { name: 'lan', advertiseMode: 'arp', addresses: ['10.0.0.0/28'] };
  const net = { name: 'net', type: 'arp', addressPools: ['lan'] };
  const base: RetainContext = {
    networkName: 'net',
    network: net,
    networks: [net],
    pools: new Map([['lan', lanView]]),
    index,
  };

  it('ADDR-3: kept while its network is missing, or its pool is missing or not yet loaded', () => {
    expect(mayKeepAddress(claimOf('10.0.0.5'), base)).toBe(true);
    expect(mayKeepAddress(claimOf('10.0.0.5'), { ...base, network: undefined, networks: [] })).toBe(true);
    expect(mayKeepAddress(claimOf('10.0.0.5'), { ...base, pools: new Map() })).toBe(true);
    expect(
      mayKeepAddress(claimOf('10.0.0.5', 'late'), {
        ...base,
        network: { ...net, addressPools: ['lan', 'late'] },
        pools: new Map([['late', { ...lanView, name: 'late' }]]),
      }),
    ).toBe(true);
  });

  it('ADDR-3: released when the holder names another network, the network drops the pool, or the address leaves the pool', () => {
    const other = { name: 'other', type: 'arp', addressPools: ['lan'] };
    expect(
      mayKeepAddress(claimOf('10.0.0.5'), { ...base, networkName: 'new', network: undefined, networks: [other] }),
    ).toBe(false);
    expect(
      mayKeepAddress(claimOf('10.0.0.5'), {
        ...base,
        networkName: 'other',
        network: { ...other, addressPools: ['x'] },
        networks: [other],
      }),
    ).toBe(false);
    expect(mayKeepAddress(claimOf('10.0.0.99'), base)).toBe(false);
    expect(mayKeepAddress(claimOf('10.0.0.0'), base)).toBe(false); // the network address (ADDR-2)
  });

  it('ADDR-3: a requested address held by someone else keeps the current claim; once free, the holder moves and releases the old one', async () => {
    const { store, allocator } = lanAllocator();
    const other: Holder = { kind: 'ElasticIP', namespace: 'ns', name: 'eip', uid: 'u2' };
    expect(await allocator.ensureAddress(web, { pools: ['lan'] })).toMatchObject({
      ok: true,
      claimName: 'ipv4.10.0.0.1',
    });
    expect(
      await allocator.ensureAddress(other, { pools: ['lan'], requested: { value: ip('10.0.0.9'), pool: 'lan' } }),
    ).toMatchObject({ ok: true });
    const blocked = await allocator.ensureAddress(web, {
      pools: ['lan'],
      requested: { value: ip('10.0.0.9'), pool: 'lan' },
    });
    expect(blocked).toMatchObject({ ok: false, reason: 'RequestedIPInUse', kept: { claimName: 'ipv4.10.0.0.1' } });
    expect([...store.objects.keys()].sort()).toEqual(['ipv4.10.0.0.1', 'ipv4.10.0.0.9']);
    await allocator.releaseAll(other);
    expect(
      await allocator.ensureAddress(web, { pools: ['lan'], requested: { value: ip('10.0.0.9'), pool: 'lan' } }),
    ).toMatchObject({ ok: true, claimName: 'ipv4.10.0.0.9' });
    expect([...store.objects.keys()]).toEqual(['ipv4.10.0.0.9']);
  });

  it('ADDR-3: retainAddress keeps what the rule accepts and releases the rest', async () => {
    const { store, allocator } = lanAllocator();
    await allocator.ensureAddress(web, { pools: ['lan'] });
    expect(await allocator.retainAddress(web, () => true)).toMatchObject({ claimName: 'ipv4.10.0.0.1' });
    expect(store.objects.has('ipv4.10.0.0.1')).toBe(true);
    expect(await allocator.retainAddress(web, () => false)).toBeUndefined();
    expect(store.objects.size).toBe(0);
  });
});
