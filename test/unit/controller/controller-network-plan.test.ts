import type { ExternalNetwork } from '../../../api';
import type { PoolView } from '../../../api/validation';
import { planNetworkStatus, planPoolStatus } from '../../../runtime/controller/network/plan';

const now = new Date('2025-01-01T00:00:00Z');
const pools = new Map<string, PoolView>([
  ['a', { name: 'a', advertiseMode: 'arp', addresses: ['192.0.2.0/24'] }],
  ['b', { name: 'b', advertiseMode: 'bgp', addresses: ['198.51.100.0/24'] }],
]);
const network = (over: Partial<ExternalNetwork> = {}): ExternalNetwork => ({
  apiVersion: 'juneau.loutres.me/v1alpha1',
  kind: 'ExternalNetwork',
  metadata: { name: 'public', generation: 2 },
  spec: { type: 'arp', addressPools: ['a'] },
  ...over,
});

describe('ExternalNetwork status (EN-3, EN-7)', () => {
  it('writes the allocated VNI with a True condition', () => {
    const s = planNetworkStatus(
      {
        network: network(),
        pools,
        networkID: {
          ok: true,
          value: 4096,
          pool: { kind: 'AllocationPool', name: 'subnet-vni' },
          claimName: 'subnet-vni.4096',
        },
      },
      now,
    );
    expect(s.networkID).toBe(4096);
    expect(s.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'NetworkIDAssigned', status: 'True', observedGeneration: 2 }),
      ]),
    );
  });

  it('EN-7: a networkID already written never changes, whatever the allocation says', () => {
    const s = planNetworkStatus(
      {
        network: network({ status: { networkID: 5000 } }),
        pools,
        networkID: { ok: true, value: 4096, pool: { kind: 'AllocationPool', name: 'subnet-vni' }, claimName: 'x' },
      },
      now,
    );
    expect(s.networkID).toBe(5000);
    expect(
      planNetworkStatus({ network: network({ status: { networkID: 5000 } }), pools, networkID: undefined }, now)
        .networkID,
    ).toBe(5000);
  });

  it('0 and a False condition with the reason while no VNI could be taken', () => {
    const s = planNetworkStatus(
      {
        network: network(),
        pools,
        networkID: { ok: false, reason: 'NoFreeValue', message: 'no free value in AllocationPool subnet-vni' },
      },
      now,
    );
    expect(s.networkID).toBe(0);
    expect(s.conditions?.find((c) => c.type === 'NetworkIDAssigned')).toMatchObject({
      status: 'False',
      reason: 'NoFreeValue',
    });
  });

  it('EN-3: a pool of the wrong mode or a missing pool is reported, naming the field', () => {
    const s = planNetworkStatus(
      { network: network({ spec: { type: 'arp', addressPools: ['a', 'b', 'c'] } }), pools, networkID: undefined },
      now,
    );
    const c = s.conditions?.find((x) => x.type === 'AddressPoolsValid');
    expect(c).toMatchObject({ status: 'False', reason: 'AddressPoolModeMismatch' });
    expect(c?.message).toContain('spec.addressPools[1]: "b" is an AddressPool with advertiseMode bgp');
    expect(c?.message).toContain('spec.addressPools[2]: AddressPool "c" does not exist');
  });
});

describe('AddressPool status (AP-2, AP-3)', () => {
  it('size, used and the network listing it', () => {
    const s = planPoolStatus(
      { pool: pools.get('a')!, others: [pools.get('b')!], usage: { size: 256, used: 3 }, networks: ['public'] },
      now,
    );
    expect(s).toMatchObject({ size: 256, used: 3, externalNetwork: 'public' });
    expect(s.conditions?.[0]).toMatchObject({ type: 'Valid', status: 'True' });
  });

  it('overlap with another pool is reported, naming it (AP-2)', () => {
    const s = planPoolStatus(
      {
        pool: { name: 'c', advertiseMode: 'arp', addresses: ['192.0.2.128/25'] },
        others: [pools.get('a')!],
        usage: { size: 128, used: 0 },
        networks: [],
      },
      now,
    );
    expect(s.conditions?.[0]).toMatchObject({ status: 'False', reason: 'InvalidAddresses' });
    expect(s.conditions?.[0].message).toContain('overlaps "192.0.2.0/24" of AddressPool a');
  });
});
