/**
 * The plugin's command line, in the binaries' grammar (runtime/kube/flags.ts): kubectl's standard
 * flags (`--kubeconfig`, `--context`, `-n/--namespace`, `-A/--all-namespaces`) anywhere, then one
 * command; a `bpf` command (./bpf.ts) takes `--bpffs` and, to run in that node's agent Pod,
 * `--node NAME`.
 */
import { isIPv4 } from '../../api/validation';
import { INSTALL } from '../../api/constants';
import { nonEmpty, oneOf, readFlags, type FlagTable } from '../kube/flags';
import { bpfCommand, type BpfCommand } from './bpf';
import { UNINSTALL_FLAG_NAMES, UNINSTALL_FLAGS, uninstallLine } from './uninstall-args';
import type { UninstallRequest } from './uninstall';

export interface KubeFlags {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly namespace?: string;
  readonly allNamespaces: boolean;
}

export type Output = 'table' | 'json';

export type CommandLine =
  | { readonly command: 'help' }
  | { readonly command: 'version' }
  | {
      readonly command: 'bpf';
      readonly bpf: BpfCommand;
      readonly bpffs: string;
      readonly output: Output;
      /** The same command for the agent Pod's kubectl-juneau: without the kubectl flags and `--node`. */
      readonly rest: readonly string[];
      readonly node?: string;
      readonly kube: KubeFlags;
    }
  | { readonly command: 'status'; readonly output: Output; readonly kube: KubeFlags }
  /** SEC-16: on this node, detach Juneau's programs and remove its pins (runtime/agent/liveness/cleanup-node.ts). */
  | { readonly command: 'cleanup-node'; readonly bpffs: string; readonly output: Output }
  | { readonly command: 'why'; readonly target: string; readonly kube: KubeFlags }
  /** NGW-8: a NATGateway's flows, ports in use and drops on its gateway node (./ngw.ts); with
   * `local`, read on this node (what the agent Pod runs). */
  | {
      readonly command: 'ngw';
      /** `namespace/name`. */
      readonly gateway: string;
      readonly flows: boolean;
      readonly local: boolean;
      readonly output: Output;
      readonly kube: KubeFlags;
    }
  /** BGP-7: a node's sessions and announced addresses (./bgp.ts). */
  | { readonly command: 'bgp'; readonly node: string; readonly output: Output; readonly kube: KubeFlags }
  | ({ readonly command: 'uninstall' } & UninstallRequest);

interface CliFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  allNamespaces: boolean;
  node?: string;
  bpffs?: string;
  output?: Output;
  files?: string[];
  forceFinalizers?: boolean;
  timeoutMs?: number;
  flows?: boolean;
  local?: boolean;
}

/** Every flag but `--version` (main answers that first) and `-h/--help`. */
export const CLI_FLAG_TABLE: FlagTable<CliFlags> = {
  kubeconfig: { field: 'kubeconfig', read: nonEmpty },
  context: { field: 'context', read: nonEmpty },
  namespace: { field: 'namespace', read: nonEmpty, short: 'n' },
  'all-namespaces': { field: 'allNamespaces', boolean: true, short: 'A' },
  node: { field: 'node', read: nonEmpty },
  bpffs: { field: 'bpffs', read: nonEmpty },
  output: { field: 'output', read: oneOf<Output>(['table', 'json']), short: 'o' },
  flows: { field: 'flows', boolean: true },
  local: { field: 'local', boolean: true },
  ...UNINSTALL_FLAGS,
};

export function parseCommandLine(argv: readonly string[]): CommandLine {
  if (argv.includes('--version')) return { command: 'version' };
  const flags: CliFlags = { allNamespaces: false };
  const words: string[] = [];
  if (readFlags(argv, CLI_FLAG_TABLE, {}, flags, words)) return { command: 'help' };
  const { kubeconfig, context, namespace, allNamespaces } = flags;
  const kube: KubeFlags = { kubeconfig, context, namespace, allNamespaces };
  const [command, ...rest] = words;
  if (command === undefined) return { command: 'help' };
  for (const only of ['flows', 'local'] as const)
    if (flags[only] !== undefined && command !== 'ngw' && command !== 'natgateway')
      throw new Error(`--${only} applies to ngw only, not '${command}'`);
  if (command === 'bpf') return bpfLine(words.join(' '), flags, kube);
  if (command === 'ngw' || command === 'natgateway') return ngwLine(rest, flags, kube);
  if (command === 'cleanup-node') {
    if (rest.length > 0) throw new Error(`cleanup-node takes no arguments, got '${rest.join(' ')}'`);
    if (flags.node !== undefined)
      throw new Error('cleanup-node runs on the node it cleans (its agent is gone): --node does not apply');
    return { command: 'cleanup-node', bpffs: flags.bpffs ?? INSTALL.bpffsPath, output: flags.output ?? 'table' };
  }
  if (command === 'bgp') {
    if (rest.length > 0) throw new Error(`bgp takes no arguments, got '${rest.join(' ')}' (use --node NAME)`);
    if (flags.node === undefined) throw new Error('bgp needs --node NAME: the node whose sessions to show');
    if (flags.bpffs !== undefined) throw new Error(`--bpffs applies to bpf commands only, not 'bgp'`);
    return { command: 'bgp', node: flags.node, output: flags.output ?? 'table', kube };
  }
  for (const bpfOnly of ['node', 'bpffs'] as const)
    if (flags[bpfOnly] !== undefined) throw new Error(`--${bpfOnly} applies to bpf commands only, not '${command}'`);
  if (command === 'uninstall') return uninstallLine(argv, rest, flags, kube);
  for (const only of ['files', 'forceFinalizers', 'timeoutMs'] as const)
    if (flags[only] !== undefined)
      throw new Error(`${UNINSTALL_FLAG_NAMES[only]} applies to uninstall only, not '${command}'`);
  if (command === 'status') {
    if (rest.length > 0) throw new Error(`status takes no arguments, got '${rest.join(' ')}'`);
    return { command: 'status', output: flags.output ?? 'table', kube };
  }
  if (command === 'why') {
    if (rest.length !== 1 || !(rest[0].includes('/') || isIPv4(rest[0])))
      throw new Error(
        `why takes one <kind>/<name> or one address, e.g. why elasticip/web or why 10.225.32.250 (got '${rest.join(' ')}')`,
      );
    if (allNamespaces) throw new Error('why explains one object: -A does not apply');
    return { command: 'why', target: rest[0], kube };
  }
  throw new Error(`unknown command '${words.join(' ')}' (see --help)`);
}

/** `ngw NAMESPACE/NAME` or `ngw NAME` (in -n's namespace, else the context's: resolved in main). */
function ngwLine(rest: readonly string[], flags: CliFlags, kube: KubeFlags): CommandLine {
  const [target, ...extra] = rest;
  const parts = target?.split('/') ?? [];
  if (!target || extra.length > 0 || parts.length > 2 || parts.some((p) => p === ''))
    throw new Error(`ngw takes one NATGateway, NAMESPACE/NAME or NAME (got '${rest.join(' ')}')`);
  if (parts.length === 2 && flags.namespace !== undefined && flags.namespace !== parts[0])
    throw new Error(`ngw ${target}: its namespace ${parts[0]} and -n ${flags.namespace} differ`);
  for (const other of ['node', 'bpffs'] as const)
    if (flags[other] !== undefined)
      throw new Error(`--${other} does not apply to ngw: it runs on the NATGateway's gateway node (status.nodeName)`);
  if (kube.allNamespaces) throw new Error('ngw shows one NATGateway: -A does not apply');
  return {
    command: 'ngw',
    gateway: target,
    flows: flags.flows ?? false,
    local: flags.local ?? false,
    output: flags.output ?? 'table',
    kube,
  };
}

function bpfLine(words: string, flags: CliFlags, kube: KubeFlags): CommandLine {
  const bpf = bpfCommand(words);
  if (!bpf) throw new Error(`unknown command '${words}' (see --help)`);
  const rest = [
    ...words.split(' '),
    ...(flags.bpffs !== undefined ? ['--bpffs', flags.bpffs] : []),
    ...(flags.output !== undefined ? ['-o', flags.output] : []),
  ];
  const output = flags.output ?? 'table';
  return { command: 'bpf', bpf, bpffs: flags.bpffs ?? INSTALL.bpffsPath, output, rest, node: flags.node, kube };
}
