/**
 * What a cluster's Prometheus needs to scrape Juneau (docs/metrics.md): the `juneau-metrics-reader`
 * ClusterRole its ServiceAccount is bound to (the binaries serve /metrics over HTTPS to callers
 * the API server authorizes for it: runtime/kube/metrics-auth.ts), a Service in front of each
 * component's metrics port, and, opt-in, Prometheus Operator ServiceMonitors and a PrometheusRule
 * with Juneau's alerts.
 */
import { INSTALL } from '../../../api';
import { issue, checkLabelName, type ValidationIssue } from '../../../api/validation';
import { labels, meta, selector, type ManifestObject, type ResolvedOptions } from './objects';
import { checkLabels } from './pods';

export interface JuneauMonitoringOptions {
  /**
   * A ServiceMonitor (Prometheus Operator, `monitoring.coreos.com/v1`) for the controller's and one
   * for the agents' metrics Service: HTTPS, the Prometheus ServiceAccount's token, the
   * self-signed certificate not verified (as kubebuilder's). Bind that ServiceAccount with `readers`.
   * @default false
   */
  readonly serviceMonitor?: boolean;
  /**
   * A PrometheusRule (`monitoring.coreos.com/v1`) with Juneau's alerts: an address nobody answers,
   * an ARP conflict, two ARPAdvertisements of one address, an agent Lease expired, a webhook
   * failing, a pool nearly full (docs/metrics.md#alerts).
   * @default false
   */
  readonly prometheusRule?: boolean;
  /**
   * Labels on the ServiceMonitors and the PrometheusRule, for the Prometheus's selectors
   * (e.g. `{ release: 'kube-prometheus-stack' }`).
   * @default none
   */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * ServiceAccounts, as `namespace/name`, bound to `juneau-metrics-reader` (a ClusterRoleBinding),
   * e.g. `monitoring/prometheus-k8s`. Others may be bound to it by hand.
   * @default none
   */
  readonly readers?: readonly string[];
}

/** The ClusterRole whose subjects may read every Juneau component's /metrics. */
export const METRICS_READER_ROLE = 'juneau-metrics-reader';

/** The metrics Services: the controller's (ClusterIP) and the agents' (headless: one endpoint per node). */
export const METRICS_SERVICES = {
  controller: `${INSTALL.controllerName}-metrics`,
  agent: `${INSTALL.agentName}-metrics`,
} as const;

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** The reader role, and its binding to `monitoring.readers`. */
export function metricsReader(o: ResolvedOptions): ManifestObject[] {
  const role: ManifestObject = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: meta(METRICS_READER_ROLE, undefined, INSTALL.controllerName),
    rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
  };
  const readers = o.monitoring.readers ?? [];
  if (readers.length === 0) return [role];
  return [
    role,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta(METRICS_READER_ROLE, undefined, INSTALL.controllerName),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: METRICS_READER_ROLE },
      subjects: readers.map((r) => {
        const [namespace, name] = r.split('/');
        return { kind: 'ServiceAccount', name, namespace };
      }),
    },
  ];
}

export function metricsServices(o: ResolvedOptions): ManifestObject[] {
  const p = INSTALL.ports;
  const service = (name: string, component: string, port: number, headless: boolean): ManifestObject => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name, o.namespace, name),
    spec: {
      ...(headless ? { clusterIP: 'None' } : {}),
      selector: selector(component),
      ports: [{ name: 'metrics', port, targetPort: 'metrics', protocol: 'TCP' }],
    },
  });
  return [
    service(METRICS_SERVICES.controller, INSTALL.controllerName, p.controllerMetrics, false),
    service(METRICS_SERVICES.agent, INSTALL.agentName, p.agentMetrics, true),
  ];
}

/** The opt-in Prometheus Operator objects. */
export function monitoringObjects(o: ResolvedOptions): ManifestObject[] {
  const m = o.monitoring;
  const metadata = (name: string) => ({
    name,
    namespace: o.namespace,
    labels: { ...labels(INSTALL.controllerName), ...m.labels },
  });
  const objects: ManifestObject[] = [];
  if (m.serviceMonitor)
    for (const name of Object.values(METRICS_SERVICES))
      objects.push({
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: metadata(name),
        spec: {
          selector: { matchLabels: selector(name) },
          namespaceSelector: { matchNames: [o.namespace] },
          endpoints: [
            {
              port: 'metrics',
              scheme: 'https',
              path: '/metrics',
              bearerTokenFile: SERVICE_ACCOUNT_TOKEN,
              tlsConfig: { insecureSkipVerify: true },
            },
          ],
        },
      });
  if (m.prometheusRule)
    objects.push({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: metadata('juneau'),
      spec: { groups: [{ name: 'juneau', rules: JUNEAU_ALERTS }] },
    });
  return objects;
}

/** One alerting rule as Prometheus reads it. */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  readonly labels: { readonly severity: 'warning' | 'critical' };
  readonly annotations: { readonly summary: string; readonly description: string };
}

/**
 * Juneau's alerts. Every controller replica exports the gauges read from its caches, so those are
 * taken as the max over replicas. test/unit/docs-metrics.test.ts checks that every metric named
 * here exists.
 */
export const JUNEAU_ALERTS: readonly AlertRule[] = [
  {
    alert: 'JuneauAddressUnanswered',
    expr: 'max by (namespace, name, vip, phase) (juneau_service_load_balancer_unanswered) == 1',
    for: '2m',
    labels: { severity: 'critical' },
    annotations: {
      summary: 'Nobody answers for the VIP {{ $labels.vip }} of Service {{ $labels.namespace }}/{{ $labels.name }}',
      description:
        'ServiceLoadBalancer {{ $labels.namespace }}/{{ $labels.name }} is {{ $labels.phase }}: it holds {{ $labels.vip }} but no node has a ready local backend (or a live agent), so no node answers ARP for it (SLB-8). `kubectl juneau why svc/{{ $labels.name }} -n {{ $labels.namespace }}` says why.',
    },
  },
  {
    alert: 'JuneauARPConflict',
    expr: 'sum by (address, instance) (increase(juneau_agent_arp_conflicts_total[5m])) > 0',
    for: '0m',
    labels: { severity: 'critical' },
    annotations: {
      summary: 'Another MAC claims {{ $labels.address }}, which Juneau answers for on {{ $labels.instance }}',
      description:
        'The agent saw ARP packets from another MAC for {{ $labels.address }} (RFC 5227 2.4): something else on the segment answers for the address, and clients may reach either. The Warning Event on the ARPAdvertisement names the MAC.',
    },
  },
  {
    alert: 'JuneauDuplicateAdvertisement',
    expr: 'max(juneau_arp_duplicate_addresses) > 0',
    for: '1m',
    labels: { severity: 'critical' },
    annotations: {
      summary: '{{ $value }} address(es) have more than one ARPAdvertisement (ARP-4)',
      description:
        'Two ARPAdvertisements name one address; the controller reports them with an Event and a status condition.',
    },
  },
  {
    alert: 'JuneauAgentLeaseExpired',
    expr: 'max by (node) (juneau_agent_lease_expired) == 1',
    for: '1m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'The Juneau agent on {{ $labels.node }} stopped renewing its Lease',
      description:
        'Node {{ $labels.node }} counts as unable to answer (FO-3): its addresses moved to other nodes. The agent is down, or cannot reach the API server.',
    },
  },
  {
    alert: 'JuneauWebhookFailing',
    expr: 'sum by (webhook, code) (rate(juneau_webhook_requests_total{webhook!="other", code!="200"}[5m])) > 0',
    for: '5m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'The Juneau webhook {{ $labels.webhook }} answers HTTP {{ $labels.code }}',
      description:
        'The API server applies the failurePolicy (Fail) to these requests: creating or changing Juneau objects fails. See the controller log ("admission handler failed") and its readiness.',
    },
  },
  {
    alert: 'JuneauPoolNearlyFull',
    expr: 'max by (pool) (juneau_pool_allocated_addresses) / max by (pool) (juneau_pool_size_addresses) > 0.9',
    for: '10m',
    labels: { severity: 'warning' },
    annotations: {
      summary: 'AddressPool {{ $labels.pool }} is {{ $value | humanizePercentage }} allocated',
      description: 'New Services and ElasticIPs of its network stay Pending once it is full: add addresses or a pool.',
    },
  },
];

export function validateMonitoringOptions(m: JuneauMonitoringOptions | undefined): ValidationIssue[] {
  if (m === undefined) return [];
  const issues: ValidationIssue[] = [...checkLabels('monitoring.labels', m.labels)];
  (m.readers ?? []).forEach((r, i) => {
    const field = `monitoring.readers[${i}]`;
    const parts = typeof r === 'string' ? r.split('/') : [];
    if (parts.length !== 2) {
      issues.push(issue(field, r, 'must be namespace/name of a ServiceAccount'));
      return;
    }
    issues.push(...checkLabelName(`${field} namespace`, parts[0]), ...checkLabelName(`${field} name`, parts[1]));
  });
  return issues;
}
