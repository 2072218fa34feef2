// ALLOC-2: which claims the sweep looks at, for ElasticIP holders too (pure part). Identity is the
// holder's uid; a kind whose caches have not synced is left alone; a claim whose value may still be
// in use (EIP-15) waits.
import type { ClaimRecord } from '../../../runtime/controller/allocator/allocator-index';
import { orphanCandidates, type SweptHolderKinds } from '../../../runtime/controller/allocator/claim-sweep';
import { JuneauResources } from '../../../runtime/kube/resources';

const claim = (name: string, holderUid: string, kind = 'ElasticIP'): ClaimRecord => ({
  claimName: name,
  pool: { kind: 'AddressPool', name: 'p' },
  value: 1,
  holder: { kind, namespace: 'ns', name: 'web', uid: holderUid },
});
const NOW = 100_000;

function kinds(o: { uid?: string; synced?: boolean; used?: string[] }): SweptHolderKinds {
  return {
    ElasticIP: {
      type: JuneauResources.allocationClaims,
      uidInCache: () => o.uid,
      synced: () => o.synced ?? true,
      stillUsed: (c) => (o.used ?? []).includes(c.claimName),
    },
  };
}
const old = () => 0;

describe('ALLOC-2: the sweep and ElasticIP claims', () => {
  it("ALLOC-2: a claim of an ElasticIP recreated under the same name (another uid) is a candidate; the live object's is not", () => {
    const claims = [claim('ipv4.old', 'u1'), claim('ipv4.new', 'u2')];
    expect(orphanCandidates(claims, kinds({ uid: 'u2' }), old, NOW, 1_000).map((c) => c.claimName)).toEqual([
      'ipv4.old',
    ]);
  });

  it("ALLOC-2: nothing while the kind's caches have not synced (an empty cache shows every holder gone)", () => {
    expect(orphanCandidates([claim('ipv4.old', 'u1')], kinds({ synced: false }), old, NOW, 1_000)).toEqual([]);
  });

  it('ALLOC-2, EIP-15: a claim whose value may still be in use waits', () => {
    expect(
      orphanCandidates([claim('ipv4.old', 'u1')], kinds({ uid: 'u2', used: ['ipv4.old'] }), old, NOW, 1_000),
    ).toEqual([]);
  });

  it('ALLOC-2: a fresh claim and a kind not swept are left alone', () => {
    expect(orphanCandidates([claim('ipv4.old', 'u1')], kinds({ uid: 'u2' }), () => NOW - 10, NOW, 1_000)).toEqual([]);
    expect(orphanCandidates([claim('ipv4.x', 'u1', 'NATGateway')], kinds({ uid: 'u2' }), old, NOW, 1_000)).toEqual([]);
  });
});
