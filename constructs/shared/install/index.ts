/**
 * The install manifest: one definition of every object Juneau needs on a cluster, rendered as
 * plain Kubernetes objects. The cdk8s JuneauInstall and the Pulumi JuneauInstall both emit exactly
 * these objects (one definition, two front-ends).
 */
import { allCustomResourceDefinitions } from '../../../api';
import { agent } from './agent';
import { controller, webhookNetworkPolicy } from './controller';
import { commonLabels, resolveInstallOptions, type JuneauInstallOptions } from './options';
import type { ManifestObject } from './objects';
import { withExtraLabels } from './pods';
import { controllerWritesPolicy } from './controller-writes';
import { agentRbac, controllerRbac, tenantRoles } from './rbac';
import { webhookConfiguration } from './webhooks';
import { metricsReader, metricsServices, monitoringObjects } from './monitoring';

export { AGENT_CAPABILITIES, AGENT_HOST_BPFFS_DIR } from './agent';
export type { ManifestObject } from './objects';
export { resolveInstallOptions, validateInstallOptions, type JuneauInstallOptions } from './options';
export type { JuneauResources, JuneauToleration, JuneauWorkloadOptions } from './pods';
export type { JuneauMonitoringOptions } from './monitoring';

/** Every object of a Juneau installation, in apply order (namespace and CRDs first). */
export function juneauInstallObjects(options: JuneauInstallOptions = {}): ManifestObject[] {
  const o = resolveInstallOptions(options);
  const namespace: ManifestObject = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: o.namespace, labels: { ...commonLabels, 'pod-security.kubernetes.io/enforce': 'privileged' } },
  };
  return [
    namespace,
    ...(o.includeCrds ? (allCustomResourceDefinitions() as ManifestObject[]) : []),
    ...controllerRbac(o.namespace),
    ...agentRbac(o.namespace, o.bgpDaemon),
    ...controllerWritesPolicy(o.namespace),
    ...tenantRoles(),
    ...metricsReader(o),
    ...controller(o),
    ...webhookNetworkPolicy(o),
    ...webhookConfiguration(o),
    agent(o),
    ...metricsServices(o),
    ...monitoringObjects(o),
  ].map((object) => withExtraLabels(object, o.labels));
}
