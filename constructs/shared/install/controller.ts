/** The controller: its Deployment (leader election, the webhook server), PodDisruptionBudget and webhook Service. */
import { CONTROLLER_FLAGS, INSTALL } from '../../../api';
import { containerImage, flag, httpProbe, labels, meta, selector } from './objects';
import type { ManifestObject, ResolvedOptions } from './objects';
import { containerResources, podScheduling } from './pods';

const restrictedContainerSecurity = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

export function controller(o: ResolvedOptions): ManifestObject[] {
  const name = INSTALL.controllerName;
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(name, o.namespace),
      spec: {
        replicas: o.controllerReplicas,
        selector: { matchLabels: selector(name) },
        template: {
          metadata: { labels: labels(name) },
          spec: {
            serviceAccountName: name,
            securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  {
                    weight: 100,
                    podAffinityTerm: {
                      topologyKey: 'kubernetes.io/hostname',
                      labelSelector: { matchLabels: selector(name) },
                    },
                  },
                ],
              },
            },
            ...podScheduling('controller', o.controller, o.imagePullSecrets),
            containers: [controllerContainer(o)],
            ...(o.certificates === 'cert-manager'
              ? { volumes: [{ name: 'webhook-cert', secret: { secretName: INSTALL.webhookCertSecretName } }] }
              : {}),
          },
        },
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(name, o.namespace),
      spec: { minAvailable: 1, selector: { matchLabels: selector(name) } },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(INSTALL.webhookServiceName, o.namespace, name),
      spec: {
        selector: selector(name),
        ports: [{ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }],
      },
    },
  ];
}

/**
 * M1: only the API servers (`webhookNetworkPolicy`, their source prefixes) reach the webhook port;
 * metrics and health stay open to every source (Prometheus, the kubelet's probes). None: no policy.
 */
export function webhookNetworkPolicy(o: ResolvedOptions): ManifestObject[] {
  if (o.webhookNetworkPolicy.length === 0) return [];
  const p = INSTALL.ports;
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta(`${INSTALL.controllerName}-webhook`, o.namespace, INSTALL.controllerName),
      spec: {
        podSelector: { matchLabels: selector(INSTALL.controllerName) },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: o.webhookNetworkPolicy.map((cidr) => ({ ipBlock: { cidr } })),
            ports: [{ protocol: 'TCP', port: p.webhook }],
          },
          {
            ports: [
              { protocol: 'TCP', port: p.controllerMetrics },
              { protocol: 'TCP', port: p.controllerHealth },
            ],
          },
        ],
      },
    },
  ];
}

/** The controller's container: leader election, the webhook server, metrics and health on the pod's own address. */
function controllerContainer(o: ResolvedOptions): Record<string, unknown> {
  const p = INSTALL.ports;
  return {
    name: 'controller',
    ...containerImage(o, 'controller'),
    command: ['juneau-controller'],
    args: [
      flag(CONTROLLER_FLAGS.leaderElect, 'true'),
      flag(CONTROLLER_FLAGS.leaderElectionNamespace, o.namespace),
      // The pod's own address (downward API): the kubelet probes it and a scraper reaches it
      // on the pod network, never on a node's external L2 network. Brackets keep IPv6 valid.
      flag(CONTROLLER_FLAGS.metricsBindAddress, `[$(POD_IP)]:${p.controllerMetrics}`),
      flag(CONTROLLER_FLAGS.healthProbeBindAddress, `[$(POD_IP)]:${p.controllerHealth}`),
      flag(CONTROLLER_FLAGS.webhookAddr, `:${p.webhook}`),
      flag(CONTROLLER_FLAGS.webhookCertificates, o.certificates),
      flag(CONTROLLER_FLAGS.logLevel, o.logLevel),
    ],
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ],
    ports: [
      { name: 'webhook', containerPort: p.webhook, protocol: 'TCP' },
      { name: 'metrics', containerPort: p.controllerMetrics, protocol: 'TCP' },
      { name: 'health', containerPort: p.controllerHealth, protocol: 'TCP' },
    ],
    livenessProbe: httpProbe('/healthz', 'health'),
    readinessProbe: httpProbe('/readyz', 'health'),
    resources: containerResources('controller', o.controller),
    securityContext: restrictedContainerSecurity,
    ...(o.certificates === 'cert-manager'
      ? { volumeMounts: [{ name: 'webhook-cert', mountPath: '/var/run/juneau/webhook', readOnly: true }] }
      : {}),
  };
}
