// The webhook's HTTPS server and its certificates, without an API server: in-process CA and
// serving certificate, rotation decisions, /healthz, AdmissionReview round trips, failure -> 500.
import * as https from 'node:https';
import { X509Certificate } from 'node:crypto';
import { WEBHOOK_PATHS } from '../../../api';
import {
  bundleOf,
  checkCertificates,
  DEFAULT_LIFETIMES,
  issueCertificates,
  serviceHostnames,
  splitPem,
  type WebhookCertificates,
} from '../../../runtime/controller/webhook/certificates';
import { certificatesFromSecret, secretOf } from '../../../runtime/controller/webhook/cert-secret';
import { juneauWebhooks } from '../../../api/webhooks';
import { urlWebhookConfiguration } from '../../../runtime/controller/webhook/registration';
import { AdmissionServer } from '../../../runtime/controller/webhook/server';
import { parseUrlBase, resolveWebhookMode, startWebhookServer } from '../../../runtime/controller/webhook/start';
import type { WebhookCaches } from '../../../runtime/controller/webhook/views';
import type { RestClient } from '../../../runtime/kube/rest';

jest.setTimeout(30_000);
const HOSTS = ['127.0.0.1', ...serviceHostnames('juneau-webhook', 'juneau-system')];
const DAY = 24 * 3600 * 1000;

let material: WebhookCertificates;
beforeAll(async () => {
  material = await issueCertificates(HOSTS);
});

describe('certificates', () => {
  it('issues a CA and a serving certificate for the Service names and the URL host', () => {
    const leaf = new X509Certificate(material.tlsCert);
    const ca = new X509Certificate(material.caCert);
    expect(ca.ca).toBe(true);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(leaf.checkHost('juneau-webhook.juneau-system.svc')).toBe('juneau-webhook.juneau-system.svc');
    expect(splitPem(material.caBundle)).toHaveLength(1);
    expect(checkCertificates(material, HOSTS, new Date()).usable).toBe(true);
  });

  it('asks for rotation near the end of the serving certificate, for a missing host, and for foreign material', async () => {
    const leafEnd = new Date(new X509Certificate(material.tlsCert).validTo).getTime();
    const late = checkCertificates(material, HOSTS, new Date(leafEnd - DEFAULT_LIFETIMES.renewBeforeMs + DAY));
    expect(late).toMatchObject({ usable: false, keepCa: true });
    expect(checkCertificates(material, [...HOSTS, 'other.example'], new Date())).toMatchObject({
      usable: false,
      why: expect.stringContaining('other.example'),
      keepCa: true,
    });
    const other = await issueCertificates(['127.0.0.1']);
    expect(
      checkCertificates({ ...material, tlsCert: other.tlsCert, tlsKey: other.tlsKey }, ['127.0.0.1'], new Date()),
    ).toMatchObject({ usable: false, why: expect.stringContaining('not signed by the CA') });
    expect(checkCertificates({ ...material, caKey: other.caKey }, HOSTS, new Date())).toMatchObject({
      usable: false,
      keepCa: false,
    });
  });

  it('a new serving certificate from the kept CA; a new CA keeps the previous one in the bundle', async () => {
    const renewed = await issueCertificates(HOSTS, {
      ca: { cert: material.caCert, key: material.caKey },
      previousCaBundle: material.caBundle,
    });
    expect(renewed.caCert).toBe(material.caCert);
    expect(splitPem(renewed.caBundle)).toHaveLength(1);
    expect(checkCertificates(renewed, HOSTS, new Date()).usable).toBe(true);
    const newCa = await issueCertificates(HOSTS, { previousCaBundle: material.caBundle });
    expect(splitPem(newCa.caBundle)).toEqual([newCa.caCert.trim(), material.caCert.trim()]);
    // An expired previous CA is dropped.
    expect(splitPem(bundleOf(newCa.caCert, material.caBundle, new Date(Date.now() + 4000 * DAY)))).toHaveLength(1);
  });

  it('round-trips through a kubernetes.io/tls Secret', () => {
    const secret = secretOf('ns', 'cert', material);
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(['ca-bundle.crt', 'ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    expect(certificatesFromSecret(secret)).toEqual(material);
  });
});

describe('registration by URL', () => {
  it("registers the install manifest's webhooks (names, rules, matchConditions, failurePolicy) by URL with the CA", () => {
    const installed = juneauWebhooks();
    const config = urlWebhookConfiguration({
      name: 'juneau-dev',
      urlBase: 'https://127.0.0.1:9443/',
      caBundle: material.caBundle,
      objectSelector: { matchLabels: { a: 'b' } },
    });
    expect(config.webhooks?.map((w) => w.name)).toEqual(installed.map((w) => w.name));
    for (const [i, w] of (config.webhooks ?? []).entries()) {
      expect(w.clientConfig).toEqual({
        url: `https://127.0.0.1:9443${installed[i].clientConfig.service?.path}`,
        caBundle: Buffer.from(material.caBundle).toString('base64'),
      });
      expect(w.rules).toEqual(installed[i].rules);
      expect(w.matchConditions).toEqual(installed[i].matchConditions);
      expect(w.failurePolicy).toBe(installed[i].failurePolicy);
      expect(w.objectSelector).toEqual({ matchLabels: { a: 'b' } });
    }
    expect(config.webhooks?.find((w) => w.clientConfig.url?.endsWith(WEBHOOK_PATHS.pod))?.matchConditions?.length).toBe(
      1,
    );
  });

  it('modes: url with --webhook-url-base, service in a cluster, otherwise disabled', () => {
    expect(resolveWebhookMode({ urlBase: 'https://127.0.0.1:1', inCluster: false })).toBe('url');
    expect(resolveWebhookMode({ inCluster: true })).toBe('service');
    expect(resolveWebhookMode({ inCluster: false })).toBe('disabled');
    expect(parseUrlBase('https://127.0.0.1:9443')).toEqual({ host: '127.0.0.1', port: 9443 });
    expect(() => parseUrlBase('http://127.0.0.1:9443')).toThrow(/https/);
    expect(() => parseUrlBase('https://127.0.0.1:9443/x')).toThrow(/paths are appended/);
  });

  it('disabled: serves nothing, registers nothing, and says so in the log', async () => {
    const lines: string[] = [];
    const logger = {
      level: 'info',
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: (m: string) => lines.push(m),
      child: () => logger,
    } as const;
    const handle = startWebhookServer({
      rest: {} as RestClient,
      caches: {} as WebhookCaches,
      inCluster: false,
      logger,
    });
    await handle.ready;
    expect(handle.mode).toBe('disabled');
    expect(handle.port()).toBe(0);
    expect(lines.join('\n')).toMatch(/serving no admission webhooks/);
    await handle.stop();
  });
});

describe('AdmissionServer over HTTPS', () => {
  const list = <T>(items: T[]) => ({ list: () => items });
  const caches: WebhookCaches = {
    addressPools: list([{ metadata: { name: 'p1' }, spec: { advertiseMode: 'arp', addresses: ['10.0.0.0/24'] } }]),
    externalNetworks: list([{ metadata: { name: 'lan' }, spec: { type: 'arp', addressPools: ['p1'] } }]),
    arpAdvertisements: list([]),
    nodes: list([]),
    elasticIPAttachments: list([]),
    networkInterfaces: { list: () => Promise.reject(new Error('cache down')) },
    pods: list([]),
  };
  let server: AdmissionServer;
  let port: number;
  beforeAll(async () => {
    server = new AdmissionServer({ host: '127.0.0.1', port: 0, caches });
    port = await server.listen({ cert: material.tlsCert, key: material.tlsKey });
  });
  afterAll(() => server.close());

  const call = (path: string, body?: unknown, ca = material.caBundle) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port,
          path,
          method: body === undefined ? 'GET' : 'POST',
          ca,
          agent: false,
          headers: { 'Content-Type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  const review = (object: unknown, namespace?: string) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'uid-1', operation: 'CREATE', namespace, object },
  });

  it('/healthz answers over TLS trusted by the CA bundle', async () => {
    expect(await call('/healthz')).toEqual({ status: 200, body: 'ok\n' });
  });

  it('EN-4: a denial is HTTP 200 with allowed:false, code 403 and the message naming the other network', async () => {
    const res = await call(
      WEBHOOK_PATHS.externalNetwork,
      review({ metadata: { name: 'other' }, spec: { type: 'arp', addressPools: ['p1'] } }),
    );
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body);
    expect(body).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'uid-1', allowed: false, status: { code: 403, reason: 'Forbidden' } },
    });
    expect(body.response.status.message).toContain('ExternalNetwork lan');
  });

  it('allows what no rule refuses', async () => {
    const res = await call(
      WEBHOOK_PATHS.addressPool,
      review({ metadata: { name: 'p2' }, spec: { advertiseMode: 'arp', addresses: ['10.0.1.0/24'] } }),
    );
    expect(JSON.parse(res.body).response).toEqual({ uid: 'uid-1', allowed: true });
  });

  it('a failing cache is HTTP 500 (the API server applies failurePolicy); bad input is 400; unknown paths 404', async () => {
    expect(
      (
        await call(
          WEBHOOK_PATHS.elasticIPAttachment,
          review({ metadata: { name: 'a' }, spec: { elasticIP: 'e', networkInterface: 'n' } }, 'ns'),
        )
      ).status,
    ).toBe(500);
    expect((await call(WEBHOOK_PATHS.pod, { hello: 1 })).status).toBe(400);
    expect((await call('/validate/nothing', review({}))).status).toBe(404);
  });

  it('rotation: a new certificate is served to new connections without restarting', async () => {
    const next = await issueCertificates(['127.0.0.1']);
    server.setCertificate({ cert: next.tlsCert, key: next.tlsKey });
    expect((await call('/healthz', undefined, next.caBundle)).status).toBe(200);
    await expect(call('/healthz', undefined, material.caBundle)).rejects.toThrow();
    server.setCertificate({ cert: material.tlsCert, key: material.tlsKey });
  });
});
