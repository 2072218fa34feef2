/**
 * Starts the admission webhooks of the controller, in one of three modes:
 * - `service` (in a cluster): served on `--webhook-addr` behind the Service of the install
 *   manifest. Self-managed certificates (default) live in the Secret `INSTALL.webhookCertSecretName`
 *   and the CA is patched into the installed ValidatingWebhookConfiguration; with cert-manager the
 *   certificate is read from `--webhook-cert-dir` and cert-manager's injector fills `caBundle`.
 * - `url` (outside a cluster, `--webhook-url-base https://127.0.0.1:<port>`): served there and
 *   registered by URL with the controller's own CA.
 * - `disabled` (outside a cluster without `--webhook-url-base`): nothing is served or registered,
 *   and the log says so, so the API server is never pointed at a process that is not there.
 * Every replica serves (not only the leader). `ready` resolves once the server listens with a
 * certificate the API server trusts (Secret settled and caBundle written, or registered by URL)
 * and its caches have synced (`caches.hasSynced`); until they have, it answers no admission.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { INSTALL, type LabelSelector } from '../../../api';
import { parseListenAddress } from '../../kube/health';
import type { Logger } from '../../kube/log';
import type { RuntimeMetrics } from '../../kube/metrics';
import { silentLogger } from '../../kube/log';
import type { RestClient } from '../../kube/rest';
import { Lifecycle } from '../../kube/lifecycle';
import { requeueAfter, WorkQueue, type ReconcileResult } from '../../kube/workqueue';
import { ensureCertificateSecret } from './cert-secret';
import { serviceHostnames, type CertificateLifetimes, type WebhookCertificates } from './certificates';
import { ensureCaBundle, ensureUrlRegistration, removeRegistration, urlWebhookConfiguration } from './registration';
import { AdmissionServer, type ServingCertificate } from './server';
import type { WebhookCaches } from './views';

export type WebhookMode = 'service' | 'url' | 'disabled';
export type WebhookCertificateSource = 'self-managed' | 'cert-manager';

/** Where cert-manager's Secret is mounted by the install manifest. */
export const DEFAULT_WEBHOOK_CERT_DIR = '/var/run/juneau/webhook';

export interface WebhookServerOptions {
  readonly rest: RestClient;
  /** Gets `juneau_webhook_requests_total` (webhook/server.ts). */
  readonly metrics?: RuntimeMetrics;
  readonly caches: WebhookCaches;
  readonly logger?: Logger;
  /** `--webhook-addr`. @default `:9443`; in url mode the URL's host:port */
  readonly addr?: string;
  /** `--webhook-url-base`, e.g. `https://127.0.0.1:9443`. */
  readonly urlBase?: string;
  /** `--webhook-certificates`. @default 'self-managed' */
  readonly certificates?: WebhookCertificateSource;
  /** `--webhook-cert-dir` (cert-manager mode). @default DEFAULT_WEBHOOK_CERT_DIR */
  readonly certDir?: string;
  /** The controller's namespace (POD_NAMESPACE): where the Secret is and what the Service names. @default INSTALL.namespace */
  readonly namespace?: string;
  /** @default whether KUBERNETES_SERVICE_HOST is set */
  readonly inCluster?: boolean;
  /** @default INSTALL.webhookConfigurationName */
  readonly configurationName?: string;
  /** @default INSTALL.webhookCertSecretName */
  readonly certSecretName?: string;
  /** url mode: narrow every webhook to objects with these labels (tests on a shared cluster). */
  readonly objectSelector?: LabelSelector;
  /** url mode: delete the registration on stop(). @default true */
  readonly unregisterOnStop?: boolean;
  /** How often the Secret (or cert dir) and caBundle are checked. @default 10_000 */
  readonly checkIntervalMs?: number;
  readonly lifetimes?: CertificateLifetimes;
}

export interface WebhookServerHandle {
  readonly mode: WebhookMode;
  /** Resolves when the API server can call this replica; rejects only if stopped first. */
  readonly ready: Promise<void>;
  isReady(): boolean;
  /** The bound port once listening (0 before, and in disabled mode). */
  port(): number;
  /** Stops serving; in url mode also deletes the registration unless `keepRegistration` (or unregisterOnStop: false). */
  stop(options?: { keepRegistration?: boolean }): Promise<void>;
}

/** Which mode the flags and the environment select. */
export function resolveWebhookMode(o: { urlBase?: string; inCluster: boolean }): WebhookMode {
  if (o.urlBase) return 'url';
  return o.inCluster ? 'service' : 'disabled';
}

/** `https://127.0.0.1:9443` → listen on 127.0.0.1:9443 and name 127.0.0.1 in the certificate. */
export function parseUrlBase(urlBase: string): { host: string; port: number } {
  let url: URL;
  try {
    url = new URL(urlBase);
  } catch {
    throw new Error(`--webhook-url-base '${urlBase}' is not a URL (e.g. https://127.0.0.1:9443)`);
  }
  if (url.protocol !== 'https:')
    throw new Error(`--webhook-url-base '${urlBase}' must be https: the API server calls webhooks over TLS only`);
  if (url.pathname !== '/' || url.search || url.hash)
    throw new Error(`--webhook-url-base '${urlBase}' must be scheme://host:port only; the webhook paths are appended`);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : 443 };
}

/** The one key of the certificate queue: the whole serving state is checked in one pass. */
const CERTIFICATE_KEY = 'certificate';

/**
 * The webhook server of one replica. A one-key work queue (the same machinery as the reconcilers)
 * runs the certificate pass: settle the certificate, serve it, make the API server trust it; it
 * comes back every `checkIntervalMs` (renewal, a Secret or cert dir changed by someone else), and a
 * failure is retried with backoff from 2 s (or the interval, if shorter) up to that interval.
 */
export class WebhookServer implements WebhookServerHandle {
  readonly mode: WebhookMode;
  readonly ready: Promise<void>;
  private readonly logger: Logger;
  private readonly namespace: string;
  private readonly configurationName: string;
  private readonly certSource: WebhookCertificateSource;
  private readonly listen: { host?: string; port: number };
  private readonly hosts: string[];
  private readonly interval: number;
  private readonly server: AdmissionServer | undefined;
  private readonly queue: WorkQueue;
  /** Stop at any moment: before start, during it, twice (kube/lifecycle.ts). */
  private readonly lifecycle = new Lifecycle();
  private listening = false;
  private isReadyNow = false;
  private current: WebhookCertificates | undefined;
  private servedCert: string | undefined;
  private markReady: () => void = () => undefined;
  private failReady: (err: Error) => void = () => undefined;

  constructor(private readonly o: WebhookServerOptions) {
    this.logger = (o.logger ?? silentLogger).child({ component: 'webhook' });
    this.mode = resolveWebhookMode({
      urlBase: o.urlBase,
      inCluster: o.inCluster ?? !!process.env.KUBERNETES_SERVICE_HOST,
    });
    this.namespace = o.namespace ?? INSTALL.namespace;
    this.configurationName = o.configurationName ?? INSTALL.webhookConfigurationName;
    this.certSource = o.certificates ?? 'self-managed';
    const url = this.mode === 'url' ? parseUrlBase(o.urlBase ?? '') : undefined;
    this.listen = o.addr ? parseListenAddress(o.addr) : (url ?? parseListenAddress(`:${INSTALL.ports.webhook}`));
    this.hosts = [...(url ? [url.host] : []), ...serviceHostnames(INSTALL.webhookServiceName, this.namespace)];
    this.interval = o.checkIntervalMs ?? 10_000;
    this.queue = new WorkQueue({ baseDelayMs: Math.min(this.interval, 2_000), maxDelayMs: this.interval });
    this.ready = new Promise<void>((resolve, reject) => {
      this.markReady = resolve;
      this.failReady = reject;
    });
    this.ready.catch(() => undefined); // observed by callers that await it; never an unhandled rejection
    if (this.mode === 'disabled') {
      this.isReadyNow = true;
      this.markReady();
      return;
    }
    const { host, port } = this.listen;
    this.server = new AdmissionServer({ host, port, caches: o.caches, logger: o.logger, metrics: o.metrics });
  }

  isReady(): boolean {
    return this.isReadyNow;
  }

  /** The bound port once listening (0 before, and in disabled mode). */
  port(): number {
    return this.server?.port ?? 0;
  }

  /** Starts the certificate pass (or, disabled, says in the log that nothing is served). */
  start(): Promise<void> {
    return this.lifecycle.start(async () => {
      if (this.mode === 'disabled') {
        this.logger.warn(
          'not running in a cluster and no --webhook-url-base given: serving no admission webhooks, and registering none',
        );
        return;
      }
      this.queue.run(
        async () => this.certificatePass(),
        1,
        (_key, err) =>
          this.logger.warn(
            this.isReadyNow
              ? 'webhook certificate check failed; still serving the last certificate'
              : 'webhook not ready yet; retrying',
            { err: String(err) },
          ),
      );
      this.queue.add(CERTIFICATE_KEY);
    });
  }

  /** Stops serving; in url mode also deletes the registration unless `keepRegistration` (or unregisterOnStop: false). */
  stop(options: { keepRegistration?: boolean } = {}): Promise<void> {
    return this.lifecycle.stop(async () => {
      await this.queue.shutdown({ drop: true });
      if (!this.isReadyNow) this.failReady(new Error('the webhook server was stopped before it became ready'));
      if (this.mode === 'url' && (this.o.unregisterOnStop ?? true) && !options.keepRegistration) {
        await removeRegistration(this.o.rest, this.configurationName).catch((err: unknown) =>
          this.logger.warn('could not remove the webhook registration', { err: String(err) }),
        );
      }
      await this.server?.close();
    });
  }

  /** One pass; ready (the readiness probe, the Service's endpoints) only once the caches answer truly. */
  private async certificatePass(): Promise<ReconcileResult> {
    await this.settleCertificate();
    if (!this.isReadyNow && !(this.o.caches.hasSynced?.() ?? true)) throw new Error('webhook caches not synced yet');
    if (!this.isReadyNow) {
      this.isReadyNow = true;
      this.markReady();
    }
    return requeueAfter(this.interval);
  }

  /** Settle the certificate, serve it, make the API server trust it. */
  private async settleCertificate(): Promise<void> {
    const o = this.o;
    if (this.certSource === 'cert-manager' && this.mode === 'service') {
      const dir = o.certDir ?? DEFAULT_WEBHOOK_CERT_DIR;
      await this.serve({
        cert: await readFile(path.join(dir, 'tls.crt'), 'utf8'),
        key: await readFile(path.join(dir, 'tls.key'), 'utf8'),
      });
      return;
    }
    const ensured = await ensureCertificateSecret(o.rest, {
      namespace: this.namespace,
      name: o.certSecretName ?? INSTALL.webhookCertSecretName,
      hosts: this.hosts,
      current: this.current,
      lifetimes: o.lifetimes,
    });
    if (ensured.source === 'issued')
      this.logger.info('issued webhook certificates', { why: ensured.why, renewAt: ensured.renewAt.toISOString() });
    this.current = ensured.material;
    await this.serve({ cert: ensured.material.tlsCert, key: ensured.material.tlsKey });
    await this.ensureTrusted(ensured.material.caBundle);
  }

  /** url mode: our registration with our CA; service mode: the CA in the installed configuration. */
  private async ensureTrusted(caBundle: string): Promise<void> {
    const name = this.configurationName;
    if (this.mode === 'url') {
      const desired = urlWebhookConfiguration({
        name,
        urlBase: this.o.urlBase ?? '',
        caBundle,
        namespace: this.namespace,
        objectSelector: this.o.objectSelector,
      });
      const result = await ensureUrlRegistration(this.o.rest, desired);
      if (result !== 'unchanged')
        this.logger.info(`ValidatingWebhookConfiguration ${name} ${result} for ${this.o.urlBase}`);
    } else {
      const result = await ensureCaBundle(this.o.rest, name, caBundle);
      if (result === 'patched') this.logger.info(`caBundle written into ValidatingWebhookConfiguration ${name}`);
    }
  }

  private async serve(certificate: ServingCertificate): Promise<void> {
    const server = this.server!;
    if (this.servedCert === certificate.cert) return;
    if (!this.listening) {
      await server.listen(certificate);
      this.listening = true;
      this.logger.info('webhook server listening', {
        host: this.listen.host ?? '*',
        port: server.port,
        mode: this.mode,
        certificates: this.certSource,
      });
    } else {
      server.setCertificate(certificate);
      this.logger.info('webhook serving certificate reloaded');
    }
    this.servedCert = certificate.cert;
  }
}

/** A WebhookServer, started. */
export function startWebhookServer(o: WebhookServerOptions): WebhookServer {
  const server = new WebhookServer(o);
  void server.start();
  return server;
}
