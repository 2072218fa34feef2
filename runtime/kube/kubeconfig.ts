/**
 * Which cluster to talk to, the same way for the controller, the agent and kubectl-juneau, in
 * controller-runtime's order (config.GetConfig): `--kubeconfig` if given; else `KUBECONFIG` if set
 * (then it must name a file that exists: an operator who set it meant it); else the in-cluster
 * service account; else `~/.kube/config`. The error names everything that was tried.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadKubeConfigOptions {
  /** The `--kubeconfig` flag. */
  readonly kubeconfigPath?: string;
  /** The `--context` flag: a context of the kubeconfig file(s) instead of their current one.
   * @default the file's current-context */
  readonly context?: string;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Prepended to SERVICE_ACCOUNT_DIR (for tests). @default '' */
  readonly inClusterPathPrefix?: string;
  /** @default os.homedir() */
  readonly homeDir?: string;
}

export interface LoadedKubeConfig {
  readonly kubeConfig: KubeConfig;
  /** e.g. `--kubeconfig /etc/juneau/kubeconfig` or `in-cluster`, for the startup log line. */
  readonly source: string;
}

export function loadKubeConfig(options: LoadKubeConfigOptions = {}): LoadedKubeConfig {
  const loaded = loadWithoutContext(options);
  if (options.context === undefined) return loaded;
  if (!loaded.kubeConfig.getContextObject(options.context)) {
    const known = loaded.kubeConfig.getContexts().map((c) => c.name);
    throw new Error(
      `--context ${options.context}: no such context in ${loaded.source} (it has: ${known.join(', ') || 'none'})`,
    );
  }
  loaded.kubeConfig.setCurrentContext(options.context);
  if (!loaded.kubeConfig.getCurrentCluster())
    throw new Error(`--context ${options.context}: its cluster is not in ${loaded.source}`);
  return loaded;
}

function loadWithoutContext(options: LoadKubeConfigOptions): LoadedKubeConfig {
  const env = options.env ?? process.env;
  if (options.kubeconfigPath) {
    return {
      kubeConfig: fromFile(options.kubeconfigPath, '--kubeconfig', options.context),
      source: `--kubeconfig ${options.kubeconfigPath}`,
    };
  }
  const fromEnv = (env.KUBECONFIG ?? '').split(path.delimiter).filter(Boolean);
  if (fromEnv.length > 0) return fromFiles(fromEnv, 'KUBECONFIG', [], options.context);
  const tried: string[] = [];
  const saDir = (options.inClusterPathPrefix ?? '') + SERVICE_ACCOUNT_DIR;
  const inCluster = Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
  if (inCluster && fs.existsSync(path.join(saDir, 'token'))) {
    return { kubeConfig: inClusterConfig(env, saDir), source: 'in-cluster' };
  }
  tried.push(
    inCluster
      ? `in-cluster (no token at ${path.join(saDir, 'token')})`
      : 'in-cluster (KUBERNETES_SERVICE_HOST/PORT not set)',
  );
  return fromFiles([path.join(options.homeDir ?? os.homedir(), '.kube', 'config')], 'default', tried, options.context);
}

/** The files that exist, merged in order (kubectl's rule for a KUBECONFIG list); an error if none. */
function fromFiles(
  candidates: readonly string[],
  label: string,
  tried: string[],
  context: string | undefined,
): LoadedKubeConfig {
  const existing = candidates.filter((file) => fs.existsSync(file));
  if (existing.length === 0) {
    tried.push(`${label} ${candidates.join(path.delimiter)} (not found)`);
    throw new Error(`no Kubernetes configuration found; tried: ${tried.join('; ')}. Pass --kubeconfig <file>.`);
  }
  const kubeConfig = fromFile(existing[0], label, context);
  for (const file of existing.slice(1)) kubeConfig.mergeConfig(fromFile(file, label, context));
  return { kubeConfig, source: `${label} ${existing.join(path.delimiter)}` };
}

/** As client-node's loadFromCluster, but from `env` rather than process.env. */
function inClusterConfig(env: NodeJS.ProcessEnv, saDir: string): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST as string;
  const port = env.KUBERNETES_SERVICE_PORT as string;
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromClusterAndUser(
    { name: 'inCluster', server, caFile: path.join(saDir, 'ca.crt'), skipTLSVerify: false },
    // The tokenFile provider re-reads the projected token, which the kubelet rotates.
    { name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile: path.join(saDir, 'token') } } },
  );
  return kubeConfig;
}

function fromFile(file: string, label: string, context: string | undefined): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(file);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT')
      throw new Error(`${label} ${file}: cannot load kubeconfig: file not found`);
    throw new Error(`${label} ${file}: cannot load kubeconfig: ${err instanceof Error ? err.message : String(err)}`);
  }
  // With --context the current one does not matter; loadKubeConfig checks the chosen one.
  if (context === undefined && !kubeConfig.getCurrentCluster())
    throw new Error(`${label} ${file}: kubeconfig has no current context/cluster`);
  return kubeConfig;
}
