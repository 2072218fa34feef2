/**
 * The HTTPS AdmissionReview v1 server: `/healthz`, and one POST path per webhook (WEBHOOK_PATHS).
 * A request whose handler throws gets HTTP 500, so the API server applies the webhook's
 * failurePolicy (Fail for Juneau's kinds) instead of a made-up verdict. The serving certificate
 * can be swapped while running (rotation) without dropping the listener.
 */
import * as https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../kube/log';
import { silentLogger } from '../../kube/log';
import { reviewResponse, toAdmissionResponse, type AdmissionReview } from './admission';
import { admissionHandlers, type AdmissionHandler } from './handlers';
import type { WebhookCaches } from './views';

/** Larger than any object etcd accepts (1.5 MiB), with room for oldObject. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface ServingCertificate {
  readonly cert: string;
  readonly key: string;
}

export interface AdmissionServerOptions {
  /** undefined listens on all interfaces. */
  readonly host?: string;
  /** 0 picks a free port (see `port` after `listen`). */
  readonly port: number;
  readonly caches: WebhookCaches;
  readonly logger?: Logger;
  /** @default admissionHandlers */
  readonly handlers?: Readonly<Record<string, AdmissionHandler>>;
}

export class AdmissionServer {
  private server: https.Server | undefined;
  private readonly logger: Logger;
  private readonly handlers: Readonly<Record<string, AdmissionHandler>>;

  constructor(private readonly options: AdmissionServerOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: 'webhook' });
    this.handlers = options.handlers ?? admissionHandlers;
  }

  /** Starts listening with this certificate; resolves with the bound port. */
  async listen(certificate: ServingCertificate): Promise<number> {
    if (this.server) throw new Error('the webhook server is already listening');
    const server = https.createServer(
      { cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' },
      (req, res) => void this.serve(req, res),
    );
    server.requestTimeout = 30_000;
    server.headersTimeout = 10_000;
    server.keepAliveTimeout = 60_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('tlsClientError', (err) => this.logger.debug('TLS handshake failed', { err: err.message }));
    return this.port;
  }

  get port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? 0;
  }

  /** Rotation: new connections get the new certificate; open ones finish with the old. */
  setCertificate(certificate: ServingCertificate): void {
    this.server?.setSecureContext({ cert: certificate.cert, key: certificate.key });
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'https://webhook').pathname;
    if (path === '/healthz' && (req.method === 'GET' || req.method === 'HEAD'))
      return send(res, 200, 'ok\n', 'text/plain');
    const handler = Object.prototype.hasOwnProperty.call(this.handlers, path) ? this.handlers[path] : undefined;
    if (!handler) return send(res, 404, `no webhook at ${path}\n`, 'text/plain');
    if (req.method !== 'POST') return send(res, 405, 'POST an AdmissionReview\n', 'text/plain');

    let review: AdmissionReview;
    try {
      review = JSON.parse(await readBody(req)) as AdmissionReview;
    } catch (err) {
      return send(res, 400, `not an AdmissionReview: ${String(err)}\n`, 'text/plain');
    }
    const request = review?.request;
    if (review?.apiVersion !== 'admission.k8s.io/v1' || !request?.uid)
      return send(res, 400, 'expected an admission.k8s.io/v1 AdmissionReview with request.uid\n', 'text/plain');

    if (this.options.caches.hasSynced && !this.options.caches.hasSynced()) {
      // Not a verdict: an empty cache would allow duplicates. The API server applies the failurePolicy.
      return send(res, 500, 'webhook caches not synced yet; the API server applies the failurePolicy\n', 'text/plain');
    }
    const started = Date.now();
    try {
      const verdict = await handler(request, this.options.caches);
      const response = toAdmissionResponse(request.uid, verdict);
      const fields = {
        path,
        operation: request.operation,
        namespace: request.namespace,
        name: request.name ?? (request.object as { metadata?: { name?: string } } | undefined)?.metadata?.name,
        ms: Date.now() - started,
      };
      if (!response.allowed) this.logger.info('admission denied', { ...fields, message: response.status?.message });
      else this.logger.debug('admission allowed', fields);
      send(res, 200, JSON.stringify(reviewResponse(response)), 'application/json');
    } catch (err) {
      this.logger.error('admission handler failed; the API server applies the failurePolicy', {
        path,
        err: String(err),
      });
      send(res, 500, `webhook failed: ${String(err)}\n`, 'text/plain');
    }
  }
}

function send(res: ServerResponse, code: number, body: string, contentType: string): void {
  res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`body larger than ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
