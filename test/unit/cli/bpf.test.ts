// kubectl-juneau (ARP-10): argument parsing and the renderings of the pinned maps.
import { CLI_HELP, parseCliArgs } from '../../../runtime/cli/main';
import { arpTableRows, guardRows, renderArpTable, renderGuard, statsRows } from '../../../runtime/cli/format';

describe('kubectl juneau', () => {
  test('ARP-10: bpf dump external_arp_table, with --bpffs and -o json', () => {
    expect(parseCliArgs(['bpf', 'dump', 'external_arp_table'])).toEqual({
      command: 'dump-arp-table',
      bpffs: '/sys/fs/bpf',
      output: 'table',
    });
    expect(parseCliArgs(['bpf', 'dump', 'external_arp_table', '--bpffs', '/sys/fs/bpf/x', '-o', 'json'])).toEqual({
      command: 'dump-arp-table',
      bpffs: '/sys/fs/bpf/x',
      output: 'json',
    });
    expect(parseCliArgs(['bpf', 'dump', 'guard', '--output=json'])).toMatchObject({
      command: 'dump-guard',
      output: 'json',
    });
    expect(parseCliArgs(['bpf', 'stats'])).toMatchObject({ command: 'stats' });
  });

  test('help and errors', () => {
    expect(parseCliArgs([])).toBe('help');
    expect(parseCliArgs(['bpf', '--help'])).toBe('help');
    expect(() => parseCliArgs(['bpf', 'dump', 'nothing'])).toThrow("unknown command 'bpf dump nothing'");
    expect(() => parseCliArgs(['bpf', 'stats', '-o', 'yaml'])).toThrow("-o must be table or json, not 'yaml'");
    expect(CLI_HELP).toContain('bpf dump external_arp_table');
  });

  test('the table: sorted by address, counters, last conflicting MAC and how long ago', () => {
    const entries = new Map([
      ['192.0.2.100', { requests: 3n, replies: 3n, conflicts: 0n, lastConflictNs: 0n, lastConflictMac: undefined }],
      [
        '192.0.2.9',
        {
          requests: 10n,
          replies: 9n,
          conflicts: 2n,
          lastConflictNs: 1_000_000_000n,
          lastConflictMac: '02:00:00:00:00:99',
        },
      ],
    ]);
    const rows = arpTableRows(entries, 31_000_000_000n);
    expect(rows).toEqual([
      {
        address: '192.0.2.9',
        requests: 10,
        replies: 9,
        conflicts: 2,
        lastConflictMac: '02:00:00:00:00:99',
        lastConflictSecondsAgo: 30,
      },
      {
        address: '192.0.2.100',
        requests: 3,
        replies: 3,
        conflicts: 0,
        lastConflictMac: null,
        lastConflictSecondsAgo: null,
      },
    ]);
    expect(renderArpTable(rows)).toBe(
      [
        'ADDRESS       REQUESTS   REPLIES   CONFLICTS   LAST CONFLICT MAC   LAST CONFLICT',
        '192.0.2.9     10         9         2           02:00:00:00:00:99   30s ago',
        '192.0.2.100   3          3         0           -                   -',
        '',
      ].join('\n'),
    );
  });

  test('guard and stats rows', () => {
    const rows = guardRows([
      { address: '192.0.2.1', prefixLength: 32, action: 'allow', hits: 2n },
      { address: '192.0.2.0', prefixLength: 25, action: 'drop', hits: 60n },
    ]);
    expect(renderGuard(rows)).toBe(
      'PREFIX         ACTION   HITS\n192.0.2.0/25   drop     60\n192.0.2.1/32   allow    2\n',
    );
    expect(statsRows({ JUNEAU_TX_REPLY: 5n } as never)).toEqual([{ reason: 'tx_reply', packets: 5 }]);
  });
});
