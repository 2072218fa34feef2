// `kubectl juneau bgp --node NAME` (runtime/cli/bgp.ts, args.ts): its command line and what it
// prints from a node's BGPNodeState.
import { parseCommandLine } from '../../../runtime/cli/args';
import { renderNodeBgp } from '../../../runtime/cli/bgp';

describe('kubectl juneau bgp', () => {
  test('BGP-7: bgp needs --node and takes no arguments', () => {
    expect(parseCommandLine(['bgp', '--node', 'n1'])).toMatchObject({ command: 'bgp', node: 'n1', output: 'table' });
    expect(() => parseCommandLine(['bgp'])).toThrow('bgp needs --node NAME');
    expect(() => parseCommandLine(['bgp', 'n1', '--node', 'n1'])).toThrow("bgp takes no arguments, got 'n1'");
  });

  test('BGP-7: sessions with state, uptime, prefixes sent and last error; the announced addresses', () => {
    const now = new Date('2026-12-02T10:00:00Z');
    const text = renderNodeBgp(
      {
        node: 'n1',
        state: {
          apiVersion: 'juneau.loutres.me/v1alpha1',
          kind: 'BGPNodeState',
          metadata: { name: 'n1' },
          spec: { nodeName: 'n1' },
          status: {
            peers: [
              { peer: 'tor-a', state: 'Established', establishedSince: '2026-12-02T09:55:00Z', prefixesSent: 3 },
              { peer: 'tor-b', state: 'Active', prefixesSent: 0, lastError: 'Socket: Connection refused' },
            ],
            announced: { count: 3, addresses: ['198.18.0.1-198.18.0.2', '198.18.0.9'] },
            updatedAt: '2026-12-02T09:59:58Z',
          },
        },
      },
      now,
    );
    expect(text).toBe(
      [
        'node n1 (reported 2s ago)',
        '',
        'PEER    STATE         UPTIME   PREFIXES SENT   LAST ERROR',
        'tor-a   Established   5m       3',
        'tor-b   Active        -        0               Socket: Connection refused',
        '',
        'announced: 3 address(es): 198.18.0.1-198.18.0.2, 198.18.0.9',
        '',
      ].join('\n'),
    );
    expect(renderNodeBgp({ node: 'n2', state: undefined }, now)).toContain('node n2: no BGPNodeState');
  });
});
