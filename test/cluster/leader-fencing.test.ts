// Leader fencing (SLB-7's "a change of controller leader does not change the answer" needs one
// writer at a time): a replica that loses its Lease stops writing at once. Two juneau-controller
// replicas (main()) against the real API server; replica A, the leader, reaches it only through an
// HTTP proxy in this test that forwards every request with the admin credentials (so the proxy sees
// each method, which TLS would hide). The proxy is then partitioned: requests are held, responses
// and watch streams paused. A's Lease expires and B takes over; the partition heals. Every write
// (non-GET) the proxy forwarded after the Lease expired is a write of the old leader after the new
// one started: there must be none. A request held while partitioned whose client gave up (socket
// closed) is dropped, as TCP would drop it once the sender stops retransmitting.
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { main } from '../../runtime/controller/main';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import type { Lease } from '../../runtime/kube/leader-election';
import {
  createLoadBalancerService,
  testKubeConfig,
  testKubeconfigPath,
  useNamespace,
  waitFor,
  waitForMatch,
} from './fixture';

const rest = new RestClient(testKubeConfig());
const LEASE_NAMESPACE = 'default';
const LEASE_SECONDS = 15; // main.ts's default leaseDuration

interface Forwarded {
  readonly method: string;
  readonly path: string;
  readonly at: number;
}

/** An HTTP -> HTTPS forwarder to the test API server, with a switch that partitions it. */
class PartitionProxy {
  readonly forwarded: Forwarded[] = [];
  /** Requests whose client closed the connection while they were held: never sent. */
  dropped = 0;
  private partitioned = false;
  private held: Array<() => void> = [];
  private readonly streams = new Set<http.IncomingMessage>();
  private readonly server = http.createServer((req, res) => this.onRequest(req, res));
  private agent: https.Agent | undefined;
  private upstream: URL | undefined;

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
    this.forwarded.push({ method: req.method ?? '', path: req.url ?? '', at: Date.now() });
    const headers = { ...req.headers, host: this.upstream!.host };
    const out = https.request(
      new URL(req.url ?? '/', this.upstream),
      { method: req.method, headers, agent: this.agent },
      (upstream) => {
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

function kubeconfigFor(server: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-fencing-'));
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

function replica(kubeconfig: string, podName: string, lease: string, sink: string[]) {
  let stop!: (signal: string) => void;
  const stopSignal = new Promise<string>((resolve) => (stop = resolve));
  const args = [
    '--kubeconfig',
    kubeconfig,
    '--leader-election-namespace',
    LEASE_NAMESPACE,
    '--leader-election-id',
    lease,
    '--health-addr=127.0.0.1:0',
    '--metrics-addr=127.0.0.1:0',
    '--log-level=warn',
  ];
  const exit = main(args, {
    stdout: (t) => sink.push(`${podName}: ${t}`),
    stderr: (t) => sink.push(`${podName}: ${t}`),
    env: { POD_NAME: podName },
    stopSignal,
  });
  return { stop, exit };
}

const leaseOf = async (name: string) =>
  (await rest.get<Lease & KubeObject>(Resources.leases, LEASE_NAMESPACE, name)).spec ?? {};

const SERVICE = { ports: [{ port: 80 }] };

describe('leader fencing (SLB-7: one writer at a time)', () => {
  const ns = useNamespace();

  it('SLB-1 / SLB-7 / ALLOC-1: the old leader, cut off from the API server, makes 0 writes after its Lease expired; the new leader does the work', async () => {
    const namespace = ns();
    const lease = `juneau-fencing-${Math.random().toString(36).slice(2, 7)}`;
    const proxy = new PartitionProxy();
    const proxied = kubeconfigFor(await proxy.start());
    const log: string[] = [];
    const a = replica(proxied, 'replica-a', lease, log);
    let b: ReturnType<typeof replica> | undefined;
    try {
      await waitFor(async () => (await leaseOf(lease)).holderIdentity?.startsWith('replica-a_'), {
        what: 'replica A leads',
      });
      b = replica(testKubeconfigPath(), 'replica-b', lease, log);
      // Work in flight when the partition starts: A is reconciling these Services.
      await Promise.all(
        Array.from({ length: 20 }, (_, i) => createLoadBalancerService(namespace, `before-${i}`, SERVICE)),
      );
      await waitFor(
        async () => (await rest.list(JuneauResources.serviceLoadBalancers, { namespace })).items.length > 0,
        { what: 'A writes its first ServiceLoadBalancer' },
      );
      proxy.partition();
      const renewed = Date.parse((await leaseOf(lease)).renewTime ?? '');
      // Work A cannot see any more: after the partition heals its watches would deliver it.
      await Promise.all(
        Array.from({ length: 5 }, (_, i) => createLoadBalancerService(namespace, `during-${i}`, SERVICE)),
      );
      const taken = await waitForMatch(
        () => leaseOf(lease),
        (spec) => spec.holderIdentity?.startsWith('replica-b_'),
        { what: 'replica B takes the Lease over', timeoutMs: 40_000 },
      );
      const expired = Math.min(renewed + LEASE_SECONDS * 1000, Date.parse(taken.acquireTime ?? ''));
      proxy.heal();
      expect(await a.exit).toBe(1); // lost the Lease
      await waitFor(
        async () => (await rest.list(JuneauResources.serviceLoadBalancers, { namespace })).items.length === 25,
        { what: 'B writes every ServiceLoadBalancer', timeoutMs: 30_000 },
      );
      // The proxy does see A's writes (before the partition), so the 0 below is a count, not blindness.
      expect(
        proxy.forwarded.filter((f) => f.method !== 'GET' && f.path.includes('/serviceloadbalancers') && f.at < expired)
          .length,
      ).toBeGreaterThan(0);
      expect(proxy.writesAfter(expired)).toEqual([]);
      expect(log.join('')).toContain('lost the Lease; exiting so a clean standby takes over');
    } finally {
      proxy.heal();
      a.stop('SIGTERM');
      b?.stop('SIGTERM');
      await Promise.all([a.exit, b?.exit]);
      await proxy.stop();
    }
  }, 120_000);
});
