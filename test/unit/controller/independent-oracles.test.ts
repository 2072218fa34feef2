// Issue 30 item 6: highestRandomWeightNode and advertisementName checked against tables computed
// outside the production code. Every hex value below was computed once by hand with coreutils, e.g.
// `printf '%s' '198.51.100.7#worker-1' | sha256sum | cut -c1-16` (SLB-7: weight sha256("<vip>#<node>"),
// highest wins) and `printf '%s' 'ElasticIP/team-a/db' | sha256sum | cut -c1-16` (NAME-1's hash over
// kind/namespace/name), so a bug in either function fails here instead of agreeing with itself.
import { highestRandomWeightNode } from '../../../runtime/controller/arp/rendezvous';
import { advertisementName, type AdvertisementOwner } from '../../../runtime/controller/arp/names';

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

  it('NAME-1: advertisementName gives the hand-written names (seeds form without a `-` in the namespace, else the hash by sha256sum)', () => {
    const table: Array<[AdvertisementOwner, string]> = [
      [{ kind: 'ServiceLoadBalancer', namespace: 'default', name: 'web' }, 'slb-default-web'],
      [{ kind: 'ElasticIP', namespace: 'default', name: 'web-eip' }, 'eip-default-web-eip'],
      [{ kind: 'NATGateway', namespace: 'shop', name: 'egress' }, 'ngw-shop-egress'],
      [{ kind: 'ServiceLoadBalancer', namespace: 'team-a', name: 'web' }, 'slb-team-a-web.acf028081811572f'],
      [{ kind: 'ElasticIP', namespace: 'team-a', name: 'db' }, 'eip-team-a-db.a15df7113be44a15'],
      [{ kind: 'NATGateway', namespace: 'kube-system', name: 'egress' }, 'ngw-kube-system-egress.cdbbe1996d734548'],
      [{ kind: 'ElasticIP', namespace: 'team', name: 'a.web' }, 'eip-team-a.web.34cba3b1bd01d07d'],
    ];
    for (const [owner, name] of table) expect(advertisementName(owner)).toBe(name);
  });
});
