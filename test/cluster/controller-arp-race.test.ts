// A webhook alone cannot stop two creates that race past it (ARP-4), so the controller keeps the
// promise itself: it writes an address's ARPAdvertisement only while it holds that address's
// AllocationClaim (ALLOC-1). Worst case here: two JuneauControllers, both active (no Lease), no
// webhook registered, Services and ElasticIPs created at once for a tiny pool and for the same
// requested addresses, then churned. A watch on every ARPAdvertisement checks every state the API
// server went through (watch events arrive in resourceVersion order), and a list samples it too.
import { API_VERSION, ANNOTATIONS, type AllocationClaim, type ARPAdvertisement } from '../../api';
import { JuneauController } from '../../runtime/controller/controller';
import { OWNER_LABELS } from '../../runtime/controller/resources';
import { Informer } from '../../runtime/kube/informer';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { sleep } from '../sleep';
import {
  createLoadBalancerService,
  createRunningPod,
  deleteArpNetwork,
  deleteNodes,
  deletePodNow,
  ensureNode,
  testKubeConfig,
  useNamespace,
  waitFor,
  createArpNetwork,
} from './fixture';

type Ad = ARPAdvertisement & KubeObject;
const rest = new RestClient(testKubeConfig());
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `race-pool-${suffix}`;
const NET = `race-net-${suffix}`;
// 8 addresses (198.18.120.0-198.18.120.7, a range so ADDR-2 skips none; used by no other test file) for 22 Services and 10 ElasticIPs.
const PREFIX = '198.18.120.';
const nodes = [1, 2, 3].map((i) => `race-${suffix}-n${i}`);

/** Every state of the ARPAdvertisements of our pool, as seen by a watch and by a list poll. */
class DuplicateWatch {
  readonly seen: string[] = [];
  private readonly informer = new Informer<Ad>(rest, { type: JuneauResources.arpAdvertisements });
  private polling = true;
  private poll: Promise<void> | undefined;
  samples = 0;

  async start(): Promise<void> {
    const check = (source: string, ads: readonly Ad[]) => {
      const byAddress = new Map<string, string[]>();
      for (const a of ads)
        if (a.spec.address.startsWith(PREFIX))
          byAddress.set(a.spec.address, [...(byAddress.get(a.spec.address) ?? []), a.metadata.name ?? '']);
      for (const [address, names] of byAddress)
        if (names.length > 1) this.seen.push(`${source}: ${address} advertised by ${names.sort().join(', ')}`);
    };
    const onEvent = () => check('watch', this.informer.list());
    this.informer.addHandlers({ onAdd: onEvent, onUpdate: onEvent, onDelete: onEvent });
    this.informer.start();
    await this.informer.waitForSync();
    this.poll = (async () => {
      while (this.polling) {
        check('list', (await rest.list<Ad>(JuneauResources.arpAdvertisements)).items);
        this.samples++;
        await sleep(50);
      }
    })();
  }

  async stop(): Promise<void> {
    this.polling = false;
    await this.poll;
    await this.informer.stop();
  }
}

const createService = (namespace: string, name: string, requestedIP?: string) =>
  createLoadBalancerService(namespace, name, { network: NET, requestedIP, ports: [{ port: 80 }] });

async function createEip(namespace: string, name: string, requestedIP?: string): Promise<void> {
  await rest.create(JuneauResources.elasticIPs, {
    apiVersion: API_VERSION,
    kind: 'ElasticIP',
    metadata: { name, namespace },
    spec: { externalNetwork: NET, ...(requestedIP ? { requestedIP } : {}) },
  });
}

/** A running Pod holding ElasticIP `eip` directly on eth0 (EIP-4): its NIC gets the address. */
async function createDirectPod(
  namespace: string,
  name: string,
  eip: string,
  nodeName: string,
  podIP: string,
): Promise<void> {
  await rest.create(Resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, annotations: { [ANNOTATIONS.elasticIP]: eip } },
    spec: { nodeName, containers: [{ name: 'main', image: 'registry.invalid/none' }] },
  } as KubeObject);
  await rest.patch(
    Resources.pods,
    namespace,
    name,
    'merge',
    { status: { phase: 'Running', podIP, podIPs: [{ ip: podIP }] } },
    { subresource: 'status' },
  );
}

beforeAll(async () => {
  await Promise.all(nodes.map((n, i) => ensureNode(n, { internalIP: `192.0.2.${221 + i}` })));
  await createArpNetwork(rest, { pool: POOL, network: NET, addresses: [`${PREFIX}0-${PREFIX}7`] });
});

afterAll(async () => {
  await deleteArpNetwork(rest, { pool: POOL, network: NET });
  await deleteNodes(nodes);
});

describe('two active controllers, no webhook', () => {
  const ns = useNamespace();

  it('ARP-4 / ALLOC-1 / EIP-3: concurrent creates for a tiny pool and for the same requested addresses, then churn -> never two ARPAdvertisements for one address', async () => {
    const namespace = ns();
    const watch = new DuplicateWatch();
    await watch.start();
    const controllers = [
      new JuneauController({ rest: new RestClient(testKubeConfig()) }),
      new JuneauController({ rest: new RestClient(testKubeConfig()) }),
    ];
    await Promise.all(controllers.map((c) => c.start()));
    try {
      // Backends first, so every Service that gets a VIP advertises it at once.
      const services = [
        ...Array.from({ length: 6 }, (_, i) => ({ name: `want1-${i}`, requested: `${PREFIX}1` })),
        ...Array.from({ length: 6 }, (_, i) => ({ name: `want2-${i}`, requested: `${PREFIX}2` })),
        ...Array.from({ length: 10 }, (_, i) => ({ name: `any-${i}`, requested: undefined })),
      ];
      const eips = [
        ...Array.from({ length: 5 }, (_, i) => ({ name: `eip3-${i}`, requested: `${PREFIX}3` })),
        ...Array.from({ length: 5 }, (_, i) => ({ name: `eipany-${i}`, requested: undefined })),
      ];
      await Promise.all(
        services.map((s, i) =>
          createRunningPod({
            namespace,
            name: `${s.name}-pod`,
            labels: { app: s.name },
            nodeName: nodes[i % 3],
            podIP: `10.245.0.${10 + i}`,
          }),
        ),
      );
      await Promise.all(
        eips.map((e, i) => createDirectPod(namespace, `${e.name}-pod`, e.name, nodes[i % 3], `10.245.1.${10 + i}`)),
      );
      await Promise.all([
        ...services.map((s) => createService(namespace, s.name, s.requested)),
        ...eips.map((e) => createEip(namespace, e.name, e.requested)),
      ]);

      // Settled: all 8 addresses advertised, each by the holder of its claim.
      let last = '';
      const settle = (what: string, gone: ReadonlyArray<{ name: string }> = []) =>
        waitFor(
          async () => {
            const ads = (await rest.list<Ad>(JuneauResources.arpAdvertisements)).items.filter((a) =>
              a.spec.address.startsWith(PREFIX),
            );
            const claims = (
              await rest.list<AllocationClaim & KubeObject>(JuneauResources.allocationClaims)
            ).items.filter((c) => c.spec.pool.name === POOL);
            const ok =
              ads.length === 8 &&
              ads.every((a) =>
                claims.some(
                  (c) =>
                    c.spec.value === a.spec.address &&
                    c.spec.holder.kind === a.metadata.labels?.[OWNER_LABELS.kind] &&
                    c.spec.holder.name === a.metadata.labels?.[OWNER_LABELS.name],
                ),
              );
            last = `ARPAdvertisements ${ads
              .map((a) => `${a.spec.address}=${a.metadata.name}`)
              .sort()
              .join(' ')}; claims ${claims
              .map((c) => `${c.spec.value}=${c.spec.holder.name}`)
              .sort()
              .join(' ')}`;
            return ok && !ads.some((a) => gone.some((o) => o.name === a.metadata.labels?.[OWNER_LABELS.name]))
              ? ads
              : undefined;
          },
          { what, timeoutMs: 90_000, intervalMs: 250 },
        ).catch((err: unknown) => Promise.reject(new Error(`${String(err)}\n${last}`)));
      const first = await settle("8 ARPAdvertisements, each backed by its owner's claim");
      // Free allocation may take .1-.3 before a request for them arrives; that is allowed (EIP-3).
      // Churn: four holders (Services or ElasticIPs) go, and those waiting race for the released
      // addresses; one waiting Service changes its requested address (release + claim anew).
      const owner = (a: Ad) => ({
        kind: a.metadata.labels?.[OWNER_LABELS.kind],
        name: a.metadata.labels?.[OWNER_LABELS.name] ?? '',
      });
      const holders = first.map(owner);
      const leaving = holders.slice(0, 4);
      await Promise.all(
        leaving.map((o) =>
          o.kind === 'ElasticIP'
            ? rest.delete(JuneauResources.elasticIPs, namespace, o.name)
            : rest.delete(Resources.services, namespace, o.name),
        ),
      );
      // Movers: Services holding an address now ask for one outside the pool -> they release
      // theirs (a changed requested address, ADDR-3) while Pending Services wait to take it. (Asking
      // for an address another holder keeps would keep theirs until it is free, ADDR-3.)
      const movers = holders.slice(4).filter((h) => h.kind === 'ServiceLoadBalancer');
      const elsewhere = '198.18.119.7';
      await Promise.all(
        movers.map((m) =>
          rest.patch(Resources.services, namespace, m.name, 'merge', {
            metadata: { annotations: { [ANNOTATIONS.loadBalancerRequestedIP]: elsewhere } },
          }),
        ),
      );
      await Promise.all(leaving.map((o) => deletePodNow(namespace, `${o.name}-pod`)));
      await settle('8 ARPAdvertisements again after churn, none of the leaving holders or movers', [
        ...leaving,
        ...movers,
      ]);

      // Everything goes (finalizers: ARPAdvertisement before claim, ARP-6), still watched.
      await Promise.all([
        ...services
          .filter((s) => !leaving.some((o) => o.name === s.name))
          .map((s) => rest.delete(Resources.services, namespace, s.name)),
        ...eips
          .filter((e) => !leaving.some((o) => o.name === e.name))
          .map((e) => rest.delete(JuneauResources.elasticIPs, namespace, e.name)),
      ]);
      await Promise.all([...services, ...eips].map((o) => deletePodNow(namespace, `${o.name}-pod`)));
      await waitFor(
        async () => {
          const ads = (await rest.list<Ad>(JuneauResources.arpAdvertisements)).items.filter((a) =>
            a.spec.address.startsWith(PREFIX),
          );
          const claims = (await rest.list<AllocationClaim & KubeObject>(JuneauResources.allocationClaims)).items.filter(
            (c) => c.spec.pool.name === POOL,
          );
          return ads.length === 0 && claims.length === 0;
        },
        { what: 'no ARPAdvertisement and no claim left', timeoutMs: 60_000, intervalMs: 250 },
      );
    } finally {
      await Promise.all(controllers.map((c) => c.stop()));
      await watch.stop();
    }
    expect(watch.samples).toBeGreaterThan(10);
    expect(watch.seen).toEqual([]);
  }, 180_000);
});
