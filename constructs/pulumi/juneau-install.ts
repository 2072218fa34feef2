import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import {
  JuneauInstallOptions,
  juneauInstallObjects,
  ManifestObject,
  resolveInstallOptions,
  validateInstallOptions,
} from '../shared/install';
import { throwIfInvalid, TYPE_PREFIX } from './base';

/** The install's options: the very ones of the cdk8s JuneauInstall (plain values, checked at construction). */
export type JuneauInstallArgs = JuneauInstallOptions;
export type { ImagePullPolicy, JuneauImageOptions } from '../shared/image';
export type {
  JuneauMonitoringOptions,
  JuneauResources,
  JuneauToleration,
  JuneauWorkloadOptions,
} from '../shared/install';

/**
 * The install objects as a class's args. They are rendered by constructs/shared/install/ as
 * plain manifests (the cdk8s JuneauInstall writes the same ones); the provider sends them as given.
 */
const args = <A>(object: ManifestObject): A => object as unknown as A;

type Factory = (name: string, object: ManifestObject, opts: pulumi.CustomResourceOptions) => pulumi.CustomResource;

/**
 * The typed @pulumi/kubernetes class of each kind the install emits, so each object gets the
 * provider's await logic for its kind (Deployments rolled out, CRDs established). Other kinds
 * (cert-manager's Issuer and Certificate) become CustomResources.
 */
const FACTORIES: Readonly<Record<string, Factory>> = {
  'v1/Namespace': (n, o, opts) => new k8s.core.v1.Namespace(n, args<k8s.core.v1.NamespaceArgs>(o), opts),
  'v1/ServiceAccount': (n, o, opts) => new k8s.core.v1.ServiceAccount(n, args<k8s.core.v1.ServiceAccountArgs>(o), opts),
  'v1/Service': (n, o, opts) => new k8s.core.v1.Service(n, args<k8s.core.v1.ServiceArgs>(o), opts),
  'apiextensions.k8s.io/v1/CustomResourceDefinition': (n, o, opts) =>
    new k8s.apiextensions.v1.CustomResourceDefinition(
      n,
      args<k8s.apiextensions.v1.CustomResourceDefinitionArgs>(o),
      opts,
    ),
  'rbac.authorization.k8s.io/v1/ClusterRole': (n, o, opts) =>
    new k8s.rbac.v1.ClusterRole(n, args<k8s.rbac.v1.ClusterRoleArgs>(o), opts),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': (n, o, opts) =>
    new k8s.rbac.v1.ClusterRoleBinding(n, args<k8s.rbac.v1.ClusterRoleBindingArgs>(o), opts),
  'rbac.authorization.k8s.io/v1/Role': (n, o, opts) => new k8s.rbac.v1.Role(n, args<k8s.rbac.v1.RoleArgs>(o), opts),
  'rbac.authorization.k8s.io/v1/RoleBinding': (n, o, opts) =>
    new k8s.rbac.v1.RoleBinding(n, args<k8s.rbac.v1.RoleBindingArgs>(o), opts),
  'apps/v1/Deployment': (n, o, opts) => new k8s.apps.v1.Deployment(n, args<k8s.apps.v1.DeploymentArgs>(o), opts),
  'apps/v1/DaemonSet': (n, o, opts) => new k8s.apps.v1.DaemonSet(n, args<k8s.apps.v1.DaemonSetArgs>(o), opts),
  'policy/v1/PodDisruptionBudget': (n, o, opts) =>
    new k8s.policy.v1.PodDisruptionBudget(n, args<k8s.policy.v1.PodDisruptionBudgetArgs>(o), opts),
  // FO-3: the policy that lets each agent write only its own node's Lease.
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': (n, o, opts) =>
    new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
      n,
      args<k8s.admissionregistration.v1.ValidatingAdmissionPolicyArgs>(o),
      opts,
    ),
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': (n, o, opts) =>
    new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
      n,
      args<k8s.admissionregistration.v1.ValidatingAdmissionPolicyBindingArgs>(o),
      opts,
    ),
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration': (n, o, opts) =>
    new k8s.admissionregistration.v1.ValidatingWebhookConfiguration(
      n,
      args<k8s.admissionregistration.v1.ValidatingWebhookConfigurationArgs>(o),
      opts,
    ),
};

const customResource: Factory = (n, o, opts) => new k8s.apiextensions.CustomResource(n, o, opts);

/**
 * Everything Juneau needs on a cluster — namespace, CRDs, least-privilege RBAC, the controller
 * Deployment (2 replicas, leader election, PodDisruptionBudget), the webhook Service and
 * ValidatingWebhookConfiguration, and the agent DaemonSet — as exactly the objects of
 * `juneauInstallObjects()`, the definition the cdk8s JuneauInstall emits too. One child resource
 * per object, created when the component is, so `dependsOn: [install]` orders Juneau objects after
 * the CRDs and the controller.
 *
 * @example
 * const install = new JuneauInstall('juneau', {});
 * new ElasticIP('web-eip', { externalNetwork: ExternalNetwork.fromName('ext-net-arp') }, { dependsOn: [install] });
 */
export class JuneauInstall extends pulumi.ComponentResource {
  public static readonly TYPE = `${TYPE_PREFIX}:JuneauInstall`;

  /** The namespace of the controller and the agents. */
  public readonly namespace: string;
  /** One resource per install object, in apply order. */
  public readonly resources: readonly pulumi.CustomResource[];
  private readonly objects: ManifestObject[];

  /** @throws JuneauValidationError listing every problem of `args`. */
  constructor(name: string, args: JuneauInstallArgs = {}, opts?: pulumi.ComponentResourceOptions) {
    throwIfInvalid(`JuneauInstall ${name}`, validateInstallOptions(args));
    super(JuneauInstall.TYPE, name, {}, opts);
    this.namespace = resolveInstallOptions(args).namespace;
    this.objects = juneauInstallObjects(args);

    const resources: pulumi.CustomResource[] = [];
    let namespace: pulumi.CustomResource | undefined;
    for (const object of this.objects) {
      const { apiVersion, kind, metadata } = object;
      const id = metadata.namespace ? `${metadata.namespace}/${metadata.name}` : metadata.name;
      const factory = FACTORIES[`${apiVersion}/${kind}`] ?? customResource;
      // Namespaced objects wait for their namespace: the API server refuses them before it exists.
      const resource = factory(
        `${name}-${id}`,
        object,
        metadata.namespace && namespace ? { parent: this, dependsOn: [namespace] } : { parent: this },
      );
      if (kind === 'Namespace' && apiVersion === 'v1') namespace = resource;
      resources.push(resource);
    }
    this.resources = resources;
    this.registerOutputs({});
  }

  /** The install objects, in apply order (a copy). */
  public toObjects(): ManifestObject[] {
    return structuredClone(this.objects);
  }
}
