// Leader fencing (SLB-7's "a change of controller leader does not change the answer" needs one
// writer at a time): a replica that loses its Lease stops writing at once. Two juneau-controller
// replicas (main()) against the real API server; replica A, the leader, reaches it only through an
// HTTP proxy (./api-proxy.ts) that forwards every request with the admin credentials (so the proxy
// sees each method, which TLS would hide). The proxy is then partitioned: requests are held,
// responses and watch streams paused. A's Lease expires and B takes over; the partition heals.
// Every write (non-GET) the proxy forwarded after the Lease expired is a write of the old leader
// after the new one started: there must be none.
import { main } from '../../runtime/controller/main';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import type { Lease } from '../../runtime/kube/leader-election';
import { ApiProxy, proxyKubeconfig } from './api-proxy';
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
    const proxy = new ApiProxy();
    const proxied = proxyKubeconfig(await proxy.start());
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
