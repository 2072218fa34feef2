/**
 * A small generic REST client over the API server for any kind (core or custom), with the
 * status subresource, merge patch and server-side apply. The generated clients of
 * @kubernetes/client-node are per-kind and open a new TLS connection per request; this one
 * keeps one keep-alive agent, and sends JSON as written (Lease MicroTime needs 6 digits).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as tls from 'node:tls';
import { setMaxListeners } from 'node:events';
import type { KubeConfig } from '@kubernetes/client-node';
import { resourcePath, type ResourceType } from './resources';
import type { KubeList, KubeObject } from './types';

export type PatchType = 'merge' | 'apply' | 'json';

const CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  apply: 'application/apply-patch+yaml',
  json: 'application/json-patch+json',
};

/** A non-2xx answer from the API server, with its HTTP code and `Status.reason`. */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** HTTP status of an error from this client, client-node's ApiException or its Watch. */
/** A request refused because the client's fence aborted (a replica that lost its Lease). */
export class FencedError extends Error {
  constructor(method: string, path: string) {
    super(`${method} ${path} not sent: this client is fenced (leadership lost)`);
    this.name = 'FencedError';
  }
}

export function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}
export const isNotFound = (err: unknown): boolean => statusCodeOf(err) === 404;
export const isConflict = (err: unknown): boolean => statusCodeOf(err) === 409 && !isAlreadyExists(err);
export const isAlreadyExists = (err: unknown): boolean => err instanceof KubeApiError && err.reason === 'AlreadyExists';
export const isGone = (err: unknown): boolean => statusCodeOf(err) === 410;

export interface ListOptions {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly limit?: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
}

export interface WriteOptions {
  readonly fieldManager?: string;
  /** Server-side apply only: take ownership of conflicting fields. */
  readonly force?: boolean;
  readonly subresource?: 'status';
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly contentType?: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** Abort the request after this long. @default the client's requestTimeoutMs */
  readonly timeoutMs?: number;
  /** Abort the request when this aborts (e.g. a Lease call past its deadline). */
  readonly signal?: AbortSignal;
}

export interface RestClientOptions {
  /** Timeout of every non-watch request. @default 30_000 */
  readonly requestTimeoutMs?: number;
  /**
   * A fence: once aborted, every request in flight (watches too) is aborted and every new one is
   * refused before it leaves the process. A leader's client is fenced by its leadership, so no
   * write leaves a replica that lost its Lease.
   */
  readonly fence?: AbortSignal;
  /**
   * Asked with the fence, synchronously when a request is issued and again right before it is
   * handed to the transport: false refuses it as the aborted fence does. For what a signal can only
   * learn from a timer: a leader whose loop was blocked past its renew deadline (L1,
   * LeaderElector.holdsLease) has not been aborted yet, but must not write.
   */
  readonly fenceHolds?: () => boolean;
}

/** Watch events as the API server writes them, one JSON object a line. */
export interface WatchEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: T;
}

export interface WatchHandle {
  /** Resolves when the stream ends: `undefined` on a clean close, else the error. */
  readonly done: Promise<Error | undefined>;
  abort(): void;
}

export class RestClient {
  private agent: http.Agent | undefined;
  private headers: { value: http.OutgoingHttpHeaders; at: number } | undefined;

  private readonly requestTimeoutMs: number;
  private readonly fence: AbortSignal | undefined;
  private readonly fenceHolds: (() => boolean) | undefined;

  constructor(
    private readonly kubeConfig: KubeConfig,
    options: RestClientOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.fence = options.fence;
    this.fenceHolds = options.fenceHolds;
    // Every request and watch in flight listens on the fence until it ends: more than the default
    // 10 is the normal case, not a leak (the listeners are removed on completion, see abortOn).
    if (this.fence) setMaxListeners(Infinity, this.fence);
  }

  /** The same credentials and connection pool rules, behind `fence` (see RestClientOptions.fence, fenceHolds). */
  fenced(fence: AbortSignal, fenceHolds?: () => boolean): RestClient {
    return new RestClient(this.kubeConfig, { requestTimeoutMs: this.requestTimeoutMs, fence, fenceHolds });
  }

  /** Refuses the request when the fence is aborted or no longer holds. */
  private checkFence(method: string, path: string): void {
    if (this.fence?.aborted || this.fenceHolds?.() === false) throw new FencedError(method, path);
  }

  get<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T> {
    return this.request<T>('GET', resourcePath(type, namespace, name));
  }

  list<T extends KubeObject>(type: ResourceType, options: ListOptions = {}): Promise<KubeList<T>> {
    const { namespace, ...query } = options;
    return this.request<KubeList<T>>('GET', resourcePath(type, namespace), { query });
  }

  create<T extends KubeObject>(type: ResourceType, object: T, options: WriteOptions = {}): Promise<T> {
    const path = resourcePath(type, object.metadata?.namespace);
    return this.request<T>('POST', path, { body: object, query: { fieldManager: options.fieldManager } });
  }

  /** PUT; carries `metadata.resourceVersion`, so a stale write gets 409 Conflict. */
  replace<T extends KubeObject>(type: ResourceType, object: T, options: WriteOptions = {}): Promise<T> {
    const path = resourcePath(type, object.metadata?.namespace, nameOf(object), options.subresource);
    return this.request<T>('PUT', path, { body: object, query: { fieldManager: options.fieldManager } });
  }

  patch<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patchType: PatchType,
    body: unknown,
    options: WriteOptions = {},
  ): Promise<T> {
    const path = resourcePath(type, namespace, name, options.subresource);
    const query = { fieldManager: options.fieldManager, force: patchType === 'apply' ? options.force : undefined };
    return this.request<T>('PATCH', path, { body, contentType: CONTENT_TYPES[patchType], query });
  }

  delete(type: ResourceType, namespace: string | undefined, name: string, body?: unknown): Promise<unknown> {
    return this.request<unknown>('DELETE', resourcePath(type, namespace, name), { body });
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const abort = this.abortOn(options.signal);
    const timer = setTimeout(
      () => abort.controller.abort(timeoutError(options.timeoutMs ?? this.requestTimeoutMs)),
      options.timeoutMs ?? this.requestTimeoutMs,
    );
    try {
      const res = await this.send(method, path, options, abort.controller.signal);
      const text = await readAll(res);
      if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) {
        // Not always a Status: a resource whose CRD was just deleted answers "404 page not found".
        throw apiError(method, path, res.statusCode ?? 0, text.length > 0 ? safeJson(text) : undefined);
      }
      return (text.length > 0 ? JSON.parse(text) : undefined) as T;
    } finally {
      clearTimeout(timer);
      abort.release();
    }
  }

  /** Opens a watch stream; `onEvent` is called per line until the stream ends or aborts. */
  async watch<T>(
    path: string,
    query: RequestOptions['query'],
    onEvent: (e: WatchEvent<T>) => void,
  ): Promise<WatchHandle> {
    const abort = this.abortOn(undefined);
    const { signal } = abort.controller;
    try {
      const res = await this.send('GET', path, { query: { ...query, watch: true } }, signal);
      if (res.statusCode !== 200) {
        const text = await readAll(res);
        throw apiError('WATCH', path, res.statusCode ?? 0, text ? safeJson(text) : undefined);
      }
      const done = streamLines(res, (line) => onEvent(JSON.parse(line) as WatchEvent<T>), signal);
      void done.then(abort.release);
      return { done, abort: () => abort.controller.abort() };
    } catch (err) {
      abort.release();
      throw err;
    }
  }

  /**
   * One request's AbortController, aborted by the fence and by `signal` too, with `release` to
   * unhook it from them once the request is over. Not `AbortSignal.any()` with
   * `AbortSignal.timeout()`: Node 20 keeps a WeakRef per combined signal among the long-lived
   * fence's dependants, and each timeout's timer until it fires (bench/scale's heap: 80 k WeakRefs
   * and 11 k pending timers); here the listeners are removed and the timer cleared on completion.
   */
  private abortOn(signal: AbortSignal | undefined): { controller: AbortController; release: () => void } {
    const controller = new AbortController();
    const sources = [signal, this.fence].filter((s): s is AbortSignal => s !== undefined);
    const onAbort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
    for (const source of sources) {
      if (source.aborted) controller.abort(source.reason);
      else source.addEventListener('abort', onAbort, { once: true });
    }
    return { controller, release: () => sources.forEach((s) => s.removeEventListener('abort', onAbort)) };
  }

  private async send(
    method: string,
    path: string,
    options: RequestOptions,
    signal?: AbortSignal,
  ): Promise<http.IncomingMessage> {
    this.checkFence(method, path);
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/$/, '') + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== '') url.searchParams.set(key, String(value));
    }
    const headers: http.OutgoingHttpHeaders = { ...(await this.authHeaders()), Accept: 'application/json' };
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    if (payload !== undefined) {
      headers['Content-Type'] = options.contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    const agent = await this.agentFor(url);
    const transport = url.protocol === 'https:' ? https : http;
    // Again after the awaits above: the loop may have been blocked past a renew deadline meanwhile.
    this.checkFence(method, path);
    return new Promise((resolve, reject) => {
      const req = transport.request(url, { method, headers, agent, signal }, resolve);
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Re-read at most once a minute: exec plugins and in-cluster tokens rotate. */
  private async authHeaders(): Promise<http.OutgoingHttpHeaders> {
    const now = Date.now();
    if (this.headers && now - this.headers.at < 60_000) return this.headers.value;
    const opts: https.RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const value: http.OutgoingHttpHeaders = { ...(opts.headers as http.OutgoingHttpHeaders | undefined) };
    if (opts.auth) value.Authorization = 'Basic ' + Buffer.from(opts.auth).toString('base64');
    this.headers = { value, at: now };
    return value;
  }

  private async agentFor(url: URL): Promise<http.Agent> {
    if (this.agent) return this.agent;
    if (url.protocol !== 'https:') return (this.agent = new http.Agent({ keepAlive: true }));
    const opts: https.RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const { ca, cert, key, rejectUnauthorized, servername } = opts;
    // One TLS context for every connection: given ca/cert/key, the agent would build (and parse
    // them into) a new one per connection, 1.7 s of a 27 s CPU profile in bench/scale.
    const secureContext = tls.createSecureContext({ ca, cert, key });
    this.agent = new https.Agent({ keepAlive: true, secureContext, rejectUnauthorized, servername });
    return this.agent;
  }
}

/** What AbortSignal.timeout() aborts with, so callers see the same error. */
function timeoutError(ms: number): Error {
  return new DOMException(`The operation was aborted due to timeout (${ms} ms)`, 'TimeoutError');
}

function nameOf(object: KubeObject): string {
  const name = object.metadata?.name;
  if (!name) throw new Error(`object of kind ${object.kind ?? '?'} has no metadata.name`);
  return name;
}

function apiError(method: string, path: string, code: number, body: unknown): KubeApiError {
  const status = (typeof body === 'object' && body !== null ? body : {}) as { reason?: string; message?: string };
  const reason = status.reason ?? '';
  return new KubeApiError(code, reason, `${method} ${path}: ${code} ${reason} ${status.message ?? ''}`.trim(), body);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function readAll(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

function streamLines(
  res: http.IncomingMessage,
  onLine: (line: string) => void,
  signal: AbortSignal,
): Promise<Error | undefined> {
  return new Promise((resolve) => {
    let buffered = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffered += chunk;
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (!line) continue;
        try {
          onLine(line);
        } catch (err) {
          res.destroy();
          resolve(err instanceof Error ? err : new Error(String(err)));
          return;
        }
      }
    });
    res.on('end', () => resolve(undefined));
    res.on('error', (err) => resolve(signal.aborted ? undefined : err));
    res.on('close', () => resolve(undefined));
  });
}

/** The object, or undefined when it does not exist (404); every other error is thrown. */
export async function getOrUndefined<T extends KubeObject>(
  rest: RestClient,
  type: ResourceType,
  namespace: string | undefined,
  name: string,
): Promise<T | undefined> {
  try {
    return await rest.get<T>(type, namespace, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Deletes the object; one already gone (404) is what the caller wanted. Returns whether it existed. */
export async function deleteIgnoringNotFound(
  rest: RestClient,
  type: ResourceType,
  namespace: string | undefined,
  name: string,
  body?: unknown,
): Promise<boolean> {
  try {
    await rest.delete(type, namespace, name, body);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
