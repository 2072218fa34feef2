// kubectl-juneau (ARP-10): the bpf command table, its command lines, and the renderings of the pinned maps.
import * as os from 'node:os';
import { parseCommandLine } from '../../../runtime/cli/args';
import { BPF_COMMANDS } from '../../../runtime/cli/bpf';
import { CLI_HELP, main } from '../../../runtime/cli/main';
import { arpTableRows, guardRows, renderArpTable, renderGuard, statsRows } from '../../../runtime/cli/format';

const bpf = (argv: string[]) => {
  const line = parseCommandLine(argv);
  if (line.command !== 'bpf') throw new Error(`bpf expected, got ${line.command}`);
  return { words: line.bpf.words, bpffs: line.bpffs, output: line.output };
};

describe('kubectl juneau', () => {
  test('ARP-10: bpf dump external_arp_table, with --bpffs and -o json', () => {
    expect(bpf(['bpf', 'dump', 'external_arp_table'])).toEqual({
      words: 'bpf dump external_arp_table',
      bpffs: '/sys/fs/bpf',
      output: 'table',
    });
    expect(bpf(['bpf', 'dump', 'external_arp_table', '--bpffs', '/sys/fs/bpf/x', '-o', 'json'])).toEqual({
      words: 'bpf dump external_arp_table',
      bpffs: '/sys/fs/bpf/x',
      output: 'json',
    });
    expect(bpf(['bpf', 'dump', 'guard', '--output=json'])).toMatchObject({ words: 'bpf dump guard', output: 'json' });
    expect(bpf(['bpf', 'stats', '-o=json'])).toMatchObject({ words: 'bpf stats', output: 'json' });
  });

  test('every command of the table parses, and the help names it', () => {
    expect(BPF_COMMANDS.map((c) => c.words)).toEqual([
      'bpf dump external_arp_table',
      'bpf dump guard',
      'bpf stats',
      'bpf dump nat',
      'bpf stats nat',
      'bpf dump nat-pod-devices',
      'bpf dump announcements',
    ]);
    for (const c of BPF_COMMANDS) {
      expect(bpf(c.words.split(' ')).words).toBe(c.words);
      expect(CLI_HELP).toContain(`  ${c.words} `);
    }
  });

  test('help and errors', () => {
    expect(parseCommandLine([])).toEqual({ command: 'help' });
    expect(parseCommandLine(['bpf', '--help'])).toEqual({ command: 'help' });
    expect(() => parseCommandLine(['bpf', 'dump', 'nothing'])).toThrow("unknown command 'bpf dump nothing'");
    expect(() => parseCommandLine(['bpf'])).toThrow("unknown command 'bpf'");
    expect(() => parseCommandLine(['bpf', 'stats', '-o', 'yaml'])).toThrow("-o must be table or json, not 'yaml'");
    expect(() => parseCommandLine(['status', '--bpffs', '/x'])).toThrow(
      "--bpffs applies to bpf commands only, not 'status'",
    );
  });

  test.each(BPF_COMMANDS.map((c) => [c.words, c.reads]))(
    '%s without pinned maps: exit 1, naming %s and the directory',
    async (words, reads) => {
      const bpffs = os.tmpdir();
      let err = '';
      const io = { stdout: () => undefined, stderr: (t: string) => (err += t) };
      expect(await main([...words.split(' '), '--bpffs', bpffs], io)).toBe(1);
      expect(err).toMatch(
        new RegExp(
          `^kubectl-juneau: cannot read ${reads} in ${bpffs}/juneau/v1 \\(is juneau-agent running on this node, and are you root\\?\\): `,
        ),
      );
    },
  );

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
