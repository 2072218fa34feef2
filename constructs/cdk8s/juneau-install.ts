import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { formatIssue } from '../../api/validation';
import { JuneauInstallOptions, juneauInstallObjects, validateInstallOptions } from '../shared/install';

export type JuneauInstallProps = JuneauInstallOptions;
export type { ImagePullPolicy, JuneauImageOptions } from '../shared/image';
export type {
  JuneauMonitoringOptions,
  JuneauResources,
  JuneauToleration,
  JuneauWorkloadOptions,
} from '../shared/install';

/**
 * Everything Juneau needs on a cluster: namespace, CRDs, least-privilege RBAC, the controller
 * Deployment (2 replicas, leader election, PodDisruptionBudget), the webhook Service and
 * ValidatingWebhookConfiguration, and the agent DaemonSet (host network, CAP_BPF and CAP_NET_ADMIN
 * instead of privileged, its own bpffs directory mounted). The Pulumi JuneauInstall emits the same objects.
 */
export class JuneauInstall extends Construct {
  /** The ApiObjects, in apply order. */
  public readonly apiObjects: ApiObject[];

  constructor(scope: Construct, id: string, props: JuneauInstallProps = {}) {
    super(scope, id);
    this.apiObjects = juneauInstallObjects(props).map((object, index) => {
      const { apiVersion, kind, metadata, ...rest } = object;
      return new ApiObject(this, `${index}-${kind}-${metadata.name}`, {
        apiVersion,
        kind,
        metadata: metadata as ApiObjectMetadata,
        ...rest,
      });
    });
    this.node.addValidation({
      validate: () => validateInstallOptions(props).map((i) => `JuneauInstall ${this.node.path}: ${formatIssue(i)}`),
    });
  }
}
