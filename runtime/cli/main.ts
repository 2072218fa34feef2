/**
 * `kubectl-juneau`, a kubectl plugin (`kubectl juneau ...`). `bpf` reads the responder's pinned
 * maps on the node it runs on (or, with --node, in that node's agent Pod), so it shows what the
 * datapath itself holds (ARP-10), not what the API server says should be there; that needs root
 * (or CAP_BPF) and the host's bpffs. `status` and `why` read the API server; `uninstall`
 * (./uninstall.ts) removes the install in the order its finalizers need.
 */
import * as path from 'node:path';
import { INSTALL } from '../../api/constants';
import { PIN_SUBDIR } from '../agent/bpf/pins';
import { describeStartupError } from '../kube/startup-errors';
import { versionLine } from '../kube/version';
import { parseCommandLine, type CommandLine } from './args';
import { bpfHelp, showBpf } from './bpf';
import { connect } from './kube';
import { findAgentPod, kubectlExecArgs, kubectlOutput, runKubectl } from './node-exec';
import { FLOW_LIST_LIMIT, findGatewayNode, localNgw, renderNgw, type NgwNodeView, type NgwView } from './ngw';
import type { CliKube } from './kube';
import { readStatus, renderStatus } from './status';
import { uninstall } from './uninstall';
import { UNINSTALL_HELP } from './uninstall-args';
import { explain } from './why';
import { readNodeBgp, renderNodeBgp } from './bgp';
import { cleanupNode } from '../agent/liveness/cleanup-node';

export const CLI_HELP = `Usage: kubectl juneau <command> [flags]

Commands:
  status                        every address (ElasticIPs, ServiceLoadBalancers) with its
                                network, owner, phase and the node answering ARP for it
                                (from the ARPAdvertisements); -A for all namespaces,
                                -o table|json
  why <kind>/<name>             why an object is Pending, Error or Degraded: its conditions,
                                Warning Events and the objects it depends on (network,
                                pools, attachment, ARPAdvertisement; on a bgp network the
                                nodes announcing its address and why the others do not,
                                from their BGPNodeStates). Kinds: elasticip (eip),
                                serviceloadbalancer (slb) or service (svc),
                                elasticipattachment (eipa), networkinterface (nic),
                                addresspool (ap), externalnetwork (extnet),
                                arpadvertisement (arpad), natgateway (ngw)
  bgp --node NAME               BGP-7: the node's BGP sessions (per BGPPeer: state, uptime,
                                prefixes sent, last error) and the addresses it announces,
                                from its BGPNodeState; -o table|json
  why <address>                 who holds the address (its AllocationClaim), then that
                                holder explained as above (a NATGateway: its gateway node)
  ngw NAMESPACE/NAME            NGW-8: a NATGateway's address and gateway node, and, read
                                on that node (in its juneau-agent Pod, kubectl exec): its
                                flows by protocol, the ports they hold out of its range,
                                the packets that opened flows, and the node's drops (new
                                flows refused for want of a port, NGW-5); --flows lists
                                the first ${FLOW_LIST_LIMIT} flows; -o table|json. Also natgateway NAME
                                (-n its namespace)
${UNINSTALL_HELP}
The bpf commands show what the Juneau XDP ARP responder holds on THIS node, read from its
pinned eBPF maps (run on the node, or in the juneau-agent Pod; needs root or CAP_BPF).
With --node NAME they run in that node's juneau-agent Pod for you (kubectl exec; -n names
Juneau's namespace, default ${INSTALL.namespace}).
${bpfHelp()}
  cleanup-node                  on THIS node (as root, in the host's network namespace),
                                for a node whose agent missed the uninstall: detaches
                                Juneau's XDP responder and NAT filters from every
                                interface it pinned them for, deletes its VXLAN device
                                and removes every pin under --bpffs/juneau. Run it after
                                the DaemonSet is gone, e.g. kubectl debug node/NAME
                                --profile=sysadmin --image=<the agent image> --
                                kubectl-juneau cleanup-node --bpffs /host/sys/fs/bpf

Flags:
  --node NAME              bpf: run in the juneau-agent Pod of node NAME; bgp: the node
  --bpffs DIR              bpf, cleanup-node: bpffs mount the agent pins under (its --bpffs); maps are
                           read from DIR/${PIN_SUBDIR} (default ${INSTALL.bpffsPath})
  -o, --output FORMAT      table or json (default table)
  --kubeconfig PATH        kubeconfig file (default: $KUBECONFIG, else in-cluster, else
                           ~/.kube/config)
  --context NAME           the kubeconfig context to use (default: its current one)
  -n, --namespace NS       namespace (default: the context's, else default)
  -A, --all-namespaces     status: every namespace
  --flows                  ngw: list the flows too (at most ${FLOW_LIST_LIMIT})
  --local                  ngw: read on THIS node (what the agent Pod runs; root, the
                           host's network namespace)
  -f, --filename FILE[,FILE]  uninstall: the install's manifests
  --force-finalizers       uninstall: remove Juneau's finalizers when the controller is down
  --timeout DURATION       uninstall: how long to wait for the controller (default 5m)
  --version                print the version and exit
  -h, --help               print this help and exit
`;

export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

const processIO: CliIO = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };

/** Exit codes: 0 done, 1 could not (API server, maps, no agent Pod), 2 bad command line. */
export async function main(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  let line: CommandLine;
  try {
    line = parseCommandLine(argv);
  } catch (err) {
    io.stderr(`kubectl-juneau: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  if (line.command === 'help') {
    io.stdout(CLI_HELP);
    return 0;
  }
  if (line.command === 'version') {
    io.stdout(versionLine('kubectl-juneau'));
    return 0;
  }
  if (line.command === 'bpf' && !line.node) return dumpLocal(line, io);
  if (line.command === 'cleanup-node') return cleanupLocal(line, io);
  if (line.command === 'ngw' && line.local) return ngwLocal(line, io);
  return remote(line, io);
}

/** The commands that talk to the API server. */
async function remote(
  line: Exclude<CommandLine, { command: 'help' | 'version' | 'cleanup-node' }>,
  io: CliIO,
): Promise<number> {
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
      case 'uninstall':
        return await uninstall(kube.rest, line, { say: io.stdout, fail: io.stderr, env: io.env ?? process.env });
      case 'why':
        io.stdout(await explain(kube.rest, kube.namespace, line.target));
        return 0;
      case 'bgp': {
        const report = await readNodeBgp(kube.rest, line.node);
        io.stdout(
          line.output === 'json'
            ? JSON.stringify(report.state ?? null, null, 2) + '\n'
            : renderNodeBgp(report, new Date()),
        );
        return report.state ? 0 : 1;
      }
      case 'ngw':
        return await ngwOnNode(line, kube, io);
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

type NgwLine = Extract<CommandLine, { command: 'ngw' }>;
const qualified = (gateway: string, namespace: string) => (gateway.includes('/') ? gateway : `${namespace}/${gateway}`);
const print = (io: CliIO, output: string, view: NgwNodeView) =>
  io.stdout(output === 'json' ? JSON.stringify(view, null, 2) + '\n' : renderNgw(view));

/** ngw --local: this node's translation for the gateway (run in the agent Pod, in the node's network namespace). */
function ngwLocal(line: NgwLine, io: CliIO): number {
  const name = qualified(line.gateway, line.kube.namespace ?? 'default');
  try {
    print(io, line.output, localNgw(name, line.flows));
    return 0;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    io.stderr(
      `kubectl-juneau: cannot read the NATGateway data path of ${name} on this node (conntrack, nftables: run in the juneau-agent Pod, or as root in the host's network namespace): ${why}\n`,
    );
    return 1;
  }
}

/** ngw: the gateway node from the API server, then its translation read in that node's agent Pod. */
async function ngwOnNode(line: NgwLine, kube: CliKube, io: CliIO): Promise<number> {
  const name = qualified(line.gateway, kube.namespace);
  const [namespace, gateway] = name.split('/') as [string, string];
  const found = await findGatewayNode(kube.rest, namespace, gateway);
  if (!found.ok) {
    io.stderr(`kubectl-juneau: ${found.message}\n`);
    return 1;
  }
  const agentNamespace = INSTALL.namespace;
  const agent = await findAgentPod(kube.rest, agentNamespace, found.node);
  if (!agent.ok) {
    io.stderr(`kubectl-juneau: NATGateway ${name}'s gateway node ${found.node}: ${agent.message}\n`);
    return 1;
  }
  const args = ['ngw', name, '--local', ...(line.flows ? ['--flows'] : []), '-o', 'json'];
  const run = await kubectlOutput(kubectlExecArgs(line.kube, agentNamespace, agent.pod, args), io.env ?? process.env);
  if (run.code !== 0) {
    io.stderr(
      `kubectl-juneau: reading ${name} in Pod ${agentNamespace}/${agent.pod} on node ${found.node} failed (exit ${run.code}): ${run.stderr.trim()}\n`,
    );
    return 1;
  }
  const view: NgwView = {
    ...(JSON.parse(run.stdout) as NgwNodeView),
    phase: found.phase,
    node: found.node,
    pod: agent.pod,
  };
  print(io, line.output, view);
  return view.translated ? 0 : 1;
}

/** bpf on this node: the pinned maps read directly. */
function dumpLocal(line: Extract<CommandLine, { command: 'bpf' }>, io: CliIO): number {
  const pinDir = path.join(line.bpffs, PIN_SUBDIR);
  try {
    io.stdout(showBpf(line.bpf, pinDir, line.output));
    return 0;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    io.stderr(
      `kubectl-juneau: cannot read ${line.bpf.reads} in ${pinDir} (is juneau-agent running on this node, and are you root?): ${why}\n`,
    );
    return 1;
  }
}

/** cleanup-node: what was detached and removed, or why it could not be. */
function cleanupLocal(line: Extract<CommandLine, { command: 'cleanup-node' }>, io: CliIO): number {
  try {
    const done = cleanupNode(line.bpffs);
    if (line.output === 'json') io.stdout(JSON.stringify(done, null, 2) + '\n');
    else if (!done.pinRoot) io.stdout(`no Juneau pins under ${line.bpffs}: nothing to clean\n`);
    else
      io.stdout(
        [
          `XDP responder detached from ifindex: ${done.responderDetached.join(', ') || 'none'}`,
          `NAT filters removed: ${done.natDetached.map((d) => `ifindex ${d.ifindex} (${d.roles.join(', ')})`).join('; ') || 'none'}`,
          ...done.unpinned.map((u) => `only unpinned ${u.pin}: ${u.why}`),
          `VXLAN device deleted: ${done.vxlanDeleted ? 'yes' : 'none was there'}`,
          `pins removed: ${done.pinRoot}`,
        ].join('\n') + '\n',
      );
    return 0;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    io.stderr(
      `kubectl-juneau: cleanup-node under ${line.bpffs} failed (are you root, in the host's network namespace?): ${why}\n`,
    );
    return 1;
  }
}

if (require.main === module) {
  // process.exit, not exitCode: the API client's keep-alive sockets would hold the process open.
  void main(process.argv.slice(2)).then((code) => process.stdout.write('', () => process.exit(code)));
}
