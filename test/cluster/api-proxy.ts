// A plain-HTTP forwarder to the test API server that records every request a client sends through
// it (method, path, when, the answer's status), which TLS would hide: a replica given
// `proxyKubeconfig()` reaches the API server only through it, so its requests are counted, not
// guessed. It forwards with the admin credentials. `partition()` holds requests and pauses
// responses and watch streams until `heal()`; a request held while partitioned whose client gave
// up (socket closed) is dropped, as TCP would drop it once the sender stops retransmitting.
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { testKubeConfig } from './fixture';

export interface Forwarded {
  readonly method: string;
  /** Path and query, as sent. */
  readonly path: string;
  /** When it was forwarded. */
  readonly at: number;
  /** The API server's status, once it answered (a watch: when its stream began). */
  status?: number;
}

export class ApiProxy {
  readonly forwarded: Forwarded[] = [];
  /** Requests whose client closed the connection while they were held: never sent. */
  dropped = 0;
  private partitioned = false;
  private held: Array<() => void> = [];
  private readonly streams = new Set<http.IncomingMessage>();
  private readonly server = http.createServer((req, res) => this.onRequest(req, res));
  private agent: https.Agent | undefined;
  private upstream: URL | undefined;

  /** Listens on loopback; resolves with its URL. */
  async start(): Promise<string> {
    const kc = testKubeConfig();
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    this.agent = new https.Agent({ keepAlive: true, ca: opts.ca, cert: opts.cert, key: opts.key });
    this.upstream = new URL(kc.getCurrentCluster()!.server);
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  partition(): void {
    this.partitioned = true;
    this.streams.forEach((s) => s.pause());
  }

  heal(): void {
    this.partitioned = false;
    this.streams.forEach((s) => s.resume());
    this.held.splice(0).forEach((send) => send());
  }

  /** Every request but a GET (list, get, watch) forwarded after `instant`. */
  writesAfter(instant: number): Forwarded[] {
    return this.forwarded.filter((f) => f.method !== 'GET' && f.at > instant);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.agent?.destroy();
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const body: Buffer[] = [];
    req.on('data', (chunk: Buffer) => body.push(chunk));
    req.on('end', () => {
      const send = () => {
        if (req.socket.destroyed) return void this.dropped++;
        this.forward(req, Buffer.concat(body), res);
      };
      if (this.partitioned) this.held.push(send);
      else send();
    });
  }

  private forward(req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): void {
    const record: Forwarded = { method: req.method ?? '', path: req.url ?? '', at: Date.now() };
    this.forwarded.push(record);
    const headers = { ...req.headers, host: this.upstream!.host };
    const out = https.request(
      new URL(req.url ?? '/', this.upstream),
      { method: req.method, headers, agent: this.agent },
      (upstream) => {
        record.status = upstream.statusCode;
        this.streams.add(upstream);
        if (this.partitioned) upstream.pause();
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(res);
        upstream.on('close', () => this.streams.delete(upstream));
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    out.end(body);
  }
}

/** A kubeconfig file naming the proxy at `server` (no credentials: the proxy adds them). */
export function proxyKubeconfig(server: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-proxy-'));
  const file = path.join(dir, 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'proxy', cluster: { server, 'insecure-skip-tls-verify': true } }], // plain HTTP on loopback; client-node wants this set for http://
    users: [{ name: 'proxy', user: {} }],
    contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'proxy' } }],
    'current-context': 'proxy',
  };
  fs.writeFileSync(file, JSON.stringify(config));
  return file;
}
