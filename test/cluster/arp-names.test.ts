// NAME-1 on the real API server, the whole controller in-process: ARPAdvertisement names that
// collided before (`team-a/web` and `team/a-web` both read `slb-team-a-web`) are each owner's own and
// stay put; a 100-character ElasticIP name gets its ARPAdvertisement; an object under an owner's name
// whose owner labels are someone else's is never changed or deleted; an object named and labelled
// the old way is replaced under the new name with never two objects for one address. "Stays put"
// and "never changed" are watches on the API server that record every event in the window.
import { API_VERSION, ANNOTATIONS, type ARPAdvertisement, type ElasticIP, type ServiceLoadBalancer } from '../../api';
import { advertisementName, isOwnedBy, type AdvertisementOwner } from '../../runtime/controller/arp/names';
import { JuneauController } from '../../runtime/controller/controller';
import { OWNER_ANNOTATION, OWNER_LABELS } from '../../runtime/controller/resources';
import { JuneauResources, Resources, resourcePath } from '../../runtime/kube/resources';
import { isNotFound, RestClient, type WatchHandle } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import {
  createLoadBalancerService,
  createRunningPod,
  deleteArpNetwork,
  deleteNamespace,
  deleteNodes,
  ensureNode,
  TEST_NAMESPACE_LABEL,
  testKubeConfig,
  waitFor,
  waitForMatch,
  createArpNetwork,
} from './fixture';
import { controllerRecorder, PassLog, sweepingController } from './in-process-controller';
import { sleep } from '../sleep';

const rest = new RestClient(testKubeConfig());
const ARP = JuneauResources.arpAdvertisements;
type Ad = ARPAdvertisement & KubeObject;

const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `names-${suffix}`;
const NET = `names-${suffix}`;
const nodes = [`names-${suffix}-n1`, `names-${suffix}-n2`];
/** The pool; OUTSIDE is an address no owner can be given (for the hand-made objects). */
const POOL_CIDR = '198.18.163.0/28';
const OUTSIDE = '198.18.164.1';
const namespaces: string[] = [];
const handMade: string[] = [];

const slb = (namespace: string, name: string): AdvertisementOwner => ({ kind: 'ServiceLoadBalancer', namespace, name });
const eip = (namespace: string, name: string): AdvertisementOwner => ({ kind: 'ElasticIP', namespace, name });

async function getAs<T>(type: typeof ARP, namespace: string | undefined, name: string): Promise<T | undefined> {
  try {
    return (await rest.get<KubeObject>(type, namespace, name)) as unknown as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
const getAd = (name: string) => getAs<Ad>(ARP, undefined, name);

/** A namespace of exactly this name (the collisions need exact names), deleted after the file. */
async function namespace(name: string): Promise<string> {
  await rest.create(Resources.namespaces, { metadata: { name, labels: { [TEST_NAMESPACE_LABEL]: 'true' } } });
  namespaces.push(name);
  return name;
}

/** A Juneau LoadBalancer Service with one ready Local backend on nodes[0]. */
async function loadBalancer(ns: string, name: string, requestedIP?: string): Promise<void> {
  await createLoadBalancerService(ns, name, { network: NET, requestedIP });
  await createRunningPod({
    namespace: ns,
    name: `${name}-1`,
    labels: { app: name },
    nodeName: nodes[0],
    podIP: `10.244.9.${10 + namespaces.length}`,
    ports: [{ name: 'http', containerPort: 8080 }],
  });
}

/** An ElasticIP held directly by a Pod on `node` (NIC-1), so it is Attached and advertised. */
async function usedElasticIP(ns: string, name: string, node: string): Promise<void> {
  await rest.create(JuneauResources.elasticIPs, {
    apiVersion: API_VERSION,
    kind: 'ElasticIP',
    metadata: { name, namespace: ns },
    spec: { externalNetwork: NET },
  });
  await rest.create(Resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'holder', namespace: ns, annotations: { [ANNOTATIONS.elasticIP]: name } },
    spec: { nodeName: node, containers: [{ name: 'main', image: 'registry.invalid/none' }] },
  } as KubeObject);
}

/**
 * The owner's ARPAdvertisement advertising its address, found by its owner marks whatever its name
 * (so a wait fails on what the controller does, not on how the test spells a name).
 */
async function advertisedFor(owner: AdvertisementOwner): Promise<Ad | undefined> {
  const address =
    owner.kind === 'ServiceLoadBalancer'
      ? (await getAs<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, owner.namespace, owner.name))?.status
          ?.vip
      : (await getAs<ElasticIP>(JuneauResources.elasticIPs, owner.namespace, owner.name))?.status?.address;
  const candidates = await rest.list<Ad>(ARP, {
    labelSelector: `${OWNER_LABELS.kind}=${owner.kind},${OWNER_LABELS.namespace}=${owner.namespace}`,
  });
  return candidates.items.find((ad) => address && ad.spec.address === address && isOwnedBy(ad, owner));
}

/** A hand-made ARPAdvertisement (no webhook runs in this file), deleted after the file. */
async function createByHand(name: string, address: string, labels: Record<string, string>): Promise<Ad> {
  handMade.push(name);
  return rest.create<Ad>(ARP, {
    apiVersion: API_VERSION,
    kind: 'ARPAdvertisement',
    metadata: { name, labels },
    spec: { externalNetwork: NET, address, nodeName: nodes[1] },
  } as Ad);
}

const oldLabels = (owner: AdvertisementOwner) => ({
  [OWNER_LABELS.kind]: owner.kind,
  [OWNER_LABELS.namespace]: owner.namespace,
  [OWNER_LABELS.name]: owner.name,
});

/** Every ARPAdvertisement event the API server sends for a selector, from the moment of start(). */
class AdWatch {
  readonly events: Array<{ type: string; name: string; address: string; uid: string }> = [];
  private handle: WatchHandle | undefined;
  private ended: Error | undefined | 'open' = 'open';

  constructor(private readonly selector: { labelSelector?: string; fieldSelector?: string }) {}

  async start(): Promise<this> {
    const list = await rest.list<Ad>(ARP, this.selector);
    this.handle = await rest.watch<Ad>(
      resourcePath(ARP),
      { ...this.selector, resourceVersion: list.metadata?.resourceVersion },
      (e) => {
        if (e.type === 'BOOKMARK') return;
        this.events.push({
          type: e.type,
          name: e.object.metadata?.name ?? '',
          address: e.object.spec?.address ?? '',
          uid: e.object.metadata?.uid ?? '',
        });
      },
    );
    void this.handle.done.then((err) => (this.ended = err));
    return this;
  }

  /** Stops, and fails if the stream had ended by itself (then the window was not watched). */
  stop(): AdWatch['events'] {
    if (this.ended !== 'open') throw new Error(`the watch ended before the window did: ${String(this.ended)}`);
    this.handle?.abort();
    return this.events.map((e) => ({ ...e }));
  }
}

/**
 * A window in which `poke` makes the owners reconcile: closed once every pass in `prompted` (as
 * PassLog names them) has run after the poke, then `tailMs` more for the watch to deliver what those
 * passes wrote. Returns every event the watch saw.
 */
async function watchedWindow(
  selector: { labelSelector?: string; fieldSelector?: string },
  poke: () => Promise<void>,
  prompted: readonly string[],
  tailMs = 1_000,
) {
  const watch = await new AdWatch(selector).start();
  const from = passLog.passes.length;
  await poke();
  await waitFor(
    async () => {
      const ran = passLog.passes.slice(from);
      if (prompted.every((p) => ran.includes(p))) return true;
      throw new Error(`passes since the poke: ${ran.join(', ') || 'none'}`);
    },
    { what: `the passes the poke prompted (${prompted.join(', ')})` },
  );
  console.log(`arp-names: passes inside the window: ${passLog.passes.slice(from).join(', ')}`);
  await sleep(tailMs);
  return watch.stop();
}

/** Any change to the object makes its owner's reconciler run a pass. */
const touch = (type: typeof ARP, ns: string, name: string) =>
  rest.patch(type, ns, name, 'merge', { metadata: { annotations: { 'juneau.test/poke': String(Date.now()) } } });

let controller: JuneauController;
const recorder = controllerRecorder(rest, 'names', 500);
const passLog = new PassLog();

beforeAll(async () => {
  await Promise.all(nodes.map((n, i) => ensureNode(n, { internalIP: `192.0.2.${141 + i}` })));
  await createArpNetwork(rest, { pool: POOL, network: NET, addresses: [POOL_CIDR] });
  controller = sweepingController(recorder, 2_000, passLog);
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  for (const name of handMade)
    await rest.delete(ARP, undefined, name).catch((err: unknown) => void (isNotFound(err) || console.error(err)));
  for (const ns of namespaces) await deleteNamespace(ns);
  await deleteArpNetwork(rest, { pool: POOL, network: NET });
  await deleteNodes(nodes);
});

describe('ARPAdvertisement names (NAME-1)', () => {
  it('NAME-1: Services team-a/web and team/a-web each get their own ARPAdvertisement and keep it (no delete, no recreate, while both reconcile)', async () => {
    const [a, b] = [await namespace(`nt${suffix}-a`), await namespace(`nt${suffix}`)];
    await Promise.all([loadBalancer(a, 'web'), loadBalancer(b, 'a-web')]);
    const [adA, adB] = await waitFor(
      async () => {
        const both = [await advertisedFor(slb(a, 'web')), await advertisedFor(slb(b, 'a-web'))];
        return both.every(Boolean) ? (both as Ad[]) : undefined;
      },
      { what: 'both Services advertised under their own names' },
    );
    expect([adA.metadata?.name, adB.metadata?.name]).toEqual([
      advertisementName(slb(a, 'web')),
      advertisementName(slb(b, 'a-web')),
    ]);
    expect(adA.metadata?.name).not.toBe(adB.metadata?.name);
    expect(adA.spec.address).not.toBe(adB.spec.address);

    const events = await watchedWindow(
      { labelSelector: `${OWNER_LABELS.namespace} in (${a},${b})` },
      async () => {
        await touch(Resources.services, a, 'web');
        await touch(Resources.services, b, 'a-web');
      },
      [`serviceloadbalancer ${a}/web`, `serviceloadbalancer ${b}/a-web`],
    );
    expect(events).toEqual([]);
    expect((await getAd(adA.metadata!.name!))?.metadata?.uid).toBe(adA.metadata?.uid);
    expect((await getAd(adB.metadata!.name!))?.metadata?.uid).toBe(adB.metadata?.uid);
  });

  it('NAME-1: ElasticIPs team-a/db and team/a-db each get their own ARPAdvertisement and keep it', async () => {
    const [a, b] = [await namespace(`ne${suffix}-a`), await namespace(`ne${suffix}`)];
    await Promise.all([usedElasticIP(a, 'db', nodes[0]), usedElasticIP(b, 'a-db', nodes[1])]);
    const [adA, adB] = await waitFor(
      async () => {
        const both = [await advertisedFor(eip(a, 'db')), await advertisedFor(eip(b, 'a-db'))];
        return both.every(Boolean) ? (both as Ad[]) : undefined;
      },
      { what: 'both ElasticIPs advertised under their own names' },
    );
    expect([adA.spec.nodeName, adB.spec.nodeName]).toEqual(nodes);
    expect([adA.metadata?.name, adB.metadata?.name]).toEqual([
      advertisementName(eip(a, 'db')),
      advertisementName(eip(b, 'a-db')),
    ]);

    const events = await watchedWindow(
      { labelSelector: `${OWNER_LABELS.namespace} in (${a},${b})` },
      async () => {
        await touch(JuneauResources.elasticIPs, a, 'db');
        await touch(JuneauResources.elasticIPs, b, 'a-db');
      },
      [`elasticip ${a}/db`, `elasticip ${b}/a-db`],
    );
    expect(events).toEqual([]);
  });

  it('NAME-1: an ElasticIP with a 100-character name gets its ARPAdvertisement; labels stay within 63 characters, the name is in the verified annotation', async () => {
    const ns = await namespace(`nl${suffix}`);
    const name = `long-${'x'.repeat(95)}`;
    await usedElasticIP(ns, name, nodes[0]);
    const ad = await waitFor(() => advertisedFor(eip(ns, name)), {
      what: 'the ARPAdvertisement of the long-named ElasticIP',
    });
    expect(ad.metadata?.name).toBe(advertisementName(eip(ns, name)));
    expect(ad.spec.nodeName).toBe(nodes[0]);
    expect(ad.metadata?.annotations?.[OWNER_ANNOTATION]).toBe(`ElasticIP/${ns}/${name}`);
    expect(ad.metadata?.labels?.[OWNER_LABELS.name]).toBeUndefined();
    expect(Object.values(ad.metadata?.labels ?? {}).every((v) => v.length <= 63)).toBe(true);
    // Selecting by the hashed owner label finds exactly it.
    const selected = await rest.list<Ad>(ARP, {
      labelSelector: `${OWNER_LABELS.id}=${ad.metadata?.labels?.[OWNER_LABELS.id]}`,
    });
    expect(selected.items.map((i) => i.metadata?.name)).toEqual([ad.metadata?.name]);
    // And it goes when the address is no longer used (EIP-18), found by its owner marks.
    await rest.delete(Resources.pods, ns, 'holder', { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 });
    await waitFor(async () => (await getAd(ad.metadata!.name!)) === undefined, {
      what: 'the ARPAdvertisement withdrawn',
    });
  });

  it("NAME-1: an object under an owner's name with another owner's labels is never changed or deleted; the owner waits with a Warning and advertises once it is gone", async () => {
    const ns = await namespace(`nf${suffix}`);
    const svcName = advertisementName(slb(ns, 'a-web'));
    const eipName = advertisementName(eip(ns, 'a-db'));
    // The names the old controller gave `nf<suffix>-a/web` too. The Service-named one is labelled as
    // that Service's (which does not exist); the ElasticIP-named one as a ServiceLoadBalancer's (an
    // object labelled for a vanished ElasticIP is that ElasticIP's to clean up, ALLOC-2).
    expect([svcName, eipName]).toEqual([`slb-${ns}-a-web`, `eip-${ns}-a-db`]);
    const foreignSvc = await createByHand(svcName, OUTSIDE, oldLabels(slb(`${ns}-a`, 'web')));
    const foreignEip = await createByHand(eipName, '198.18.164.2', oldLabels(slb(`${ns}-a`, 'db')));
    const watchSvc = await new AdWatch({ fieldSelector: `metadata.name=${svcName}` }).start();
    const watchEip = await new AdWatch({ fieldSelector: `metadata.name=${eipName}` }).start();

    await loadBalancer(ns, 'a-web');
    await usedElasticIP(ns, 'a-db', nodes[0]);
    await waitFor(
      async () => {
        const list = await rest.list<KubeObject & { reason?: string; regarding?: { kind?: string; name?: string } }>(
          Resources.events,
          { namespace: ns },
        );
        const seen = list.items.map((e) => `${e.regarding?.kind}/${e.regarding?.name} ${e.reason}`);
        if (
          seen.includes('ServiceLoadBalancer/a-web ARPAdvertisementNameTaken') &&
          seen.includes('ElasticIP/a-db ARPAdvertisementNameTaken')
        )
          return true;
        throw new Error(`Events so far: ${seen.join('; ')}`);
      },
      { what: 'a Warning ARPAdvertisementNameTaken for the Service and the ElasticIP' },
    );
    const ready = await waitForMatch(
      () => getAs<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, ns, 'a-web'),
      (s) => s?.status?.vip && s.status.advertisingNodes?.length,
      'the ServiceLoadBalancer with a VIP and a backend',
    ); // written after a pass that wanted its ARPAdvertisement
    await waitFor(
      async () => (await getAs<ElasticIP>(JuneauResources.elasticIPs, ns, 'a-db'))?.status?.phase === 'Attached',
      { what: 'the ElasticIP Attached' },
    );
    expect(watchSvc.stop()).toEqual([]);
    expect(watchEip.stop()).toEqual([]);
    expect(await getAd(svcName)).toMatchObject({
      metadata: { uid: foreignSvc.metadata?.uid, resourceVersion: foreignSvc.metadata?.resourceVersion },
      spec: { address: OUTSIDE },
    });
    expect(await getAd(eipName)).toMatchObject({
      metadata: { uid: foreignEip.metadata?.uid, resourceVersion: foreignEip.metadata?.resourceVersion },
    });

    // Once the other owner's object is gone, each advertises under its own name.
    await rest.delete(ARP, undefined, svcName);
    await rest.delete(ARP, undefined, eipName);
    const own = await waitFor(() => advertisedFor(slb(ns, 'a-web')), {
      what: 'the Service advertised once the name is free',
    });
    expect(own.spec.address).toBe(ready.status?.vip);
    expect(own.metadata?.name).toBe(svcName);
    await waitFor(() => advertisedFor(eip(ns, 'a-db')), { what: 'the ElasticIP advertised once the name is free' });
  });

  it('NAME-1: an ARPAdvertisement named and labelled the old way is replaced under the new name, never two objects for one address; the owner whose name it stood on gets its own after', async () => {
    const [a, b] = [`ng${suffix}-a`, `ng${suffix}`];
    const watch = await new AdWatch({ labelSelector: `${OWNER_LABELS.namespace} in (${a},${b})` }).start();
    await namespace(a);
    await namespace(b);
    const VIP = '198.18.163.13';
    // The pre-NAME-1 object of Service a/web: `slb-ng<suffix>-a-web`, three labels, its VIP.
    const legacy = await createByHand(`slb-${a}-web`, VIP, oldLabels(slb(a, 'web')));
    expect(legacy.metadata?.name).toBe(advertisementName(slb(b, 'a-web')));
    await Promise.all([loadBalancer(a, 'web', VIP), loadBalancer(b, 'a-web')]);
    const [adA, adB] = await waitFor(
      async () => {
        const both = [await advertisedFor(slb(a, 'web')), await advertisedFor(slb(b, 'a-web'))];
        return both.every(Boolean) ? (both as Ad[]) : undefined;
      },
      { what: 'both Services advertised under their NAME-1 names' },
    );
    const events = watch.stop();
    expect([adA.metadata?.name, adB.metadata?.name]).toEqual([advertisementName(slb(a, 'web')), legacy.metadata?.name]);
    expect(adA.spec.address).toBe(VIP);
    expect(adB.metadata?.uid).not.toBe(legacy.metadata?.uid);

    // Replayed in order: at no point did two live objects advertise one address.
    const live = new Map<string, string>();
    for (const e of events) {
      if (e.type === 'DELETED') live.delete(e.uid);
      else live.set(e.uid, e.address);
      const addresses = [...live.values()];
      expect(new Set(addresses).size).toBe(addresses.length);
    }
    // The old object was deleted once, never changed.
    expect(events.filter((e) => e.uid === legacy.metadata?.uid).map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
  });
});
