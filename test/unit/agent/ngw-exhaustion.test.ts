// NGW-5's Event (runtime/agent/ngw/exhaustion.ts): one notice per gateway at the transition to
// refusing new flows, none per refused packet, a new one after a quiet spell, and at most one per
// gateway per interval however often it flaps.
import { PortExhaustion, type ServedGateway } from '../../../runtime/agent/ngw/exhaustion';

const EGRESS: ServedGateway = { key: 'default/egress', portRange: { min: 40000, max: 40001 } };
const OTHER: ServedGateway = { key: 'team-b/out', portRange: { min: 40000, max: 40001 } };
const S = 1000;

describe('PortExhaustion (NGW-5)', () => {
  const make = () => new PortExhaustion({ nodeName: 'node-1', quietMs: 60 * S, minIntervalMs: 300 * S });
  const keys = (n: Array<{ key: string }>) => n.map((x) => x.key);

  test('NGW-5: the first look is the baseline; the first rise is one notice per served gateway naming the node, the range and the count; later rises are none', () => {
    const p = make();
    expect(p.observe(50, [EGRESS, OTHER], 0)).toEqual([]);
    expect(p.observe(50, [EGRESS, OTHER], 5 * S)).toEqual([]);
    const first = p.observe(53, [EGRESS, OTHER], 10 * S);
    expect(keys(first)).toEqual(['default/egress', 'team-b/out']);
    expect(first[0]!.note).toBe(
      'NGW-5: the port range 40000-40001 of NATGateway default/egress is exhausted on node node-1: 3 new flow(s) refused (conntrack insert_failed on the node); established flows keep working',
    );
    for (let t = 15; t < 100; t += 5) expect(p.observe(53 + t, [EGRESS, OTHER], t * S)).toEqual([]);
  });

  test('NGW-5: after a quiet spell the next rise is a new exhaustion, reported once the interval has passed since the last notice', () => {
    const p = make();
    p.observe(0, [EGRESS], 0);
    expect(keys(p.observe(1, [EGRESS], 10 * S))).toEqual(['default/egress']);
    // Quiet for 60 s: over. A rise at 100 s is a new exhaustion, but within 300 s of the notice: none.
    expect(p.observe(1, [EGRESS], 75 * S)).toEqual([]);
    expect(p.observe(2, [EGRESS], 100 * S)).toEqual([]);
    // Quiet again, then a rise past the interval: a notice.
    expect(p.observe(2, [EGRESS], 200 * S)).toEqual([]);
    expect(keys(p.observe(4, [EGRESS], 320 * S))).toEqual(['default/egress']);
  });

  test('NGW-5: no served gateway, no notice; a gateway served later starts fresh; a counter that went down is a new baseline', () => {
    const p = make();
    p.observe(0, [], 0);
    expect(p.observe(5, [], 5 * S)).toEqual([]);
    expect(keys(p.observe(6, [OTHER], 10 * S))).toEqual(['team-b/out']);
    expect(p.observe(2, [OTHER, EGRESS], 15 * S)).toEqual([]);
    expect(keys(p.observe(3, [OTHER, EGRESS], 20 * S))).toEqual(['default/egress']);
  });
});
