/**
 * `kubectl-juneau`, a kubectl plugin (`kubectl juneau ...`). Reads the responder's pinned maps
 * on the node it runs on, so it shows what the datapath itself holds (ARP-10), not what the API
 * server says should be there. Needs root (or CAP_BPF) and the host's bpffs.
 */
import * as path from 'node:path';
import { INSTALL } from '../../api/constants';
import { ArpMaps } from '../agent/bpf';
import { PIN_SUBDIR } from '../agent/flags';
import { arpTableRows, guardRows, renderArpTable, renderGuard, renderStats, statsRows } from './format';
import { renderNatCommand } from './nat';

export const CLI_HELP = `Usage: kubectl juneau bpf <command> [flags]

Shows what the Juneau XDP ARP responder holds on THIS node, read from its pinned eBPF
maps (run it on the node, e.g. in the juneau-agent Pod: kubectl exec -n ${INSTALL.namespace}
<agent pod> -- kubectl-juneau bpf dump external_arp_table). Needs root or CAP_BPF.

Commands:
  bpf dump external_arp_table   the addresses this node answers ARP for (ARP-10), with
                                requests, replies, conflicts (RFC 5227: another MAC
                                claimed the address) and the last conflicting MAC
  bpf dump guard                the guard's prefixes (drop: arp AddressPools) and
                                allowed addresses (the interface's own), with hits
  bpf stats                     packets the XDP program saw, by reason
  bpf dump nat                  the ElasticIPs this node translates (nat: to the NIC
                                address) or forwards (direct), with packets and bytes
                                in and out (NAT-5)
  bpf stats nat                 packets the NAT programs saw, by reason

Flags:
  --bpffs DIR          bpffs mount the agent pins under (its --bpffs); maps are read
                       from DIR/${PIN_SUBDIR} (default ${INSTALL.bpffsPath})
  -o, --output FORMAT  table or json (default table)
  -h, --help           print this help and exit
`;

export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

type Command = 'dump-arp-table' | 'dump-guard' | 'stats' | 'dump-nat' | 'nat-stats';

export interface CliRequest {
  readonly command: Command;
  readonly bpffs: string;
  readonly output: 'table' | 'json';
}

/** Parses the plugin's arguments; `help` when asked for or when no command is given. */
export function parseCliArgs(argv: readonly string[]): CliRequest | 'help' {
  const words: string[] = [];
  let bpffs: string = INSTALL.bpffsPath;
  let output: 'table' | 'json' = 'table';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') return 'help';
    const match = /^(--bpffs|-o|--output)(?:=(.*))?$/.exec(arg);
    if (match) {
      const value = match[2] ?? argv[++i];
      if (value === undefined) throw new Error(`${match[1]} needs a value`);
      if (match[1] === '--bpffs') bpffs = value;
      else if (value === 'table' || value === 'json') output = value;
      else throw new Error(`${match[1]} must be table or json, not '${value}'`);
    } else if (arg.startsWith('-')) {
      throw new Error(`unknown flag ${arg} (see --help)`);
    } else {
      words.push(arg);
    }
  }
  if (words.length === 0) return 'help';
  const command = words.join(' ');
  if (command === 'bpf dump external_arp_table') return { command: 'dump-arp-table', bpffs, output };
  if (command === 'bpf dump guard') return { command: 'dump-guard', bpffs, output };
  if (command === 'bpf stats') return { command: 'stats', bpffs, output };
  if (command === 'bpf dump nat') return { command: 'dump-nat', bpffs, output };
  if (command === 'bpf stats nat') return { command: 'nat-stats', bpffs, output };
  throw new Error(`unknown command '${command}' (see --help)`);
}

export function main(argv: readonly string[], io: CliIO = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) }): number {
  let request: CliRequest | 'help';
  try {
    request = parseCliArgs(argv);
  } catch (err) {
    io.stderr(`kubectl-juneau: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  if (request === 'help') {
    io.stdout(CLI_HELP);
    return 0;
  }
  const pinDir = path.join(request.bpffs, PIN_SUBDIR);
  if (request.command === 'dump-nat' || request.command === 'nat-stats') {
    try {
      io.stdout(renderNatCommand(request.command, pinDir, request.output));
      return 0;
    } catch (err) {
      io.stderr(`kubectl-juneau: cannot read the NAT maps in ${pinDir} (is juneau-agent running on this node, and are you root?): ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
  }
  let maps: ArpMaps;
  try {
    maps = ArpMaps.openPinned(pinDir);
  } catch (err) {
    io.stderr(`kubectl-juneau: cannot open the responder's maps in ${pinDir} (is juneau-agent running on this node, and are you root?): ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  try {
    io.stdout(render(request, maps));
    return 0;
  } finally {
    maps.close();
  }
}

function render(request: CliRequest, maps: ArpMaps): string {
  const json = (rows: unknown) => JSON.stringify(rows, null, 2) + '\n';
  switch (request.command) {
    case 'dump-arp-table': {
      // process.hrtime is CLOCK_MONOTONIC on Linux, the clock of bpf_ktime_get_ns().
      const rows = arpTableRows(maps.addresses(), process.hrtime.bigint());
      return request.output === 'json' ? json(rows) : renderArpTable(rows);
    }
    case 'dump-guard': {
      const rows = guardRows(maps.guardEntries());
      return request.output === 'json' ? json(rows) : renderGuard(rows);
    }
    case 'stats': {
      const rows = statsRows(maps.stats());
      return request.output === 'json' ? json(rows) : renderStats(rows);
    }
    default:
      throw new Error(`${request.command} is not an ARP map command`);
  }
}

if (require.main === module) {
  process.exitCode = main(process.argv.slice(2));
}
