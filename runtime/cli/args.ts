/**
 * The plugin's command line: kubectl's standard flags (`--kubeconfig`, `--context`,
 * `-n/--namespace`, `-A/--all-namespaces`) anywhere, then one command. `bpf ...` keeps its own
 * flags (parseCliArgs in ./main.ts); `--node NAME` sends it to that node's agent Pod.
 */

export interface KubeFlags {
  readonly kubeconfig?: string;
  readonly context?: string;
  readonly namespace?: string;
  readonly allNamespaces: boolean;
}

export type CommandLine =
  | { readonly command: 'help' }
  | { readonly command: 'version' }
  /** `rest` is the bpf command line without the kubectl flags and `--node`. */
  | { readonly command: 'bpf'; readonly rest: readonly string[]; readonly node?: string; readonly kube: KubeFlags }
  | { readonly command: 'status'; readonly output: 'table' | 'json'; readonly kube: KubeFlags }
  | { readonly command: 'why'; readonly target: string; readonly kube: KubeFlags };

const VALUE_FLAGS: Readonly<Record<string, 'kubeconfig' | 'context' | 'namespace' | 'node' | 'output'>> = {
  '--kubeconfig': 'kubeconfig',
  '--context': 'context',
  '-n': 'namespace',
  '--namespace': 'namespace',
  '--node': 'node',
  '-o': 'output',
  '--output': 'output',
};

export function parseCommandLine(argv: readonly string[]): CommandLine {
  if (argv.includes('--version')) return { command: 'version' };
  const words: string[] = [];
  const values: Partial<Record<'kubeconfig' | 'context' | 'namespace' | 'node' | 'output', string>> = {};
  const passThrough: string[] = [];
  let allNamespaces = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const match = /^(--?[a-zA-Z-]+)(?:=(.*))?$/.exec(arg);
    const key = match ? VALUE_FLAGS[match[1]] : undefined;
    if (arg === '-A' || arg === '--all-namespaces') {
      allNamespaces = true;
    } else if (key && match) {
      const value = match[2] ?? argv[++i];
      if (value === undefined || value === '') throw new Error(`${match[1]} needs a value`);
      values[key] = value;
      // bpf's own parser reads -o; the kubectl flags and --node stay here.
      if (key === 'output') passThrough.push('-o', value);
    } else if (arg.startsWith('-')) {
      passThrough.push(arg);
      // --bpffs takes a value the bpf parser reads (`--bpffs DIR`).
      if (arg === '--bpffs' && argv[i + 1] !== undefined) passThrough.push(argv[++i]);
    } else {
      words.push(arg);
      passThrough.push(arg);
    }
  }
  const kube: KubeFlags = {
    kubeconfig: values.kubeconfig,
    context: values.context,
    namespace: values.namespace,
    allNamespaces,
  };
  const [command, ...rest] = words;
  if (command === undefined || passThrough.includes('-h') || passThrough.includes('--help')) {
    if (command === 'bpf') return { command: 'bpf', rest: passThrough, node: values.node, kube };
    return { command: 'help' };
  }
  const unknownFlag = passThrough.find((a) => a.startsWith('-') && a !== '-o');
  if (command === 'bpf') return { command: 'bpf', rest: passThrough, node: values.node, kube };
  if (values.node !== undefined) throw new Error(`--node applies to bpf commands only, not '${command}'`);
  if (unknownFlag) throw new Error(`unknown flag ${unknownFlag} (see --help)`);
  if (command === 'status') {
    if (rest.length > 0) throw new Error(`status takes no arguments, got '${rest.join(' ')}'`);
    const output = values.output ?? 'table';
    if (output !== 'table' && output !== 'json') throw new Error(`-o must be table or json, not '${output}'`);
    return { command: 'status', output, kube };
  }
  if (command === 'why') {
    if (rest.length !== 1 || !rest[0].includes('/'))
      throw new Error(`why takes one <kind>/<name>, e.g. why elasticip/web (got '${rest.join(' ')}')`);
    if (allNamespaces) throw new Error('why explains one object: -A does not apply');
    return { command: 'why', target: rest[0], kube };
  }
  throw new Error(`unknown command '${words.join(' ')}' (see --help)`);
}
