// ARP-4 made visible: the pure decision of the duplicate detector (runtime/controller/arp/duplicates.ts).
import {
  byAge,
  decideUniqueness,
  duplicateSets,
  isDuplicated,
  type AdvertisementView,
} from '../../../runtime/controller/arp/duplicates';

/** Created `second` seconds after the first (2026-01-01T00:00:00Z, every object's by default). */
const createdAt = (second: number) => ({ creationTimestamp: `2026-01-01T00:00:${String(second).padStart(2, '0')}Z` });
const ad = (name: string, o: Partial<AdvertisementView> = {}): AdvertisementView => ({
  name,
  address: '198.18.120.9',
  nodeName: `node-${name}`,
  ...createdAt(0),
  generation: 1,
  ...o,
});
const flagged = (o: Partial<NonNullable<AdvertisementView['unique']>> = {}) => ({
  status: 'False',
  reason: 'DuplicateAddress',
  message: 'm',
  observedGeneration: 1,
  ...o,
});

describe('duplicateSets (ARP-4)', () => {
  it('ARP-4: keeps only addresses with two or more objects, oldest first (creationTimestamp, then name)', () => {
    const sets = duplicateSets([
      ad('b', createdAt(1)),
      ad('c'),
      ad('a', createdAt(1)),
      ad('alone', { address: '198.18.120.10' }),
    ]);
    expect([...sets.keys()]).toEqual(['198.18.120.9']);
    expect(sets.get('198.18.120.9')!.map((m) => m.name)).toEqual(['c', 'a', 'b']);
  });

  it("ARP-4, NAME-1: one owner's copies on one node (a move between its names) are not a duplicate; on two nodes, or two owners, or unmarked, they are", () => {
    const o = 'ElasticIP/ns/web';
    const copies = [
      ad('eip-ns-web', { owner: o, nodeName: 'n1' }),
      ad('eip-ns-web.0123', { owner: o, nodeName: 'n1' }),
    ];
    expect(isDuplicated(copies)).toBe(false);
    expect(duplicateSets(copies).size).toBe(0);
    expect(decideUniqueness(copies).filter((d) => d.condition || d.event)).toEqual([]);
    expect(isDuplicated([copies[0], { ...copies[1], nodeName: 'n2' }])).toBe(true);
    expect(isDuplicated([copies[0], { ...copies[1], owner: 'ElasticIP/ns/other' }])).toBe(true);
    expect(isDuplicated([copies[0], { ...copies[1], owner: undefined }])).toBe(true);
    expect(
      isDuplicated([
        { ...copies[0], owner: undefined },
        { ...copies[1], owner: undefined },
      ]),
    ).toBe(true);
    expect(isDuplicated([...copies, ad('third', { nodeName: 'n1' })])).toBe(true);
    expect(isDuplicated([copies[0]])).toBe(false);
  });

  it('byAge breaks a timestamp tie by name', () => {
    expect([ad('y'), ad('x')].sort(byAge).map((m) => m.name)).toEqual(['x', 'y']);
  });
});

describe('decideUniqueness (ARP-4)', () => {
  it('ARP-4: flags every member, the first too, each message naming the others and which one was first; one Warning each', () => {
    const decisions = decideUniqueness([ad('second', createdAt(5)), ad('first'), ad('third', createdAt(7))]);
    expect(decisions.map((d) => d.name)).toEqual(['first', 'second', 'third']);
    for (const d of decisions) {
      expect(d.condition).toMatchObject({
        type: 'Unique',
        status: 'False',
        reason: 'DuplicateAddress',
        observedGeneration: 1,
      });
      expect(d.event).toMatchObject({ type: 'Warning', reason: 'DuplicateAddress' });
    }
    expect(decisions[0].condition!.message).toContain(
      'also advertised by ARPAdvertisement second (node node-second), third (node node-third); this one was created first',
    );
    expect(decisions[1].condition!.message).toContain(
      'also advertised by ARPAdvertisement first (node node-first), third (node node-third); the first created is first',
    );
    expect(decisions[2].condition!.message).toMatch(/spec\.address 198\.18\.120\.9 .*\(ARP-4\)$/);
  });

  it('one Event per transition: an object already False gets no second Warning; an unchanged condition is not rewritten', () => {
    const [first] = decideUniqueness([ad('a'), ad('b')]);
    const again = decideUniqueness([
      ad('a', { unique: { ...first.condition!, observedGeneration: 1 } }),
      ad('b', { unique: flagged() }),
    ]);
    expect(again[0]).toEqual({ name: 'a', condition: undefined, event: undefined });
    expect(again[1].event).toBeUndefined();
    expect(again[1].condition).toMatchObject({ status: 'False' }); // message 'm' is stale -> rewritten, silently
  });

  it('a third member joining updates the messages without a second Warning for those already flagged', () => {
    const decisions = decideUniqueness([
      ad('a', { unique: flagged() }),
      ad('b', { unique: flagged() }),
      ad('c', createdAt(9)),
    ]);
    expect(decisions.map((d) => d.event?.type)).toEqual([undefined, undefined, 'Warning']);
    expect(decisions[0].condition!.message).toContain('b (node node-b), c (node node-c)');
  });

  it('resolved: the survivor goes back to True/UniqueAddress with one Normal Event; a never-flagged object gets nothing written', () => {
    const [resolved] = decideUniqueness([ad('a', { unique: flagged() })]);
    expect(resolved.condition).toMatchObject({ type: 'Unique', status: 'True', reason: 'UniqueAddress' });
    expect(resolved.event).toMatchObject({ type: 'Normal', reason: 'DuplicateResolved' });
    const [settled] = decideUniqueness([ad('a', { unique: { ...resolved.condition!, observedGeneration: 1 } })]);
    expect(settled).toEqual({ name: 'a', condition: undefined, event: undefined });
    expect(decideUniqueness([ad('never')])).toEqual([{ name: 'never' }]);
  });

  it('a large set lists five others and counts the rest, so 50 racing creates do not write 50 names on each', () => {
    const many = Array.from({ length: 50 }, (_, i) => ad(`ad-${String(i).padStart(2, '0')}`));
    const [first, second] = decideUniqueness(many);
    expect(first.condition!.message).toContain(
      'ad-01 (node node-ad-01), ad-02 (node node-ad-02), ad-03 (node node-ad-03), ad-04 (node node-ad-04), ad-05 (node node-ad-05) and 44 more; this one was created first',
    );
    expect(second.condition!.message).toContain('the first created is ad-00');
  });
});
