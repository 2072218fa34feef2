// BGP-7: why a session with a TCP MD5 password is down, from the kernel's drop counters
// (tcp-md5.ts), in the BGPNodeState (node-state.ts) and in an Event on the BGPPeer
// (node-state-writer.ts), which BIRD alone cannot say: its connections only time out.
import { silentLogger } from '../../../runtime/kube/log';
import { nodeStateStatus } from '../../../runtime/agent/bgp/node-state';
import { NodeStateWriter } from '../../../runtime/agent/bgp/node-state-writer';
import { Md5Drops, parseMd5Counters, type Md5Counters } from '../../../runtime/agent/bgp/tcp-md5';

const netstat = (c: Md5Counters) =>
  `TcpExt: SyncookiesSent TCPMD5NotFound TCPMD5Unexpected TCPMD5Failure TCPAckCompressed\n` +
  `TcpExt: 7 ${c.notFound} ${c.unexpected} ${c.failure} 3\n` +
  `IpExt: InNoRoutes InTruncatedPkts\nIpExt: 0 0\n`;

const WHERE = 'Secret juneau-system/router-password key password (spec.passwordSecretRef)';

describe('TCP MD5 drops (BGP-7)', () => {
  test('the TcpExt MD5 counters are read by name from /proc/net/netstat text; text without them reads as nothing', () => {
    expect(parseMd5Counters(netstat({ failure: 4, notFound: 2, unexpected: 1 }))).toEqual({
      failure: 4,
      notFound: 2,
      unexpected: 1,
    });
    expect(parseMd5Counters('IpExt: InNoRoutes\nIpExt: 0\n')).toBeUndefined();
    expect(parseMd5Counters('TcpExt: SyncookiesSent\nTcpExt: 0\n')).toBeUndefined();
  });

  test('BGP-7: a rise while a password peer is down is charged to it and said, naming the Secret; an Established peer and the counts before are not; up again, it starts from zero', () => {
    const drops = new Md5Drops();
    const down = [
      { name: 'router', established: false, password: WHERE },
      { name: 'plain', established: false },
      { name: 'up', established: true, password: WHERE },
    ];
    drops.update({ failure: 10, notFound: 0, unexpected: 0 }, down);
    // The counts before the first pass are no one's.
    expect(drops.explanations(down)).toEqual(new Map());
    drops.update({ failure: 13, notFound: 0, unexpected: 0 }, down);
    expect(drops.explanations(down)).toEqual(
      new Map([
        [
          'router',
          `TCP MD5: the kernel dropped segments since the session was last up: with a wrong signature (TCPMD5Failure): the router's password is not the one in ${WHERE}`,
        ],
      ]),
    );
    // More drops: the same text (the status is not rewritten at every pass).
    const before = drops.explanations(down).get('router');
    drops.update({ failure: 20, notFound: 0, unexpected: 0 }, down);
    expect(drops.explanations(down).get('router')).toBe(before);
    // The router's password removed: signatures missing; a peer without a password and a signature: unexpected.
    drops.update({ failure: 20, notFound: 2, unexpected: 1 }, down);
    const said = drops.explanations(down);
    expect(said.get('router')).toContain(
      `without a signature (TCPMD5NotFound): the router has no password, ${WHERE} sets one`,
    );
    expect(said.get('plain')).toBe(
      'TCP MD5: the kernel dropped segments since the session was last up: with a signature (TCPMD5Unexpected): the router has a password and the BGPPeer none (spec.passwordSecretRef)',
    );
    const upAgain = down.map((p) => ({ ...p, established: true }));
    drops.update({ failure: 20, notFound: 2, unexpected: 1 }, upAgain);
    drops.update({ failure: 20, notFound: 2, unexpected: 1 }, down);
    expect(drops.explanations(down)).toEqual(new Map());
  });

  test("BGP-7: the BGPNodeState's lastError carries the explanation after BIRD's own error, for a peer that is not Established only", () => {
    const now = new Date('2026-12-02T10:00:00Z');
    const why = new Map([
      ['a', 'TCP MD5: wrong'],
      ['b', 'TCP MD5: wrong'],
    ]);
    const status = nodeStateStatus(
      ['a', 'b'],
      [
        {
          protocol: 'a',
          peer: 'a',
          protocolState: 'start',
          state: 'Active',
          info: '',
          prefixesExported: 0,
          prefixesImported: 0,
          lastError: 'Socket: Connection timed out',
        },
        {
          protocol: 'b',
          peer: 'b',
          protocolState: 'up',
          state: 'Established',
          info: '',
          prefixesExported: 1,
          prefixesImported: 0,
        },
      ],
      [],
      undefined,
      now,
      why,
    );
    expect(status.peers?.map((p) => [p.peer, p.lastError])).toEqual([
      ['a', 'Socket: Connection timed out; TCP MD5: wrong'],
      ['b', undefined],
    ]);
  });

  test('BGP-7: a Warning Event on the BGPPeer when the session goes down, and one of its own reason when a down session gets a new last error', async () => {
    const warnings: string[] = [];
    const writer = new NodeStateWriter({
      rest: { patch: async () => ({}) } as never,
      nodeName: 'n1',
      recorder: {
        normal: () => undefined,
        warning: (_ref: unknown, reason: string, _action: string, note: string) =>
          void warnings.push(`${reason}: ${note}`),
      } as never,
      logger: silentLogger,
      minIntervalMs: 0,
    });
    const peer = (state: string, lastError?: string) => ({
      peers: [{ peer: 'router', state, prefixesSent: 0, lastTransitionTime: 'x', ...(lastError ? { lastError } : {}) }],
      announced: { count: 0, addresses: [] },
    });
    const write = async (s: ReturnType<typeof peer>) => {
      writer.offer(s as never);
      await new Promise((r) => setTimeout(r, 20));
    };
    await write(peer('Established'));
    await write(peer('Active'));
    await write(peer('Active', 'TCP MD5: wrong signature'));
    await write(peer('Connect', 'TCP MD5: wrong signature'));
    await writer.stop();
    expect(warnings).toEqual([
      'BGPSessionDown: node n1: session Active (BGP-7)',
      'BGPSessionError: node n1: session Active: TCP MD5: wrong signature (BGP-7)',
    ]);
  });
});
