/**
 * What every file of the install renders with: the object shape, the labels and selectors each
 * component's objects carry, and the container pieces the controller and the agent share.
 */
import type { JuneauInstallOptions } from './options';
import { commonLabels, PACKAGE_VERSION } from './options';
import { imageReference, resolveImage } from '../image';
import type { Component } from './pods';

/** One object of the manifest, as `kubectl apply` takes it. */
export type ManifestObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
} & Record<string, unknown>;

/** The options with every default filled in (resolveInstallOptions). */
export type ResolvedOptions = Required<JuneauInstallOptions>;

export const labels = (component: string) => ({ ...commonLabels, 'app.kubernetes.io/name': component });
export const selector = (component: string) => ({
  'app.kubernetes.io/name': component,
  'app.kubernetes.io/part-of': 'juneau',
});
export const meta = (name: string, namespace?: string, component = name) => ({
  name,
  ...(namespace ? { namespace } : {}),
  labels: labels(component),
});

export const rule = (apiGroups: string[], resources: string[], verbs: string[], resourceNames?: string[]) => ({
  apiGroups,
  resources,
  verbs,
  ...(resourceNames ? { resourceNames } : {}),
});

/**
 * A Role `name` in `ns` with `rules`, bound to the ServiceAccount `serviceAccount` of `ns`; both
 * labelled as that component's.
 */
export function namespacedRole(name: string, ns: string, serviceAccount: string, rules: object[]): ManifestObject[] {
  return [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta(name, ns, serviceAccount), rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(name, ns, serviceAccount),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: ns }],
    },
  ];
}

/**
 * A ValidatingAdmissionPolicy of `spec` (failurePolicy Fail) and the binding that puts it in force
 * (Deny), both `name`: evaluated in the API server, so no webhook outage stops what it allows.
 */
export const admissionPolicy = (name: string, component: string, spec: object): ManifestObject[] => [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: meta(name, undefined, component),
    spec: { failurePolicy: 'Fail', ...spec },
  },
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: meta(name, undefined, component),
    spec: { policyName: name, validationActions: ['Deny'] },
  },
];

export const containerImage = (o: ResolvedOptions, component: Component) => {
  const image = resolveImage({ ...o.image, ...o[component].image }, PACKAGE_VERSION);
  return { image: imageReference(image), imagePullPolicy: image.pullPolicy };
};
export const httpProbe = (path: string, port: string, host?: string) => ({
  httpGet: { path, port, ...(host ? { host } : {}) },
  periodSeconds: 10,
  failureThreshold: 3,
});

/** `--name=value`, as both binaries read a flag. */
export const flag = (name: string, value: string | number) => `--${name}=${value}`;
