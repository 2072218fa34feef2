/**
 * `kubectl-juneau`, a kubectl plugin (`kubectl juneau ...`). `bpf` reads the responder's pinned
 * maps on the node it runs on (or, with --node, in that node's agent Pod), so it shows what the
 * datapath itself holds (ARP-10), not what the API server says should be there; that needs root
 * (or CAP_BPF) and the host's bpffs. `status` and `why` read the API server.
 */
import { renderAnnounceCommand } from './announce';
import * as path from 'node:path';
import { INSTALL } from '../../api/constants';
import { ArpMaps } from '../agent/bpf';
import { PIN_SUBDIR } from '../agent/bpf/pins';
import { describeStartupError } from '../kube/startup-errors';
import { versionLine } from '../kube/version';
import { parseCommandLine, type CommandLine } from './args';
import { arpTableRows, guardRows, renderArpTable, renderGuard, renderStats, statsRows } from './format';
import { connect } from './kube';
import { renderNatCommand } from './nat';
import { findAgentPod, kubectlExecArgs, runKubectl } from './node-exec';
import { readStatus, renderStatus } from './status';
import { explain } from './why';

export const CLI_HELP = `Usage: kubectl juneau <command> [flags]

Commands:
  status                        every address (ElasticIPs, ServiceLoadBalancers) with its
                                network, owner, phase and the node answering ARP for it
                                (from the ARPAdvertisements); -A for all namespaces,
                                -o table|json
  why <kind>/<name>             why an object is Pending, Error or Degraded: its conditions,
                                Warning Events and the objects it depends on (network,
                                pools, attachment, ARPAdvertisement). Kinds: elasticip (eip),
                                serviceloadbalancer (slb) or service (svc),
                                elasticipattachment (eipa), networkinterface (nic),
                                addresspool (ap), externalnetwork (extnet),
                                arpadvertisement (arpad)

The bpf commands show what the Juneau XDP ARP responder holds on THIS node, read from its
pinned eBPF maps (run on the node, or in the juneau-agent Pod; needs root or CAP_BPF).
With --node NAME they run in that node's juneau-agent Pod for you (kubectl exec; -n names
Juneau's namespace, default ${INSTALL.namespace}).
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
  bpf dump announcements        FO-1: per address this node gained on an announceOnMove
                                network, the RFC 5227 probes and announcements it sent,
                                handovers that gave up (another MAC kept answering)

Flags:
  --node NAME              bpf: run in the juneau-agent Pod of node NAME
  --bpffs DIR              bpf: bpffs mount the agent pins under (its --bpffs); maps are
                           read from DIR/${PIN_SUBDIR} (default ${INSTALL.bpffsPath})
  -o, --output FORMAT      table or json (default table)
  --kubeconfig PATH        kubeconfig file (default: $KUBECONFIG, else in-cluster, else
                           ~/.kube/config)
  --context NAME           the kubeconfig context to use (default: its current one)
  -n, --namespace NS       namespace (default: the context's, else default)
  -A, --all-namespaces     status: every namespace
  --version                print the version and exit
  -h, --help               print this help and exit
`;

export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

type Command = 'dump-arp-table' | 'dump-guard' | 'stats' | 'dump-nat' | 'nat-stats' | 'dump-announcements';

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
  if (command === 'bpf dump announcements') return { command: 'dump-announcements', bpffs, output };
  throw new Error(`unknown command '${command}' (see --help)`);
}

const processIO: CliIO = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };

/** Exit codes: 0 done, 1 could not (API server, maps, no agent Pod), 2 bad command line. */
export async function main(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  let line: CommandLine;
  let bpf: CliRequest | 'help' | undefined;
  try {
    line = parseCommandLine(argv);
    if (line.command === 'bpf') bpf = parseCliArgs(line.rest);
  } catch (err) {
    io.stderr(`kubectl-juneau: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  if (line.command === 'help' || bpf === 'help') {
    io.stdout(CLI_HELP);
    return 0;
  }
  if (line.command === 'version') {
    io.stdout(versionLine('kubectl-juneau'));
    return 0;
  }
  if (line.command === 'bpf' && bpf && !line.node) return dumpLocal(bpf, io);
  return remote(line, io);
}

/** The commands that talk to the API server. */
async function remote(line: Exclude<CommandLine, { command: 'help' | 'version' }>, io: CliIO): Promise<number> {
  let server: string | undefined;
  try {
    const kube = connect(line.kube, io.env ?? process.env);
    server = kube.server;
    switch (line.command) {
      case 'status': {
        const rows = await readStatus(kube.rest, line.kube.allNamespaces ? undefined : kube.namespace);
        io.stdout(
          line.output === 'json' ? JSON.stringify(rows, null, 2) + '\n' : renderStatus(rows, line.kube.allNamespaces),
        );
        return 0;
      }
      case 'why':
        io.stdout(await explain(kube.rest, kube.namespace, line.target));
        return 0;
      case 'bpf': {
        const namespace = line.kube.namespace ?? INSTALL.namespace;
        const found = await findAgentPod(kube.rest, namespace, line.node as string);
        if (!found.ok) {
          io.stderr(`kubectl-juneau: ${found.message}\n`);
          return 1;
        }
        io.stderr(`kubectl-juneau: running in Pod ${namespace}/${found.pod} on node ${line.node}\n`);
        return await runKubectl(kubectlExecArgs(line.kube, namespace, found.pod, line.rest), io.env ?? process.env);
      }
    }
  } catch (err) {
    io.stderr(`kubectl-juneau: ${describeStartupError(err, server)}\n`);
    return 1;
  }
}

/** bpf on this node: the pinned maps read directly. */
function dumpLocal(request: CliRequest, io: CliIO): number {
  const pinDir = path.join(request.bpffs, PIN_SUBDIR);
  if (request.command === 'dump-nat' || request.command === 'nat-stats') {
    try {
      io.stdout(renderNatCommand(request.command, pinDir, request.output));
      return 0;
    } catch (err) {
      io.stderr(
        `kubectl-juneau: cannot read the NAT maps in ${pinDir} (is juneau-agent running on this node, and are you root?): ${err instanceof Error ? err.message : String(err)}\n`,
      );
      return 1;
    }
  }
  if (request.command === 'dump-announcements') {
    try {
      io.stdout(renderAnnounceCommand(pinDir, request.output));
      return 0;
    } catch (err) {
      io.stderr(
        `kubectl-juneau: cannot read the announcement counters in ${pinDir} (is juneau-agent running on this node, and are you root?): ${err instanceof Error ? err.message : String(err)}\n`,
      );
      return 1;
    }
  }
  let maps: ArpMaps;
  try {
    maps = ArpMaps.openPinned(pinDir);
  } catch (err) {
    io.stderr(
      `kubectl-juneau: cannot open the responder's maps in ${pinDir} (is juneau-agent running on this node, and are you root?): ${err instanceof Error ? err.message : String(err)}\n`,
    );
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
  // process.exit, not exitCode: the API client's keep-alive sockets would hold the process open.
  void main(process.argv.slice(2)).then((code) => process.stdout.write('', () => process.exit(code)));
}
