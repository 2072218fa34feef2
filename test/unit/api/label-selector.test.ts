// SEC-9: the label selector of ExternalNetwork spec.allowedNamespaces, evaluated as the API server does.
import { formatSelector, selectorMatches } from '../../../api/validation';
import { renderExternalNetwork } from '../../../constructs/shared/kinds';

describe('SEC-9: selectorMatches', () => {
  const labels = { team: 'blue', tier: 'web' };
  it.each([
    [{}, true],
    [{ matchLabels: { team: 'blue' } }, true],
    [{ matchLabels: { team: 'red' } }, false],
    [{ matchExpressions: [{ key: 'team', operator: 'In', values: ['red', 'blue'] }] }, true],
    [{ matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['blue'] }] }, false],
    [{ matchExpressions: [{ key: 'owner', operator: 'NotIn', values: ['x'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, false],
    [{ matchLabels: { team: 'blue' }, matchExpressions: [{ key: 'owner', operator: 'Exists' }] }, false],
  ])('SEC-9: %j on team=blue,tier=web is %s', (selector, expected) => {
    expect(selectorMatches(selector, labels)).toBe(expected);
  });

  it('SEC-9: messages spell the selector as kubectl -l does', () => {
    expect(
      formatSelector({
        matchLabels: { a: 'b' },
        matchExpressions: [
          { key: 'c', operator: 'In', values: ['d', 'e'] },
          { key: 'f', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('a=b,c in (d,e),!f');
  });

  it('SEC-9: the constructs render allowedNamespaces into the spec, and leave it out when not given', () => {
    const allowedNamespaces = { matchLabels: { team: 'blue' } };
    expect(renderExternalNetwork('n', { type: 'arp', addressPools: ['p'], allowedNamespaces }).spec).toEqual({
      type: 'arp',
      addressPools: ['p'],
      allowedNamespaces,
    });
    expect(renderExternalNetwork('n', { type: 'arp', addressPools: ['p'] }).spec).not.toHaveProperty(
      'allowedNamespaces',
    );
  });
});
