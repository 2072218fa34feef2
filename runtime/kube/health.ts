/**
 * `/healthz`, `/readyz` and `/metrics` over plain HTTP. Checks are registered by name; a
 * check passes by returning true and fails by returning false or throwing (the message is
 * shown). The body lists each check like kube-apiserver's `?verbose` output.
 * `/metrics` is served on the health address unless a separate metrics address is given;
 * an address of '0' turns a listener off (controller-runtime's convention).
 *
 * With `secureMetrics` (metrics-tls.ts), `/metrics` is served over HTTPS on its own listener,
 * only to callers the API server authenticates and authorizes (metrics-auth.ts); the listener is
 * bounded as the webhook's is (connections, request time), since any pod, and on a node the
 * external network, may reach it.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { RuntimeMetrics } from './metrics';
import type { SecureMetrics } from './metrics-tls';

/** Open sockets of the secure metrics listener; a scraper needs one or two. */
const METRICS_MAX_CONNECTIONS = 64;
/** Headers and body within this long (a scrape sends no body). */
const METRICS_REQUEST_TIMEOUT_MS = 10_000;
/** How often `--metrics-cert-dir` is re-read for a rotated certificate. */
const CERT_RELOAD_MS = 60_000;

export type HealthCheck = () => boolean | Promise<boolean>;

export interface HealthServerOptions {
  /** `host:port` or `:port`. @default ':8081' */
  readonly healthAddr?: string;
  /** Separate `/metrics` listener; unset or equal to healthAddr serves it there. '0' disables. */
  readonly metricsAddr?: string;
  readonly metrics?: RuntimeMetrics;
  /** HTTPS and the API server's authentication and authorization on the metrics listener. */
  readonly secureMetrics?: SecureMetrics;
}

export interface ListenAddress {
  readonly host: string | undefined;
  readonly port: number;
}

/** Parses `:8080`, `0.0.0.0:8080`, `[::1]:8080`; the error names the bad value. */
/** A listen address of '0' turns that listener off. */
const DISABLED = '0';

export function parseListenAddress(addr: string): ListenAddress {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535)
    throw new Error(`listen address '${addr}' is not host:port (e.g. ':8081' or '127.0.0.1:8081')`);
  const host = match[1] ?? (match[2] || undefined);
  return { host, port };
}

export class HealthServer {
  private readonly liveness = new Map<string, HealthCheck>();
  private readonly readiness = new Map<string, HealthCheck>();
  private readonly servers: http.Server[] = [];
  private reloadTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: HealthServerOptions = {}) {}

  /** A check for `/readyz`, e.g. 'informers-synced' or 'leader-or-standby'. */
  addReadinessCheck(name: string, check: HealthCheck): void {
    this.readiness.set(name, check);
  }

  /** A check for `/healthz`; a failing one gets the process restarted. Keep them cheap. */
  addLivenessCheck(name: string, check: HealthCheck): void {
    this.liveness.set(name, check);
  }

  /** Starts the listener(s); resolves with the bound ports (useful with port 0). */
  async start(): Promise<{ healthPort?: number; metricsPort?: number }> {
    const healthAddr = this.options.healthAddr ?? ':8081';
    const metricsAddr = this.options.metricsAddr;
    // Port 0 means "any free port", so two ':0' addresses are two listeners.
    const metricsOff = metricsAddr === DISABLED;
    const separateMetrics =
      metricsAddr !== undefined &&
      !metricsOff &&
      (metricsAddr !== healthAddr || parseListenAddress(metricsAddr).port === 0);
    const metricsOnHealth = !separateMetrics && !metricsOff;
    if (metricsOnHealth && this.options.secureMetrics && this.options.metrics && healthAddr !== DISABLED)
      throw new Error(
        `secure metrics need their own listener: the metrics address '${metricsAddr ?? healthAddr}' is the health address (give --metrics-bind-address another port, or --metrics-secure=false)`,
      );
    const result: { healthPort?: number; metricsPort?: number } = {};
    if (healthAddr !== DISABLED) {
      result.healthPort = await this.listen(healthAddr, (req, res) => this.route(req, res, metricsOnHealth));
      if (metricsOnHealth && this.options.metrics) result.metricsPort = result.healthPort;
    }
    if (separateMetrics) {
      const secure = this.options.secureMetrics;
      result.metricsPort = secure
        ? await this.listenSecure(metricsAddr, secure)
        : await this.listen(metricsAddr, (req, res) => this.routeMetrics(req, res));
    }
    return result;
  }

  async stop(): Promise<void> {
    clearInterval(this.reloadTimer);
    await Promise.all(
      this.servers.splice(0).map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
  }

  private listen(addr: string, handler: http.RequestListener): Promise<number> {
    const { host, port } = parseListenAddress(addr);
    const server = http.createServer(handler);
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
    });
  }

  private listenSecure(addr: string, secure: SecureMetrics): Promise<number> {
    const { host, port } = parseListenAddress(addr);
    const server = https.createServer(
      { ...secure.certificate, minVersion: 'TLSv1.2' },
      (req, res) => void this.routeSecureMetrics(req, res, secure),
    );
    server.requestTimeout = METRICS_REQUEST_TIMEOUT_MS;
    server.headersTimeout = METRICS_REQUEST_TIMEOUT_MS;
    server.maxConnections = METRICS_MAX_CONNECTIONS;
    this.servers.push(server);
    if (secure.reload) {
      const reload = secure.reload;
      this.reloadTimer = setInterval(() => {
        const certificate = reload();
        if (certificate) server.setSecureContext({ ...certificate, minVersion: 'TLSv1.2' });
      }, CERT_RELOAD_MS);
      this.reloadTimer.unref();
    }
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
    });
  }

  /** Only GET /metrics is reviewed: other paths and methods are answered without asking the API server. */
  private async routeSecureMetrics(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    secure: SecureMetrics,
  ): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    if (req.method !== 'GET')
      return void res.writeHead(405, { 'Content-Type': 'text/plain', Allow: 'GET' }).end('GET /metrics\n');
    const decision = await secure.auth.check(req.headers.authorization, req.method, path);
    if (decision.code !== 200) {
      const headers: http.OutgoingHttpHeaders = { 'Content-Type': 'text/plain' };
      if (decision.code === 401) headers['WWW-Authenticate'] = 'Bearer';
      return void res.writeHead(decision.code, headers).end(`${decision.message}\n`);
    }
    this.routeMetrics(req, res);
  }

  private route(req: http.IncomingMessage, res: http.ServerResponse, withMetrics: boolean): void {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz' || path === '/livez') void this.respondChecks(res, this.liveness);
    else if (path === '/readyz') void this.respondChecks(res, this.readiness);
    else if (path === '/metrics' && withMetrics) this.routeMetrics(req, res);
    else res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
  }

  private routeMetrics(req: http.IncomingMessage, res: http.ServerResponse): void {
    const metrics = this.options.metrics;
    if ((req.url ?? '/').split('?')[0] !== '/metrics' || !metrics) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.exposition().then(
      (text) => res.writeHead(200, { 'Content-Type': metrics.contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics: ${String(err)}\n`),
    );
  }

  private async respondChecks(res: http.ServerResponse, checks: ReadonlyMap<string, HealthCheck>): Promise<void> {
    const { ok, body } = await runChecks(checks);
    res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain; charset=utf-8' }).end(body);
  }
}

/** Runs every check; the body has one `[+]name ok` / `[-]name failed: why` line each. */
export async function runChecks(checks: ReadonlyMap<string, HealthCheck>): Promise<{ ok: boolean; body: string }> {
  const lines: string[] = [];
  let ok = true;
  for (const [name, check] of checks) {
    try {
      if (await check()) {
        lines.push(`[+]${name} ok`);
        continue;
      }
      lines.push(`[-]${name} failed`);
    } catch (err) {
      lines.push(`[-]${name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    ok = false;
  }
  lines.push(ok ? 'ok' : 'check failed');
  return { ok, body: lines.join('\n') + '\n' };
}
