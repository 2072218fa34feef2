/**
 * The plugin's API access: kubectl's flags through the binaries' one kubeconfig loader (the kinds
 * it reads are kube/resources.ts JuneauResources).
 */
import { loadKubeConfig } from '../kube/kubeconfig';
import { RestClient } from '../kube/rest';
import type { KubeFlags } from './args';

export interface CliKube {
  readonly rest: RestClient;
  /** `-n`, else the context's namespace, else `default` (kubectl's rule). */
  readonly namespace: string;
  readonly server: string;
}

export function connect(flags: KubeFlags, env: NodeJS.ProcessEnv = process.env): CliKube {
  const { kubeConfig } = loadKubeConfig({ kubeconfigPath: flags.kubeconfig, context: flags.context, env });
  const context = kubeConfig.getContextObject(kubeConfig.getCurrentContext());
  return {
    rest: new RestClient(kubeConfig, { requestTimeoutMs: 15_000 }),
    namespace: flags.namespace ?? (context?.namespace || 'default'),
    server: kubeConfig.getCurrentCluster()?.server ?? '(no server)',
  };
}
