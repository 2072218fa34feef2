import { highestRandomWeightNode, rendezvousNode, rendezvousWeight } from '../../../runtime/controller/arp/rendezvous';

const nodes = Array.from({ length: 10 }, (_, i) => `node-${i}`);
const vips = Array.from({ length: 1000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.${(i * 7) & 255}`);

describe('rendezvousNode (SLB-7)', () => {
  it('is deterministic and independent of the order of candidates (a new leader gives the same answer)', () => {
    for (const vip of vips.slice(0, 100)) {
      const a = rendezvousNode({ vip, candidates: nodes });
      const b = rendezvousNode({ vip, candidates: [...nodes].reverse() });
      expect(a).toBe(b);
      expect(nodes).toContain(a);
    }
  });

  it('pins the hash: sha256("<vip>#<node>"), highest wins', () => {
    expect(rendezvousWeight('192.0.2.10', 'node-a')).toBe(
      '6d6928590d5d784e74a3f8d01507660f3e4fc67312c7c1de06ac331233bd567b',
    );
    const weights = nodes
      .map((n) => [n, rendezvousWeight('192.0.2.10', n)] as const)
      .sort((x, y) => (x[1] < y[1] ? 1 : -1));
    expect(highestRandomWeightNode('192.0.2.10', nodes)).toBe(weights[0][0]);
  });

  // Written by hand from the rule (sha256 of "<vip>#<node>", highest digest wins), computed outside
  // this code base (Python's hashlib): the winner, and the runner-up once the winner is gone.
  it.each([
    ['192.0.2.10', 'node-8', 'node-2'],
    ['192.0.2.11', 'node-4', 'node-9'],
    ['198.51.100.7', 'node-4', 'node-9'],
  ])(
    'SLB-7: %s among node-0..node-9 goes to %s, then to %s without it (an independent table)',
    (vip, first, second) => {
      expect(highestRandomWeightNode(vip, nodes)).toBe(first);
      expect(rendezvousNode({ vip, candidates: nodes.filter((n) => n !== first), current: first })).toBe(second);
    },
  );

  it('keeps the current node while it is a candidate (sticky), even when another has a higher weight', () => {
    for (const vip of vips.slice(0, 50)) {
      const best = highestRandomWeightNode(vip, nodes)!;
      const other = nodes.find((n) => n !== best)!;
      expect(rendezvousNode({ vip, candidates: nodes, current: other })).toBe(other);
    }
  });

  it('chooses again by rendezvous when the current node is no longer a candidate', () => {
    const vip = '192.0.2.77';
    const remaining = nodes.filter((n) => n !== 'node-3');
    expect(rendezvousNode({ vip, candidates: remaining, current: 'node-3' })).toBe(
      highestRandomWeightNode(vip, remaining),
    );
  });

  it('returns undefined when there is no candidate (SLB-8)', () => {
    expect(rendezvousNode({ vip: '192.0.2.1', candidates: [], current: 'node-1' })).toBeUndefined();
  });

  it('spreads 1,000 VIPs over 10 nodes within ±30% of even', () => {
    const counts = new Map<string, number>();
    for (const vip of vips) {
      const n = rendezvousNode({ vip, candidates: nodes })!;
      counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    expect(counts.size).toBe(10);
    for (const c of counts.values()) {
      expect(c).toBeGreaterThanOrEqual(70);
      expect(c).toBeLessThanOrEqual(130);
    }
  });

  it('moves only the VIPs of a node that leaves; a node that joins takes nothing from sticky VIPs', () => {
    const before = new Map(vips.map((v) => [v, rendezvousNode({ vip: v, candidates: nodes })!]));
    const without = nodes.filter((n) => n !== 'node-4');
    let moved = 0;
    for (const v of vips) {
      const after = rendezvousNode({ vip: v, candidates: without, current: before.get(v) });
      if (after !== before.get(v)) {
        moved++;
        expect(before.get(v)).toBe('node-4');
      }
    }
    expect(moved).toBe([...before.values()].filter((n) => n === 'node-4').length);
    // Even without stickiness, HRW moves only what the new node wins (about 1/11).
    const withNew = [...nodes, 'node-new'];
    const changed = vips.filter((v) => highestRandomWeightNode(v, withNew) !== before.get(v));
    expect(changed.every((v) => highestRandomWeightNode(v, withNew) === 'node-new')).toBe(true);
    expect(
      vips.filter((v) => rendezvousNode({ vip: v, candidates: withNew, current: before.get(v) }) !== before.get(v)),
    ).toEqual([]);
  });
});
