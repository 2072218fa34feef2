/**
 * `kubectl juneau bpf ... --node NAME`: the pinned maps live on the node, so the dump runs in that
 * node's juneau-agent Pod. The Pod is found through the API (the agent DaemonSet's labels and
 * spec.nodeName), then `kubectl exec` runs kubectl-juneau there: the plugin runs beside kubectl,
 * which already speaks the exec protocol and streams the output.
 */
import { spawn } from 'node:child_process';
import { INSTALL } from '../../api/constants';
import { Resources } from '../kube/resources';
import { getOrUndefined, type RestClient } from '../kube/rest';
import type { KubeObject } from '../kube/types';
import type { KubeFlags } from './args';

/** The labels the install manifest gives the agent's Pods (constructs/shared/install/objects.ts selector()). */
export const AGENT_POD_SELECTOR = `app.kubernetes.io/name=${INSTALL.agentName},app.kubernetes.io/part-of=juneau`;
export const AGENT_CONTAINER = 'agent';

type Pod = KubeObject & {
  metadata: NonNullable<KubeObject['metadata']>;
  spec?: { nodeName?: string };
  status?: { phase?: string };
};

export type AgentPodLookup =
  { readonly ok: true; readonly pod: string } | { readonly ok: false; readonly message: string };

/** The agent Pod on `node` in `namespace`: a running one not being deleted first. */
export async function findAgentPod(rest: RestClient, namespace: string, node: string): Promise<AgentPodLookup> {
  const pods = await rest.list<Pod>(Resources.pods, {
    namespace,
    labelSelector: AGENT_POD_SELECTOR,
    fieldSelector: `spec.nodeName=${node}`,
  });
  const rank = (p: Pod) => (p.metadata.deletionTimestamp ? 2 : p.status?.phase === 'Running' ? 0 : 1);
  const pod = [...pods.items].sort((a, b) => rank(a) - rank(b))[0];
  if (pod) return { ok: true, pod: pod.metadata.name ?? '' };
  const exists = await getOrUndefined<KubeObject>(rest, Resources.nodes, undefined, node);
  if (!exists) return { ok: false, message: `node ${node} does not exist` };
  return {
    ok: false,
    message: `no juneau-agent Pod runs on node ${node} (namespace ${namespace}, labels ${AGENT_POD_SELECTOR}); is Juneau installed there (-n NAMESPACE), and does the agent DaemonSet schedule onto that node?`,
  };
}

/** `kubectl [--kubeconfig K] [--context C] -n NS exec POD -c agent -- kubectl-juneau <bpfArgs>`. */
export function kubectlExecArgs(kube: KubeFlags, namespace: string, pod: string, bpfArgs: readonly string[]): string[] {
  return [
    ...(kube.kubeconfig ? ['--kubeconfig', kube.kubeconfig] : []),
    ...(kube.context ? ['--context', kube.context] : []),
    '-n',
    namespace,
    'exec',
    pod,
    '-c',
    AGENT_CONTAINER,
    '--',
    'kubectl-juneau',
    ...bpfArgs,
  ];
}

/** Runs kubectl (`$KUBECTL`, else `kubectl` on PATH) with the terminal's stdio; resolves with its exit code. */
export async function runKubectl(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return (await spawnKubectl(args, env, 'inherit')).code;
}

/** Runs kubectl with its output captured: what a caller parses (`ngw` reads the node's JSON). */
export function kubectlOutput(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }> {
  return spawnKubectl(args, env, 'pipe');
}

function spawnKubectl(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  stdio: 'inherit' | 'pipe',
): Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }> {
  const kubectl = env.KUBECTL || 'kubectl';
  return new Promise((resolve, reject) => {
    const child = spawn(kubectl, args, { stdio: stdio === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'ENOENT' ? new Error(`${kubectl} not found on PATH (set KUBECTL to its path)`) : err),
    );
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
  });
}
