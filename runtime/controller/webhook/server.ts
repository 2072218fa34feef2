/**
 * The HTTPS AdmissionReview v1 server: `/healthz`, and one POST path per webhook (WEBHOOK_PATHS).
 * A request whose handler throws gets HTTP 500, so the API server applies the webhook's
 * failurePolicy (Fail for Juneau's kinds) instead of a made-up verdict. The serving certificate
 * can be swapped while running (rotation) without dropping the listener.
 *
 * Any pod may reach the port (M1), so what one client can make it hold is bounded: a body above
 * MAX_BODY_BYTES is refused on its Content-Length before a byte is read (413), at most
 * `maxInFlight` requests are read and answered at once (the next gets 429 at once, which the API
 * server treats as a failed call: the failurePolicy applies), at most `maxConnections` sockets are
 * open, and a request must arrive whole within REQUEST_TIMEOUT_MS. The controller's own
 * ARPAdvertisement writes never wait for this server (api/webhooks.ts), so a flood cannot freeze
 * failover.
 */
import * as https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../kube/log';
import type { RuntimeMetrics } from '../../kube/metrics';
import { silentLogger } from '../../kube/log';
import { reviewResponse, toAdmissionResponse, type AdmissionReview } from './admission';
import { admissionHandlers, type AdmissionHandler } from './handlers';
import type { WebhookCaches } from './views';

/** Room for an update's object and oldObject at etcd's 1.5 MiB limit each; Juneau's kinds (bounded schemas) are far smaller. */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;
/** Requests read and answered at once; the API server calls with a 5 s timeout (api/webhooks.ts). */
const MAX_IN_FLIGHT = 32;
const MAX_CONNECTIONS = 256;
/** Headers and body within this long, well above the API server's 5 s webhook timeout. */
const REQUEST_TIMEOUT_MS = 10_000;

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
  /** Requests read and answered at once; more get 429. @default 32 */
  readonly maxInFlight?: number;
  /** Open sockets; more are closed on accept. @default 256 */
  readonly maxConnections?: number;
  /** Counts each answer by webhook path and HTTP status (`juneau_webhook_requests_total`). */
  readonly metrics?: RuntimeMetrics;
}

export class AdmissionServer {
  private server: https.Server | undefined;
  private readonly logger: Logger;
  private readonly handlers: Readonly<Record<string, AdmissionHandler>>;
  private inFlight = 0;
  private readonly answers: { inc(labels: { webhook: string; code: string }): void } | undefined;
  /** Requests answered 429 (maxInFlight) or 413 (Content-Length), since start. */
  refused = 0;

  constructor(private readonly options: AdmissionServerOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: 'webhook' });
    this.handlers = options.handlers ?? admissionHandlers;
    this.answers = options.metrics?.registerCounter(
      'webhook_requests_total',
      'Admission requests answered, by webhook path (other: no such webhook) and HTTP status; 200 carries the verdict, anything else makes the API server apply the failurePolicy.',
      ['webhook', 'code'],
    );
  }

  /** Starts listening with this certificate; resolves with the bound port. */
  async listen(certificate: ServingCertificate): Promise<number> {
    if (this.server) throw new Error('the webhook server is already listening');
    const server = https.createServer(
      { cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' },
      (req, res) => void this.serve(req, res),
    );
    server.requestTimeout = REQUEST_TIMEOUT_MS;
    server.headersTimeout = REQUEST_TIMEOUT_MS;
    server.keepAliveTimeout = 60_000;
    server.maxConnections = this.options.maxConnections ?? MAX_CONNECTIONS;
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
    // The path label only takes the webhooks' own paths: a caller cannot add series.
    res.once('finish', () => this.answers?.inc({ webhook: handler ? path : 'other', code: String(res.statusCode) }));
    if (!handler) return send(res, 404, `no webhook at ${path}\n`, 'text/plain');
    if (req.method !== 'POST') return send(res, 405, 'POST an AdmissionReview\n', 'text/plain');
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > MAX_BODY_BYTES) {
      this.refused++;
      return refuse(res, 413, `body of ${length} bytes is larger than ${MAX_BODY_BYTES}\n`);
    }
    if (this.inFlight >= (this.options.maxInFlight ?? MAX_IN_FLIGHT)) {
      this.refused++;
      return refuse(
        res,
        429,
        `${this.inFlight} admission requests in flight; the API server applies the failurePolicy\n`,
      );
    }
    this.inFlight++;
    try {
      await this.review(path, handler, req, res);
    } finally {
      this.inFlight--;
    }
  }

  private async review(
    path: string,
    handler: AdmissionHandler,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
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

/** Answers without reading the body, and closes the connection so the unread body is not parsed as a next request. */
function refuse(res: ServerResponse, code: number, body: string): void {
  res.setHeader('Connection', 'close');
  send(res, code, body, 'text/plain');
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
