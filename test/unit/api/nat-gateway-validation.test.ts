// NGW-1's label selectors checked as the API server would take them, and NGW-4's one NATGateway
// per pod (the rule the controller and the node agents share).
import { checkLabelSelector, checkNATGatewaySpec, compareGatewayAge, gatewayOfPod } from '../../../api/validation';

describe('NGW-1: label selectors', () => {
  it.each([
    [{}, []],
    [{ matchLabels: { 'app.kubernetes.io/name': 'crawler', tier: '' } }, []],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a', 'b'] }] }, []],
    [{ matchLabels: { '-bad': 'x' } }, ['spec.podSelector.matchLabels']],
    [{ matchLabels: { 'Bad.Prefix/name': 'x' } }, ['spec.podSelector.matchLabels']],
    [{ matchLabels: { app: 'x'.repeat(64) } }, ['spec.podSelector.matchLabels["app"]']],
    [
      { matchExpressions: [{ key: 'a', operator: 'Like', values: ['x'] }] },
      ['spec.podSelector.matchExpressions[0].operator'],
    ],
    [{ matchExpressions: [{ key: 'a', operator: 'In' }] }, ['spec.podSelector.matchExpressions[0].values']],
    ['app=crawler', ['spec.podSelector']],
  ])('NGW-1: %j -> %j', (selector, fields) => {
    const issues = checkLabelSelector('spec.podSelector', selector, 'NGW-1');
    expect(issues.map((i) => i.field)).toEqual(fields);
    for (const i of issues) expect(i.message).toMatch(/\(NGW-1\)$/);
  });

  it('NGW-1 NGW-2: the spec: podSelector required, requestedIP IPv4, the network a name', () => {
    expect(checkNATGatewaySpec({ externalNetwork: 'lan', podSelector: {} })).toEqual([]);
    expect(
      checkNATGatewaySpec({ externalNetwork: 'Lan!', requestedIP: '1.2.3', nodeSelector: [] }).map((i) => i.field),
    ).toEqual(['spec.externalNetwork', 'spec.requestedIP', 'spec.podSelector', 'spec.nodeSelector']);
  });
});

describe('NGW-4: the oldest NATGateway whose podSelector matches, ties by name', () => {
  const gateways = [
    { name: 'b', creationTimestamp: '2026-01-01T00:00:00Z', podSelector: { matchLabels: { app: 'crawler' } } },
    { name: 'a', creationTimestamp: '2026-01-01T00:00:00Z', podSelector: { matchLabels: { app: 'crawler' } } },
    { name: 'old', creationTimestamp: '2025-12-31T00:00:00Z', podSelector: { matchLabels: { app: 'web' } } },
    { name: 'all', creationTimestamp: '2026-01-02T00:00:00Z', podSelector: {} },
  ].sort(compareGatewayAge);

  it('NGW-4: order by age then name; each pod its gateway', () => {
    expect(gateways.map((g) => g.name)).toEqual(['old', 'a', 'b', 'all']);
    expect(gatewayOfPod({ app: 'crawler' }, gateways)?.name).toBe('a');
    expect(gatewayOfPod({ app: 'web' }, gateways)?.name).toBe('old');
    expect(gatewayOfPod({}, gateways)?.name).toBe('all');
    expect(
      gatewayOfPod(
        { app: 'crawler' },
        [gateways[1]].map((g) => ({ ...g, deleting: true })),
      ),
    ).toBeUndefined();
  });
});
