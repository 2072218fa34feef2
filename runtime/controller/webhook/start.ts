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
import { silentLogger } from '../../kube/log';
import type { RestClient } from '../../kube/rest';
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

export function startWebhookServer(o: WebhookServerOptions): WebhookServerHandle {
  const logger = (o.logger ?? silentLogger).child({ component: 'webhook' });
  const inCluster = o.inCluster ?? !!process.env.KUBERNETES_SERVICE_HOST;
  const mode = resolveWebhookMode({ urlBase: o.urlBase, inCluster });
  if (mode === 'disabled') {
    logger.warn(
      'not running in a cluster and no --webhook-url-base given: serving no admission webhooks, and registering none',
    );
    return { mode, ready: Promise.resolve(), isReady: () => true, port: () => 0, stop: async () => undefined };
  }

  const namespace = o.namespace ?? INSTALL.namespace;
  const configurationName = o.configurationName ?? INSTALL.webhookConfigurationName;
  const certSource = o.certificates ?? 'self-managed';
  const url = mode === 'url' ? parseUrlBase(o.urlBase ?? '') : undefined;
  const listen = o.addr
    ? parseListenAddress(o.addr)
    : url
      ? { host: url.host, port: url.port }
      : parseListenAddress(`:${INSTALL.ports.webhook}`);
  const hosts = [...(url ? [url.host] : []), ...serviceHostnames(INSTALL.webhookServiceName, namespace)];
  const server = new AdmissionServer({ host: listen.host, port: listen.port, caches: o.caches, logger: o.logger });
  const interval = o.checkIntervalMs ?? 10_000;

  let stopped = false;
  let listening = false;
  let ready = false;
  let current: WebhookCertificates | undefined;
  let servedCert: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  let markReady: () => void = () => undefined;
  let failReady: (err: Error) => void = () => undefined;
  const readyPromise = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  readyPromise.catch(() => undefined); // observed by callers that await it; never an unhandled rejection

  const serve = async (certificate: ServingCertificate) => {
    if (servedCert === certificate.cert) return;
    if (!listening) {
      await server.listen(certificate);
      listening = true;
      logger.info('webhook server listening', {
        host: listen.host ?? '*',
        port: server.port,
        mode,
        certificates: certSource,
      });
    } else {
      server.setCertificate(certificate);
      logger.info('webhook serving certificate reloaded');
    }
    servedCert = certificate.cert;
  };

  /** One pass: settle the certificate, serve it, make the API server trust it. */
  const step = async () => {
    if (certSource === 'cert-manager' && mode === 'service') {
      const dir = o.certDir ?? DEFAULT_WEBHOOK_CERT_DIR;
      await serve({
        cert: await readFile(path.join(dir, 'tls.crt'), 'utf8'),
        key: await readFile(path.join(dir, 'tls.key'), 'utf8'),
      });
      return;
    }
    const ensured = await ensureCertificateSecret(o.rest, {
      namespace,
      name: o.certSecretName ?? INSTALL.webhookCertSecretName,
      hosts,
      current,
      lifetimes: o.lifetimes,
    });
    if (ensured.source === 'issued')
      logger.info('issued webhook certificates', { why: ensured.why, renewAt: ensured.renewAt.toISOString() });
    current = ensured.material;
    await serve({ cert: ensured.material.tlsCert, key: ensured.material.tlsKey });
    if (mode === 'url') {
      const desired = urlWebhookConfiguration({
        name: configurationName,
        urlBase: o.urlBase ?? '',
        caBundle: ensured.material.caBundle,
        namespace,
        objectSelector: o.objectSelector,
      });
      const result = await ensureUrlRegistration(o.rest, desired);
      if (result !== 'unchanged')
        logger.info(`ValidatingWebhookConfiguration ${configurationName} ${result} for ${o.urlBase}`);
    } else {
      const result = await ensureCaBundle(o.rest, configurationName, ensured.material.caBundle);
      if (result === 'patched')
        logger.info(`caBundle written into ValidatingWebhookConfiguration ${configurationName}`);
    }
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        await step();
        // Ready (the readiness probe, the Service's endpoints) only once the caches answer truly.
        if (!ready && !(o.caches.hasSynced?.() ?? true)) throw new Error('webhook caches not synced yet');
        if (!ready) {
          ready = true;
          markReady();
        }
      } catch (err) {
        logger.warn(
          ready
            ? 'webhook certificate check failed; still serving the last certificate'
            : 'webhook not ready yet; retrying',
          { err: String(err) },
        );
      }
      if (stopped) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, ready ? interval : Math.min(interval, 2_000));
        timer.unref();
      });
    }
  })();

  return {
    mode,
    ready: readyPromise,
    isReady: () => ready,
    port: () => server.port,
    async stop(options = {}) {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await loop;
      if (!ready) failReady(new Error('the webhook server was stopped before it became ready'));
      if (mode === 'url' && (o.unregisterOnStop ?? true) && !options.keepRegistration) {
        await removeRegistration(o.rest, configurationName).catch((err) =>
          logger.warn('could not remove the webhook registration', { err: String(err) }),
        );
      }
      await server.close();
    },
  };
}
