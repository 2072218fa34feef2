// Two controllers at once against one API server: allocation by claim creation never
// double-books (EIP-3, ALLOC-1), and the binary's Lease gives one leader that releases the Lease
// on SIGTERM so the other takes over.
import { type AllocationClaim, type ServiceLoadBalancer } from '../../api';
import { RestClient, isNotFound } from '../../runtime/kube/rest';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { JuneauController } from '../../runtime/controller/controller';
import { main } from '../../runtime/controller/main';
import {
  createLoadBalancerService,
  testKubeConfig,
  testKubeconfigPath,
  useNamespace,
  waitFor,
  waitForMatch,
  createArpNetwork,
} from './fixture';
import { watchForChanges } from './quiet-watch';

const rest = new RestClient(testKubeConfig());
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `ha-pool-${suffix}`;
const NET = `ha-net-${suffix}`;
const SERVICES = 60;

beforeAll(async () => {
  // 64 addresses for 60 Services: the allocators collide often near the end.
  await createArpNetwork(rest, { pool: POOL, network: NET, addresses: ['198.18.88.0/26'] });
});

afterAll(async () => {
  for (const [type, name] of [
    [JuneauResources.externalNetworks, NET],
    [JuneauResources.addressPools, POOL],
  ] as const) {
    await rest
      .delete(type, undefined, name)
      .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
  }
});

describe('two controllers at once', () => {
  const ns = useNamespace();

  it(`EIP-3 / ALLOC-1: two controllers, ${SERVICES} Services created concurrently -> every VIP distinct, one claim each, nothing leaked`, async () => {
    const namespace = ns();
    const controllers = [
      new JuneauController({ rest: new RestClient(testKubeConfig()) }),
      new JuneauController({ rest: new RestClient(testKubeConfig()) }),
    ];
    await Promise.all(controllers.map((c) => c.start()));
    try {
      await Promise.all(
        Array.from({ length: SERVICES }, (_, i) =>
          createLoadBalancerService(namespace, `s${i}`, { network: NET, ports: [{ port: 80 }] }),
        ),
      );
      // Without a Lease both controllers reconcile every Service, so a status can name a VIP for a
      // moment after the other replica settled on the holder's lowest claim; wait for the settled state.
      // What the last poll saw, for the failure message (a wait that times out says where it stood).
      let seen = 'nothing listed yet';
      const settled = await waitFor(
        async () => {
          const slbs = (
            await rest.list<KubeObject & ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, { namespace })
          ).items;
          const claims = (await rest.list<KubeObject & AllocationClaim>(JuneauResources.allocationClaims)).items.filter(
            (c) => c.spec.pool.name === POOL,
          );
          const unheld = slbs.filter(
            (s) => claims.find((c) => c.spec.value === s.status?.vip)?.spec.holder.uid !== s.metadata.uid,
          );
          const phases = slbs.reduce<Record<string, number>>(
            (n, s) => ({ ...n, [s.status?.phase ?? 'none']: (n[s.status?.phase ?? 'none'] ?? 0) + 1 }),
            {},
          );
          seen = `${slbs.length} ServiceLoadBalancers ${JSON.stringify(phases)}, ${claims.length} claims, VIP not held by its own claim: ${unheld.map((s) => `${s.metadata.name}=${s.status?.vip ?? '-'}`).join(' ') || 'none'}`;
          if (slbs.length !== SERVICES || !slbs.every((s) => s.status?.phase === 'Allocated')) return undefined;
          return claims.length === SERVICES && unheld.length === 0 ? { slbs, claims } : undefined;
        },
        { what: 'every Service allocated, one claim each, held by it', timeoutMs: 60_000 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}; last seen: ${seen}`);
      });
      expect(new Set(settled.slbs.map((s) => s.status!.vip)).size).toBe(SERVICES);
      for (const s of settled.slbs) {
        const claim = settled.claims.find((c) => c.spec.value === s.status!.vip);
        expect(claim?.spec.holder).toMatchObject({
          kind: 'ServiceLoadBalancer',
          namespace,
          name: s.metadata.name,
          uid: s.metadata.uid,
        });
      }
    } finally {
      await Promise.all(controllers.map((c) => c.stop()));
    }
  }, 120_000);
});

describe('juneau-controller binary (main)', () => {
  it('--leader-elect: one leader holds the Lease; SIGTERM releases it, exits 0, and the standby takes over', async () => {
    const lease = `juneau-test-${suffix}`;
    const leaseNamespace = 'default';
    const sink: string[] = [];
    const run = () => {
      let stop!: (signal: string) => void;
      const stopSignal = new Promise<string>((resolve) => (stop = resolve));
      const exit = main(
        [
          '--kubeconfig',
          testKubeconfigPath(),
          '--leader-election-namespace',
          leaseNamespace,
          '--leader-election-id',
          lease,
          '--health-addr=127.0.0.1:0',
          '--metrics-addr=127.0.0.1:0',
          '--log-level=warn',
        ],
        {
          stdout: (t) => sink.push(t),
          stderr: (t) => sink.push(t),
          env: {},
          stopSignal,
        },
      );
      return { stop, exit };
    };
    type Lease = KubeObject & { spec?: { holderIdentity?: string } };
    const holder = async () => {
      try {
        return (await rest.get<Lease>(Resources.leases, leaseNamespace, lease)).spec?.holderIdentity;
      } catch (err) {
        if (isNotFound(err)) return undefined; // not created yet
        throw err;
      }
    };
    const a = run();
    let b: ReturnType<typeof run> | undefined;
    try {
      const first = await waitFor(holder, { what: 'a leader' });
      // The second candidate waits: over 3 s (more than one retry period of the binary's 2 s) the
      // Lease renews but never names another holder.
      const leaderKept = await watchForChanges<Lease>({
        type: Resources.leases,
        namespace: leaseNamespace,
        name: lease,
        project: (l) => l.spec?.holderIdentity,
        what: `Lease ${lease} holderIdentity`,
      });
      b = run();
      await leaderKept.expectNoChangeFor(3_000);
      a.stop('SIGTERM');
      expect(await a.exit).toBe(0);
      // Released, not left to expire: the moment a has exited the Lease no longer names it (a
      // Lease that was only abandoned would name it for its whole 15 s duration).
      expect(await holder()).not.toBe(first);
      await waitForMatch(
        () => holder(),
        (h) => h && h !== first,
        { what: 'the standby takes over', timeoutMs: 20_000 },
      );
      b.stop('SIGTERM');
      expect(await b.exit).toBe(0);
      expect(await holder()).toBe('');
    } finally {
      // Also when an expectation failed: a replica left running would keep Jest alive.
      a.stop('SIGTERM');
      b?.stop('SIGTERM');
      await Promise.all([a.exit, b?.exit]);
    }
  }, 60_000);
});
