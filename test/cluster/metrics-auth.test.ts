// SEC-22: the binaries' metrics listener (runtime/kube/health.ts with runtime/kube/metrics-tls.ts
// secureMetricsFor, as both mains build it) against the real kube-apiserver: it reviews callers
// with the ServiceAccount token of a reviewer that holds only the install's TokenReview and
// SubjectAccessReview rules, and serves /metrics over HTTPS (its self-signed certificate verified
// for 127.0.0.1) only to a ServiceAccount bound to the install's juneau-metrics-reader ClusterRole.
import * as https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { juneauInstallObjects, type ManifestObject } from '../../constructs/shared/install';
import { HealthServer } from '../../runtime/kube/health';
import { silentLogger } from '../../runtime/kube/log';
import { RuntimeMetrics } from '../../runtime/kube/metrics';
import { secureMetricsFor, type SecureMetrics } from '../../runtime/kube/metrics-tls';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { createNamespace, deleteNamespace, testKubeConfig, testRest } from './fixture';

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const install = juneauInstallObjects();
const installObject = (kind: string, name: string): ManifestObject => {
  const found = install.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`the install manifest has no ${kind} ${name}`);
  return found;
};

/** A ServiceAccount of `ns` and a short-lived token for it (TokenRequest, as the kubelet projects one). */
async function serviceAccountToken(ns: string, name: string): Promise<string> {
  await testRest().request('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, {
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
  });
  const review = await testRest().request<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`,
    { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } } },
  );
  return review.status.token;
}

/** A client of the test API server as `token` (the server's CA from the admin kubeconfig). */
function clientWithToken(token: string): RestClient {
  const admin = testKubeConfig();
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'reviewer', token }],
    contexts: [{ name: 'reviewer', cluster: cluster.name, user: 'reviewer' }],
    currentContext: 'reviewer',
  });
  return new RestClient(kc);
}

/** GET /metrics over HTTPS, verifying the listener's certificate for 127.0.0.1. */
function scrape(port: number, ca: string, token?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: '/metrics', ca, headers: token ? { Authorization: `Bearer ${token}` } : {} },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('SEC-22: /metrics over HTTPS, authenticated and authorized by the API server', () => {
  let ns: string;
  let secure: SecureMetrics;
  let server: HealthServer;
  let port: number;
  const cleanups: Array<() => Promise<unknown>> = [];
  const clusterObject = async (path: string, object: object) => {
    const created = await testRest().request<KubeObject>('POST', `${RBAC}/${path}`, { body: object });
    cleanups.push(() => testRest().request('DELETE', `${RBAC}/${path}/${created.metadata!.name}`));
  };

  beforeAll(async () => {
    ns = await createNamespace('metrics-auth');
    // The reviewer: a ServiceAccount with only the install controller's rules for the reviews.
    const controllerRules = (
      installObject('ClusterRole', 'juneau-controller').rules as Array<{ apiGroups: string[] }>
    ).filter((r) => r.apiGroups.includes('authentication.k8s.io') || r.apiGroups.includes('authorization.k8s.io'));
    const reviewer = `${ns}-reviewer`;
    await clusterObject('clusterroles', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: reviewer },
      rules: controllerRules.filter((r) => !JSON.stringify(r).includes('selfsubjectreviews')),
    });
    await clusterObject('clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: reviewer },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: reviewer },
      subjects: [{ kind: 'ServiceAccount', name: 'reviewer', namespace: ns }],
    });
    // The install's reader role, as shipped, under a name of this test (cluster objects outlive a namespace).
    const readerRole = installObject('ClusterRole', 'juneau-metrics-reader');
    const reader = `${ns}-metrics-reader`;
    await clusterObject('clusterroles', { ...readerRole, metadata: { name: reader } });
    await clusterObject('clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: reader },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: reader },
      subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: ns }],
    });
    const rest = clientWithToken(await serviceAccountToken(ns, 'reviewer'));
    const metrics = new RuntimeMetrics({ processMetrics: false });
    metrics.setPoolUsage('metrics-auth', 3, 8);
    const flags = { metricsAddr: '127.0.0.1:0', metricsSecure: true, metricsCertDir: undefined };
    secure = (await secureMetricsFor(flags, rest, silentLogger))!;
    server = new HealthServer({ healthAddr: '0', metricsAddr: flags.metricsAddr, metrics, secureMetrics: secure });
    port = (await server.start()).metricsPort!;
  });

  afterAll(async () => {
    await server?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
    if (ns) await deleteNamespace(ns);
  });

  test('no token: 401, and no review is asked', async () => {
    const before = secure.auth.reviews;
    expect(await scrape(port, secure.certificate.cert)).toEqual({
      status: 401,
      text: 'Unauthorized: a bearer token is needed\n',
    });
    expect(secure.auth.reviews).toBe(before);
  });

  test('a token the API server does not accept: 401', async () => {
    const forged = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06YWRtaW4ifQ.c2lnbmF0dXJl';
    expect(await scrape(port, secure.certificate.cert, forged)).toEqual({
      status: 401,
      text: 'Unauthorized: the API server did not accept the token\n',
    });
  });

  test('a ServiceAccount not bound to juneau-metrics-reader: 403 naming it', async () => {
    const token = await serviceAccountToken(ns, 'tenant');
    expect(await scrape(port, secure.certificate.cert, token)).toEqual({
      status: 403,
      text: `Forbidden: user "system:serviceaccount:${ns}:tenant" may not get /metrics\n`,
    });
  });

  test('a ServiceAccount bound to juneau-metrics-reader: 200 with the metrics; its next scrape is answered from the cache', async () => {
    const token = await serviceAccountToken(ns, 'prometheus');
    const first = await scrape(port, secure.certificate.cert, token);
    expect(first.status).toBe(200);
    expect(first.text).toContain('juneau_pool_size_addresses{pool="metrics-auth"} 8');
    const reviews = secure.auth.reviews;
    expect((await scrape(port, secure.certificate.cert, token)).status).toBe(200);
    expect(secure.auth.reviews).toBe(reviews);
  });
});
