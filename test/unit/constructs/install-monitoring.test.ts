// The install's monitoring objects (constructs/shared/install/monitoring.ts): the reader role and the
// binaries' review rules always, the metrics Services always, the Prometheus Operator objects only
// when asked, and bad options named by field.
import { juneauInstallObjects, validateInstallOptions } from '../../../constructs/shared/install';
import { JUNEAU_ALERTS } from '../../../constructs/shared/install/monitoring';
import type { ManifestObject } from '../../../constructs/shared/install';

const find = (objects: ManifestObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);

describe('JuneauInstall monitoring', () => {
  test('by default: juneau-metrics-reader (get /metrics), both binaries may create TokenReviews and SubjectAccessReviews, a metrics Service each, no ServiceMonitor or PrometheusRule', () => {
    const objects = juneauInstallObjects();
    expect(find(objects, 'ClusterRole', 'juneau-metrics-reader')?.rules).toEqual([
      { nonResourceURLs: ['/metrics'], verbs: ['get'] },
    ]);
    expect(find(objects, 'ClusterRoleBinding', 'juneau-metrics-reader')).toBeUndefined();
    for (const sa of ['juneau-controller', 'juneau-agent'])
      expect(find(objects, 'ClusterRole', sa)?.rules).toEqual(
        expect.arrayContaining([
          { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
          { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
        ]),
      );
    expect(find(objects, 'Service', 'juneau-controller-metrics')?.spec).toEqual({
      selector: { 'app.kubernetes.io/name': 'juneau-controller', 'app.kubernetes.io/part-of': 'juneau' },
      ports: [{ name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' }],
    });
    expect(find(objects, 'Service', 'juneau-agent-metrics')?.spec).toMatchObject({ clusterIP: 'None' });
    expect(objects.filter((o) => o.apiVersion.startsWith('monitoring.coreos.com'))).toEqual([]);
  });

  test('serviceMonitor, prometheusRule, labels and readers', () => {
    const objects = juneauInstallObjects({
      monitoring: {
        serviceMonitor: true,
        prometheusRule: true,
        labels: { release: 'kube-prometheus-stack' },
        readers: ['monitoring/prometheus-k8s'],
      },
    });
    const monitors = objects.filter((o) => o.kind === 'ServiceMonitor');
    expect(monitors.map((m) => m.metadata.name)).toEqual(['juneau-controller-metrics', 'juneau-agent-metrics']);
    expect(monitors[0].metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    expect(monitors[0].spec).toMatchObject({
      selector: { matchLabels: { 'app.kubernetes.io/name': 'juneau-controller-metrics' } },
      endpoints: [{ port: 'metrics', scheme: 'https', tlsConfig: { insecureSkipVerify: true } }],
    });
    // Each ServiceMonitor selects a Service of the install by its labels.
    for (const m of monitors) {
      const wanted = (m.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
      const svc = objects.filter(
        (o) => o.kind === 'Service' && Object.entries(wanted).every(([k, v]) => o.metadata.labels?.[k] === v),
      );
      expect(svc.map((s) => s.metadata.name)).toEqual([m.metadata.name]);
    }
    const rule = find(objects, 'PrometheusRule', 'juneau');
    expect((rule?.spec as { groups: Array<{ rules: unknown[] }> }).groups[0].rules).toEqual(JUNEAU_ALERTS);
    expect(find(objects, 'ClusterRoleBinding', 'juneau-metrics-reader')).toMatchObject({
      roleRef: { kind: 'ClusterRole', name: 'juneau-metrics-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'monitoring' }],
    });
  });

  test('a reader that is not namespace/name, and a bad label, are named by field', () => {
    const issues = validateInstallOptions({
      monitoring: { readers: ['prometheus', 'monitoring/Bad_Name'], labels: { 'bad key!': 'x' } },
    });
    const fields = issues.map((i) => i.field);
    expect(fields).toEqual(expect.arrayContaining(['monitoring.readers[0]', 'monitoring.readers[1] name']));
    expect(fields.some((f) => f.startsWith('monitoring.labels'))).toBe(true);
  });
});
