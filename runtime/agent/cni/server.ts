/**
 * The agent's side of `juneau-cni` (CNI-1..CNI-3, EIP-13): a unix socket server in the node's
 * network namespace. For each request it reads the Pod, its NetworkInterface and ElasticIP from
 * the API server (one GET for a pod without Juneau NICs: the kubelet has just created the Pod, an
 * informer could still miss it), decides (./decide.ts) and answers the plugin, which does the
 * netns work. A wait is also a Warning Event on the Pod naming what it waits for (aggregated by
 * the recorder while the kubelet retries).
 *
 * The socket is abstract (`@juneau-cni`): per network namespace, so no hostPath is needed and the
 * plugin, which the runtime runs in the node's namespace, reaches the agent of its own node only.
 */
import * as net from 'node:net';
import type { EventRecorder, ObjectReference } from '../../kube/events';
import { silentLogger, type Logger } from '../../kube/log';
import { JuneauResources, Resources } from '../../kube/resources';
import { isNotFound, type RestClient } from '../../kube/rest';
import type { KubeObject } from '../../kube/types';
import { libc } from '../libc-socket';
import { counter, metricsOf } from '../metric-table';
import {
  addAnswer,
  checkAnswer,
  decide,
  delAnswer,
  podOfRequest,
  targetOf,
  type Decision,
  type NicFacts,
  type PodFacts,
} from './decide';
import { CNI_ERRORS, errorAnswer, formatAnswer, parseRequest, type CniAnswer, type CniRequest } from './protocol';

export const DEFAULT_CNI_SOCKET = '@juneau-cni';
/** How often a socket name in use is tried again. */
const LISTEN_RETRY_MS = 2_000;
/** A request larger than this is refused (the configuration is a few kB). */
const MAX_REQUEST = 1 << 20;
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
/** Requests per second per peer uid, and the burst above it (a node starting 100 pods at once). */
export const DEFAULT_CNI_RATE = { perSecond: 50, burst: 200 } as const;

/**
 * The uid of the process at the other end of a unix socket (SO_PEERCRED, struct ucred
 * { pid_t pid; uid_t uid; gid_t gid }), or undefined when it cannot be read.
 */
export function peerUid(conn: net.Socket): number | undefined {
  const fd = (conn as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (fd === undefined || fd < 0) return undefined;
  const cred = Buffer.alloc(12);
  const len = [cred.length];
  if (libc().getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, len) !== 0) return undefined;
  return cred.readUInt32LE(4);
}

/** A token bucket per key. */
class RateLimiter {
  private readonly buckets = new Map<number, { tokens: number; at: number }>();
  constructor(private readonly rate: { readonly perSecond: number; readonly burst: number }) {}
  take(key: number, now = Date.now()): boolean {
    const b = this.buckets.get(key) ?? { tokens: this.rate.burst, at: now };
    b.tokens = Math.min(this.rate.burst, b.tokens + ((now - b.at) / 1000) * this.rate.perSecond);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }
}

const CNI_SERVER_METRICS = {
  requests: counter(
    'agent_cni_requests_total',
    ['command', 'decision'],
    'Requests of the juneau-cni plugin, by CNI command and decision (pass, wait, configure, error).',
  ),
};

export class CniServerMetrics extends metricsOf(CNI_SERVER_METRICS) {}

export interface CniServerOptions {
  readonly rest: Pick<RestClient, 'get'>;
  /** `@name` for an abstract socket, else a path. */
  readonly socket: string;
  readonly recorder?: Pick<EventRecorder, 'warning' | 'normal'>;
  readonly metrics?: CniServerMetrics;
  readonly logger?: Logger;
  /** Requests per second per peer uid and the burst; DEFAULT_CNI_RATE. */
  readonly rate?: { readonly perSecond: number; readonly burst: number };
  /** The peer's uid; SO_PEERCRED (peerUid). Tests only. */
  readonly peerUidOf?: (conn: net.Socket) => number | undefined;
}

interface PodObject extends KubeObject {
  readonly metadata?: KubeObject['metadata'] & { annotations?: Record<string, string> };
}
interface NicObject extends KubeObject {
  readonly status?: { phase?: string; reason?: string; message?: string };
}
interface ElasticIPObject extends KubeObject {
  readonly status?: { address?: string };
}

export class CniServer {
  private server: net.Server | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private listenFailed = false;
  private readonly logger: Logger;
  /** The address configured per sandbox (CNI_CONTAINERID), for a DEL after the Pod is gone. */
  private readonly configured = new Map<string, string>();
  private readonly limiter: RateLimiter;

  constructor(private readonly options: CniServerOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: 'cni' });
    this.limiter = new RateLimiter(options.rate ?? DEFAULT_CNI_RATE);
  }

  /**
   * Listens, and keeps trying every LISTEN_RETRY_MS while the name is taken (the previous agent of
   * the node still stopping; several agents in one namespace in tests): never throws, the plugin
   * fails closed meanwhile.
   */
  async start(): Promise<void> {
    this.stopped = false;
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const server = this.server;
    this.server = undefined;
    if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async listen(): Promise<void> {
    // Half-open: the plugin shuts its writing side to end the request, then reads the answer.
    const server = net.createServer({ allowHalfOpen: true }, (conn) => this.serve(conn));
    const address = this.options.socket.startsWith('@') ? `\0${this.options.socket.slice(1)}` : this.options.socket;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(address, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      if (this.stopped) return;
      if (!this.listenFailed)
        this.logger.error('CNI socket not listening yet; retrying', { socket: this.options.socket, err });
      this.listenFailed = true;
      this.retry = setTimeout(() => void this.listen(), LISTEN_RETRY_MS);
      this.retry.unref();
      return;
    }
    server.on('error', (err) => this.logger.error('CNI socket error', { err }));
    this.server = server;
    this.logger.info('CNI socket listening', { socket: this.options.socket });
  }

  /**
   * The trust boundary: the abstract socket is reachable from every process in the node's network
   * namespace (host-network pods included), and its answers name pods' addresses and it reads the
   * API server for them. The kubelet's runtime (containerd, CRI-O) runs CNI plugins as root, so a
   * peer that is not uid 0 is not the runtime: refused before it is read. A root peer is limited
   * per uid (a token bucket) so that not even a runaway loop can turn it into API-server load.
   */
  private admit(conn: net.Socket): CniAnswer | undefined {
    const uid = (this.options.peerUidOf ?? peerUid)(conn);
    if (uid !== 0) {
      this.options.metrics?.requests.inc({ command: 'unknown', decision: 'refused' });
      this.logger.info('CNI request refused: the peer is not root', { uid });
      return errorAnswer(undefined, CNI_ERRORS.refused, `juneau agent: peer uid ${uid ?? 'unknown'} is not root (0)`);
    }
    if (!this.limiter.take(uid)) {
      this.options.metrics?.requests.inc({ command: 'unknown', decision: 'rate-limited' });
      return errorAnswer(
        undefined,
        CNI_ERRORS.tryAgainLater,
        `juneau agent: too many requests from uid ${uid}; try again later`,
      );
    }
    return undefined;
  }

  private serve(conn: net.Socket): void {
    const refused = this.admit(conn);
    if (refused) {
      conn.on('error', () => undefined);
      conn.end(formatAnswer(refused));
      // Drain what the peer sent, so its end arrives and the socket closes (half-open otherwise, and
      // stop() would wait for it forever).
      conn.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    conn.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_REQUEST) conn.destroy();
      else chunks.push(chunk);
    });
    conn.on('error', () => undefined); // the plugin gave up (its timeout); nothing to answer
    conn.on('end', () => {
      const t0 = process.hrtime.bigint();
      void this.answer(Buffer.concat(chunks).toString('utf8')).then(({ answer, request, decision }) => {
        conn.end(formatAnswer(answer));
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        this.options.metrics?.requests.inc({ command: request?.command ?? 'invalid', decision });
        this.logger.debug('CNI request answered', {
          command: request?.command,
          pod: request ? podOfRequest(request) : undefined,
          decision,
          ms,
        });
      });
    });
  }

  /** The answer to one request; never throws (an unexpected failure is a CNI error the kubelet retries). */
  async answer(text: string): Promise<{ answer: CniAnswer; request?: CniRequest; decision: string }> {
    let request: CniRequest | undefined;
    try {
      request = parseRequest(text);
      return { request, ...(await this.handle(request)) };
    } catch (err) {
      const message = `juneau agent: ${(err as Error).message}`;
      this.logger.error('CNI request failed', { err, command: request?.command });
      if (request?.command === 'DEL') return { request, answer: delAnswer(request, undefined), decision: 'error' };
      return {
        request,
        answer: errorAnswer(request?.config.cniVersion, CNI_ERRORS.tryAgainLater, message),
        decision: 'error',
      };
    }
  }

  private async handle(request: CniRequest): Promise<{ answer: CniAnswer; decision: string }> {
    if (request.command === 'DEL') {
      const address = this.configured.get(request.containerId) ?? (await this.addressOnDel(request));
      this.configured.delete(request.containerId);
      if (address)
        this.logger.info('CNI DEL: the ElasticIP leaves the pod (CNI-3)', { pod: podOfRequest(request), address });
      return { answer: delAnswer(request, address), decision: address ? 'configure' : 'pass' };
    }
    if (request.command !== 'ADD' && request.command !== 'CHECK')
      return { answer: { status: 0, steps: [], body: '' }, decision: 'pass' };
    const decision = await this.decision(request);
    this.report(request, decision);
    if (decision.kind === 'configure' && request.command === 'ADD')
      this.configured.set(request.containerId, decision.address);
    const answer = request.command === 'ADD' ? addAnswer(request, decision) : checkAnswer(request, decision);
    return { answer, decision: decision.kind };
  }

  private async decision(request: CniRequest): Promise<Decision> {
    const ref = podOfRequest(request);
    const pod = ref ? await this.getOrUndefined<PodObject>(Resources.pods, ref.namespace, ref.name) : undefined;
    const facts: PodFacts | undefined = pod && { uid: pod.metadata?.uid, annotations: pod.metadata?.annotations };
    const target = targetOf(request, facts);
    if (target.kind !== 'direct' || !ref) return decide(request, target, undefined, undefined);
    const nic = await this.getOrUndefined<NicObject>(JuneauResources.networkInterfaces, ref.namespace, target.nicName);
    const nicFacts: NicFacts | undefined = nic && {
      name: target.nicName,
      podUid: nic.metadata?.ownerReferences?.find((o) => o.kind === 'Pod' && o.controller)?.uid,
      phase: nic.status?.phase,
      reason: nic.status?.reason,
      message: nic.status?.message,
    };
    const eip =
      nicFacts?.phase === 'Ready'
        ? await this.getOrUndefined<ElasticIPObject>(JuneauResources.elasticIPs, ref.namespace, target.elasticIP)
        : undefined;
    return decide(request, target, nicFacts, eip?.status?.address);
  }

  /** DEL without a record of the ADD (an agent restarted since): the Pod's ElasticIP, if the Pod is still there. */
  private async addressOnDel(request: CniRequest): Promise<string | undefined> {
    const ref = podOfRequest(request);
    if (!ref) return undefined;
    const pod = await this.getOrUndefined<PodObject>(Resources.pods, ref.namespace, ref.name);
    const target = targetOf(request, pod && { uid: pod.metadata?.uid, annotations: pod.metadata?.annotations });
    if (target.kind !== 'direct') return undefined;
    const eip = await this.getOrUndefined<ElasticIPObject>(JuneauResources.elasticIPs, ref.namespace, target.elasticIP);
    return eip?.status?.address;
  }

  /** A Pod Event per decision worth telling: what it waits for (CNI-2), or the address it got (CNI-1). */
  private report(request: CniRequest, decision: Decision): void {
    const ref = podOfRequest(request);
    if (!ref || decision.kind === 'pass' || request.command !== 'ADD') return;
    const regarding: ObjectReference = {
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: ref.namespace,
      name: ref.name,
      ...(ref.uid ? { uid: ref.uid } : {}),
    };
    if (decision.kind === 'wait')
      this.options.recorder?.warning(regarding, decision.reason, 'SetUpSandbox', decision.message);
    else
      this.options.recorder?.normal(
        regarding,
        'ElasticIPConfigured',
        'SetUpSandbox',
        `ElasticIP ${decision.elasticIP} (${decision.address}) on ${request.ifname} inside the pod, its default route from it (CNI-1, NetworkInterface ${decision.nicName})`,
      );
  }

  private async getOrUndefined<T extends KubeObject>(
    type: Parameters<RestClient['get']>[0],
    namespace: string,
    name: string,
  ): Promise<T | undefined> {
    try {
      return await this.options.rest.get<T>(type, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
