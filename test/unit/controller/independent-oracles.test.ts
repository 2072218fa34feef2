// Issue 30 item 6: highestRandomWeightNode and chooseAdvertisementName (NAME-1) checked against tables computed
// outside the production code. Every hex value below was computed once by hand with coreutils, e.g.
// `printf '%s' '198.51.100.7#worker-1' | sha256sum | cut -c1-16` (SLB-7: weight sha256("<vip>#<node>"),
// highest wins) and `printf '%s' 'ElasticIP/team-a/db' | sha256sum | cut -c1-16` (NAME-1's hash over
// kind/namespace/name), so a bug in either function fails here instead of agreeing with itself.
import { highestRandomWeightNode } from '../../../runtime/controller/arp/rendezvous';
import {
  advertisementName,
  chooseAdvertisementName,
  ownerMetadata,
  type AdvertisementOwner,
} from '../../../runtime/controller/arp/names';

/** The first 16 hex digits of sha256("<vip>#<node>"), by sha256sum (their order decides here). */
const WEIGHTS: Record<string, Record<string, string>> = {
  '198.51.100.7': {
    'worker-1': 'e660172f11a172f9',
    'worker-2': 'c2b566d2ea177458',
    'worker-3': '81d03e18e1e441c5',
    'node-a': 'd1732a0476e12b92',
  },
  '198.51.100.8': {
    'worker-1': 'a43c5d5c92579ab3',
    'worker-2': '55717815a638c039',
    'worker-3': '42cbdc80fd899e95',
    'node-a': '0bcf53bf2a9469ca',
  },
  '203.0.113.250': {
    'worker-1': '83496bd17425abeb',
    'worker-2': '1b0a15705cee1054',
    'worker-3': 'ed9ef9ae7d0e4098',
    'node-a': '9947521b77cb2702',
  },
};

/** [vip, candidates, the winner read off WEIGHTS by hand]. */
const WINNERS: Array<[string, string[], string]> = [
  ['198.51.100.7', ['worker-1', 'worker-2', 'worker-3'], 'worker-1'],
  ['198.51.100.7', ['worker-2', 'worker-3', 'node-a'], 'node-a'],
  ['198.51.100.7', ['worker-3', 'worker-2'], 'worker-2'],
  ['198.51.100.8', ['worker-1', 'worker-2', 'worker-3', 'node-a'], 'worker-1'],
  ['198.51.100.8', ['node-a', 'worker-3', 'worker-2'], 'worker-2'],
  ['198.51.100.8', ['node-a', 'worker-3'], 'worker-3'],
  ['203.0.113.250', ['worker-1', 'worker-2', 'worker-3'], 'worker-3'],
  ['203.0.113.250', ['worker-2', 'node-a', 'worker-1'], 'node-a'],
  ['203.0.113.250', ['worker-2', 'worker-1'], 'worker-1'],
];

describe('independent oracles (issue 30 item 6)', () => {
  it('SLB-7: highestRandomWeightNode picks the node a hand-computed sha256("<vip>#<node>") table ranks first', () => {
    for (const [vip, candidates, winner] of WINNERS) {
      // The table itself agrees with the hand-read winner (a typo in it fails here, not silently).
      const ranked = [...candidates].sort((x, y) => (WEIGHTS[vip][y] < WEIGHTS[vip][x] ? -1 : 1));
      expect(ranked[0]).toBe(winner);
      expect(highestRandomWeightNode(vip, candidates)).toBe(winner);
    }
    expect(highestRandomWeightNode('198.51.100.7', [])).toBeUndefined();
  });

  it("NAME-1: chooseAdvertisementName gives the hand-written names: the seed's when it fits and is free or the owner's, else the hash by sha256sum", () => {
    // Who holds a name in each row: 'self' (the owner's marks), 'other' (another owner's), 'none' (no marks).
    type Holder = 'self' | 'other' | 'none';
    const SLB_A: AdvertisementOwner = { kind: 'ServiceLoadBalancer', namespace: 'team-a', name: 'web' };
    const SLB_B: AdvertisementOwner = { kind: 'ServiceLoadBalancer', namespace: 'team', name: 'a-web' };
    const x248 = 'x'.repeat(248);
    const table: Array<[AdvertisementOwner, Record<string, Holder>, string]> = [
      [{ kind: 'ServiceLoadBalancer', namespace: 'default', name: 'web' }, {}, 'slb-default-web'],
      [{ kind: 'ElasticIP', namespace: 'default', name: 'web-eip' }, {}, 'eip-default-web-eip'],
      [{ kind: 'NATGateway', namespace: 'shop', name: 'egress' }, {}, 'ngw-shop-egress'],
      [{ kind: 'NATGateway', namespace: 'kube-system', name: 'egress' }, {}, 'ngw-kube-system-egress'],
      [SLB_A, {}, 'slb-team-a-web'],
      [SLB_A, { 'slb-team-a-web': 'self' }, 'slb-team-a-web'],
      [SLB_A, { 'slb-team-a-web.acf028081811572f': 'self' }, 'slb-team-a-web'],
      [SLB_A, { 'slb-team-a-web': 'other' }, 'slb-team-a-web.acf028081811572f'],
      [SLB_B, { 'slb-team-a-web': 'other' }, 'slb-team-a-web.caee7b00c6ddb250'],
      [SLB_B, { 'slb-team-a-web': 'none' }, 'slb-team-a-web.caee7b00c6ddb250'],
      [
        { kind: 'ElasticIP', namespace: 'team-a', name: 'db' },
        { 'eip-team-a-db': 'other' },
        'eip-team-a-db.a15df7113be44a15',
      ],
      [
        { kind: 'NATGateway', namespace: 'shop', name: 'egress' },
        { 'ngw-shop-egress': 'none' },
        'ngw-shop-egress.d84bc9ca9f6a3602',
      ],
      [{ kind: 'ElasticIP', namespace: 'team', name: 'a.web' }, {}, 'eip-team-a.web.34cba3b1bd01d07d'],
      // eip-a-<248 x> is 254 characters: cut to 236, a dot, the hash: 253.
      [{ kind: 'ElasticIP', namespace: 'a', name: x248 }, {}, `eip-a-${'x'.repeat(230)}.eee92579cff90d0b`],
    ];
    for (const [owner, holders, name] of table) {
      const other: AdvertisementOwner = { kind: 'ServiceLoadBalancer', namespace: 'someone', name: 'else' };
      const at = (n: string) => {
        const h = holders[n];
        if (h === undefined) return undefined;
        return { metadata: h === 'none' ? {} : ownerMetadata(h === 'self' ? owner : other) };
      };
      expect(chooseAdvertisementName(owner, at)).toEqual({ name });
    }
    expect(`eip-a-${'x'.repeat(230)}.eee92579cff90d0b`).toHaveLength(253);
    // The uncontested name, as tests and benches spell it.
    expect(advertisementName(SLB_A)).toBe('slb-team-a-web');
  });
});
