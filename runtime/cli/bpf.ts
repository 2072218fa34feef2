/**
 * The `bpf` commands: what each reads from the pinned maps and how it shows them. One table serves
 * the help (./main.ts CLI_HELP), the command line (./args.ts) and the error when the maps cannot
 * be read, so a new command is one entry here.
 */
import { AnnounceCounters } from '../agent/announce/counters';
import { ArpMaps } from '../agent/bpf';
import { NatMaps, natFilters, natPinnedDevices } from '../agent/bpf/nat';
import { linkByIndex } from '../agent/netlink';
import { announceRows, renderAnnounce } from './announce';
import { arpTableRows, guardRows, renderArpTable, renderGuard, renderStats, statsRows, table } from './format';
import { natRows, natStatsRows, renderNat } from './nat';

interface Closable {
  close(): void;
}

/** One `bpf` command: its words, its help, the maps it opens, their rows and the table of them. */
export interface BpfCommand<M extends Closable = Closable, R = unknown> {
  /** As typed: `bpf dump guard`. */
  readonly words: string;
  /** The lines of its help entry. */
  readonly help: readonly string[];
  /** What it reads, for the error when that fails: `the NAT maps`. */
  readonly reads: string;
  readonly open: (pinDir: string) => M;
  readonly rows: (maps: M) => R;
  /** The table (`-o table`); `-o json` prints the rows as they are. */
  readonly render: (rows: R) => string;
}

/** Checks one entry's open, rows and render against each other, then files it with the others. */
const command = <M extends Closable, R>(c: BpfCommand<M, R>): BpfCommand => c as unknown as BpfCommand;

// process.hrtime is CLOCK_MONOTONIC on Linux, the clock of bpf_ktime_get_ns().
const now = () => process.hrtime.bigint();

type Entry<M extends Closable, R> = Pick<BpfCommand<M, R>, 'words' | 'help' | 'rows' | 'render'>;
/** A command over the XDP responder's maps. */
const arp = <R>(c: Entry<ArpMaps, R>) =>
  command({ ...c, reads: "the responder's maps", open: (pinDir) => ArpMaps.openPinned(pinDir) });
/** A command over the NAT programs' maps. */
const nat = <R>(c: Entry<NatMaps, R>) =>
  command({ ...c, reads: 'the NAT maps', open: (pinDir) => NatMaps.openPinned(pinDir) });

export const BPF_COMMANDS: readonly BpfCommand[] = [
  arp({
    words: 'bpf dump external_arp_table',
    help: [
      'the addresses this node answers ARP for (ARP-10), with',
      'requests, replies, conflicts (RFC 5227: another MAC',
      'claimed the address) and the last conflicting MAC',
    ],
    rows: (maps) => arpTableRows(maps.addresses(), now()),
    render: renderArpTable,
  }),
  arp({
    words: 'bpf dump guard',
    help: ["the guard's prefixes (drop: arp AddressPools) and", "allowed addresses (the interface's own), with hits"],
    rows: (maps) => guardRows(maps.guardEntries()),
    render: renderGuard,
  }),
  arp({
    words: 'bpf stats',
    help: ['packets the XDP program saw, by reason'],
    rows: (maps) => statsRows(maps.stats()),
    render: renderStats,
  }),
  nat({
    words: 'bpf dump nat',
    help: [
      'the ElasticIPs this node translates (nat: to the NIC',
      'address) or forwards (direct), with packets and bytes',
      'in and out (NAT-5)',
    ],
    rows: (maps) => natRows(maps.entries()),
    render: renderNat,
  }),
  nat({
    words: 'bpf stats nat',
    help: ['packets the NAT programs saw, by reason'],
    rows: (maps) => natStatsRows(maps.stats()),
    render: renderStats,
  }),
  command({
    words: 'bpf dump nat-pod-devices',
    help: [
      'the devices the pod-side NAT program (tc_nat_pod) is on:',
      "found from the pods' routes, or natPodInterfaces",
      '(NAT-2, NAT-4), with its program id (0: not attached)',
    ],
    reads: 'the NAT maps',
    // The maps opened only to say, as the other NAT commands do, when the agent left none here.
    open: (pinDir) => {
      NatMaps.openPinned(pinDir).close();
      return { pinDir, close: () => undefined };
    },
    rows: ({ pinDir }) =>
      natPinnedDevices(pinDir, 'pod').map((ifindex) => ({
        ifindex,
        device: linkByIndex(ifindex)?.name ?? '(gone)',
        programId: linkByIndex(ifindex) ? natFilters(ifindex).pod : 0,
      })),
    render: (rows) =>
      table(
        ['IFINDEX', 'DEVICE', 'PROGRAM ID'],
        rows.map((r) => [String(r.ifindex), r.device, String(r.programId)]),
      ),
  }),
  command({
    words: 'bpf dump announcements',
    help: [
      'FO-1: per address this node gained on an announceOnMove',
      'network, the RFC 5227 probes and announcements it sent,',
      'handovers that gave up (another MAC kept answering)',
    ],
    reads: 'the announcement counters',
    open: (pinDir) => AnnounceCounters.openPinned(pinDir),
    rows: (counters) => announceRows(counters.entries(), now()),
    render: renderAnnounce,
  }),
];

/** The command `words` name, or undefined. */
export const bpfCommand = (words: string): BpfCommand | undefined => BPF_COMMANDS.find((c) => c.words === words);

/** The command's output from the maps pinned in `pinDir`; throws when they cannot be read. */
export function showBpf(c: BpfCommand, pinDir: string, output: 'table' | 'json'): string {
  const maps = c.open(pinDir);
  try {
    const rows = c.rows(maps);
    return output === 'json' ? JSON.stringify(rows, null, 2) + '\n' : c.render(rows);
  } finally {
    maps.close();
  }
}

/** The help entries of every command, in the help's two columns. */
export function bpfHelp(): string {
  return BPF_COMMANDS.map(
    (c) =>
      c.help.map((line, i) => (i === 0 ? `  ${c.words.padEnd(30)}${line}` : `${' '.repeat(32)}${line}`)).join('\n') +
      '\n',
  ).join('');
}
