// NAME-1 on the real API server, the whole controller in-process: the seeds' names
// (`slb-<namespace>-<name>`, `eip-<namespace>-<name>`) are used while they fit and are free, a
// dashed namespace included; the owner whose seed name another owner already holds (`team-a/web`
// and `team/a-web` both read `slb-team-a-web`), or a hand-made object holds, gets the hashed form and
// the other object is never changed or deleted; a seed name past 253 characters gets the hashed form;
// an object under the hashed form moves to the seed name once that is free, with the address
// answered by exactly one node throughout. "Stays put", "never changed" and "throughout" are watches
// on the API server that record every event in the window.
import { API_VERSION, ANNOTATIONS, type ARPAdvertisement, type ElasticIP, type ServiceLoadBalancer } from '../../api';
import {
  hashedAdvertisementName,
  isOwnedBy,
  ownerMetadata,
  seedAdvertisementName,
  type AdvertisementOwner,
} from '../../runtime/controller/arp/names';
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
async function createByHand(
  name: string,
  address: string,
  marks: { labels?: Record<string, string>; annotations?: Record<string, string> },
  nodeName = nodes[1],
): Promise<Ad> {
  handMade.push(name);
  return rest.create<Ad>(ARP, {
    apiVersion: API_VERSION,
    kind: 'ARPAdvertisement',
    metadata: { name, ...marks },
    spec: { externalNetwork: NET, address, nodeName },
  } as Ad);
}

/** The three labels objects carried before the owner annotation existed. */
const oldLabels = (owner: AdvertisementOwner) => ({
  labels: {
    [OWNER_LABELS.kind]: owner.kind,
    [OWNER_LABELS.namespace]: owner.namespace,
    [OWNER_LABELS.name]: owner.name,
  },
});

const seedName = (owner: AdvertisementOwner): string => {
  const name = seedAdvertisementName(owner);
  if (!name) throw new Error(`${owner.kind} ${owner.namespace}/${owner.name} has no seed name`);
  return name;
};

/** Every ARPAdvertisement event the API server sends for a selector, from the moment of start(). */
type AdEvent = { type: string; name: string; address: string; uid: string; node: string };
class AdWatch {
  readonly events: AdEvent[] = [];
  /** What the list before the watch returned, as ADDED events. */
  initial: AdEvent[] = [];
  private handle: WatchHandle | undefined;
  private ended: Error | undefined | 'open' = 'open';

  constructor(private readonly selector: { labelSelector?: string; fieldSelector?: string }) {}

  async start(): Promise<this> {
    const list = await rest.list<Ad>(ARP, this.selector);
    this.initial = list.items.map((ad) => eventOf('ADDED', ad));
    this.handle = await rest.watch<Ad>(
      resourcePath(ARP),
      { ...this.selector, resourceVersion: list.metadata?.resourceVersion },
      (e) => {
        if (e.type === 'BOOKMARK') return;
        this.events.push(eventOf(e.type, e.object));
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

const eventOf = (type: string, ad: Ad): AdEvent => ({
  type,
  name: ad.metadata?.name ?? '',
  address: ad.spec?.address ?? '',
  uid: ad.metadata?.uid ?? '',
  node: ad.spec?.nodeName ?? '',
});

/**
 * The watch replayed from its list, in the API server's order: after each event, the nodes whose
 * live objects advertise `address` (what the agents answer).
 */
function answeringNodes(initial: readonly AdEvent[], events: readonly AdEvent[], address: string): string[][] {
  const live = new Map(initial.map((e) => [e.uid, e]));
  const after: string[][] = [];
  for (const e of events) {
    if (e.type === 'DELETED') live.delete(e.uid);
    else live.set(e.uid, e);
    after.push([...new Set([...live.values()].filter((l) => l.address === address).map((l) => l.node))]);
  }
  return after;
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
  it("NAME-1: a Service in a dashed namespace gets the seed's name while it is free; team/a-web, whose seed name it is too, gets the hashed form; neither moves while both reconcile", async () => {
    const [a, b] = [await namespace(`nt${suffix}-a`), await namespace(`nt${suffix}`)];
    await loadBalancer(a, 'web');
    const adA = await waitFor(() => advertisedFor(slb(a, 'web')), { what: `Service ${a}/web advertised` });
    expect(adA.metadata?.name).toBe(`slb-${a}-web`);
    await loadBalancer(b, 'a-web');
    const adB = await waitFor(() => advertisedFor(slb(b, 'a-web')), { what: `Service ${b}/a-web advertised` });
    expect(seedName(slb(b, 'a-web'))).toBe(adA.metadata?.name);
    expect(adB.metadata?.name).toBe(hashedAdvertisementName(slb(b, 'a-web')));
    expect(adB.metadata?.name).toMatch(new RegExp(`^slb-${b}-a-web\\.[0-9a-f]{16}$`));
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

  it("NAME-1: ElasticIPs team-a/db then team/a-db: the first keeps the seed's name, the second gets the hashed form, and both keep them", async () => {
    const [a, b] = [await namespace(`ne${suffix}-a`), await namespace(`ne${suffix}`)];
    await usedElasticIP(a, 'db', nodes[0]);
    const adA = await waitFor(() => advertisedFor(eip(a, 'db')), { what: `ElasticIP ${a}/db advertised` });
    await usedElasticIP(b, 'a-db', nodes[1]);
    const adB = await waitFor(() => advertisedFor(eip(b, 'a-db')), { what: `ElasticIP ${b}/a-db advertised` });
    expect([adA.spec.nodeName, adB.spec.nodeName]).toEqual(nodes);
    expect([adA.metadata?.name, adB.metadata?.name]).toEqual([`eip-${a}-db`, hashedAdvertisementName(eip(b, 'a-db'))]);

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

  it("NAME-1: a 100-character ElasticIP name keeps the seed's name (labels within 63 characters, the name in the verified annotation); a 250-character one, whose seed name passes 253, gets the hashed form", async () => {
    const ns = await namespace(`nl${suffix}`);
    const name = `long-${'x'.repeat(95)}`;
    await usedElasticIP(ns, name, nodes[0]);
    const ad = await waitFor(() => advertisedFor(eip(ns, name)), {
      what: 'the ARPAdvertisement of the long-named ElasticIP',
    });
    expect(ad.metadata?.name).toBe(`eip-${ns}-${name}`);
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

    const ns2 = await namespace(`nm${suffix}`);
    const longer = `long-${'y'.repeat(245)}`;
    expect(`eip-${ns2}-${longer}`.length).toBeGreaterThan(253);
    await usedElasticIP(ns2, longer, nodes[1]);
    const hashed = await waitFor(() => advertisedFor(eip(ns2, longer)), {
      what: 'the ARPAdvertisement of the 250-character ElasticIP',
    });
    console.log(
      `arp-names: a 250-character ElasticIP name gives ${hashed.metadata?.name?.length}-character ${hashed.metadata?.name}`,
    );
    expect(hashed.metadata?.name).toBe(hashedAdvertisementName(eip(ns2, longer)));
    expect(hashed.metadata?.name?.length).toBe(253);
    expect(hashed.metadata?.name).toMatch(new RegExp(`^eip-${ns2}-long-y+\\.[0-9a-f]{16}$`));
  });

  it("NAME-1: objects on the seed names that are another owner's (or nobody's) are never changed or deleted; the owners advertise under the hashed form, and move to the seed names once those are free, answered by one node throughout", async () => {
    const ns = await namespace(`nf${suffix}`);
    const [svcName, eipName] = [seedName(slb(ns, 'a-web')), seedName(eip(ns, 'a-db'))];
    expect([svcName, eipName]).toEqual([`slb-${ns}-a-web`, `eip-${ns}-a-db`]);
    // The Service-named one is labelled as another Service's (`nf<suffix>-a/web`, which does not
    // exist, whose seed name it is too); the ElasticIP-named one carries no marks at all.
    const foreignSvc = await createByHand(svcName, OUTSIDE, oldLabels(slb(`${ns}-a`, 'web')));
    const foreignEip = await createByHand(eipName, '198.18.164.2', {});
    const watchSvc = await new AdWatch({ fieldSelector: `metadata.name=${svcName}` }).start();
    const watchEip = await new AdWatch({ fieldSelector: `metadata.name=${eipName}` }).start();

    await loadBalancer(ns, 'a-web');
    await usedElasticIP(ns, 'a-db', nodes[0]);
    const [hashedSvc, hashedEip] = await waitFor(
      async () => {
        const both = [await advertisedFor(slb(ns, 'a-web')), await advertisedFor(eip(ns, 'a-db'))];
        return both.every(Boolean) ? (both as Ad[]) : undefined;
      },
      { what: 'the Service and the ElasticIP advertised beside the objects on their seed names' },
    );
    expect([hashedSvc.metadata?.name, hashedEip.metadata?.name]).toEqual([
      hashedAdvertisementName(slb(ns, 'a-web')),
      hashedAdvertisementName(eip(ns, 'a-db')),
    ]);
    expect(watchSvc.stop()).toEqual([]);
    expect(watchEip.stop()).toEqual([]);
    expect(await getAd(svcName)).toMatchObject({
      metadata: { uid: foreignSvc.metadata?.uid, resourceVersion: foreignSvc.metadata?.resourceVersion },
      spec: { address: OUTSIDE },
    });
    expect(await getAd(eipName)).toMatchObject({
      metadata: { uid: foreignEip.metadata?.uid, resourceVersion: foreignEip.metadata?.resourceVersion },
    });

    // Once the other objects are gone, each moves to its seed name, copy first.
    const watch = await new AdWatch({ labelSelector: `${OWNER_LABELS.namespace}=${ns}` }).start();
    await rest.delete(ARP, undefined, svcName);
    await rest.delete(ARP, undefined, eipName);
    for (const [owner, name, before] of [
      [slb(ns, 'a-web'), svcName, hashedSvc],
      [eip(ns, 'a-db'), eipName, hashedEip],
    ] as const)
      await waitFor(
        async () => (await advertisedFor(owner))?.metadata?.name === name && !(await getAd(before.metadata!.name!)),
        { what: `${owner.kind} ${owner.namespace}/${owner.name} under ${name}, its hashed object gone` },
      );
    const events = watch.stop();
    console.log(
      `arp-names: the moves to the seed names, as watched: ${events.map((e) => `${e.type} ${e.name} (${e.node})`).join('; ')}`,
    );
    for (const before of [hashedSvc, hashedEip]) {
      const answering = answeringNodes(watch.initial, events, before.spec.address);
      expect(answering.length).toBeGreaterThan(0);
      expect(answering.every((n) => n.length === 1 && n[0] === before.spec.nodeName)).toBe(true);
      // The hashed object was deleted once, never changed.
      expect(events.filter((e) => e.uid === before.metadata?.uid).map((e) => e.type)).toEqual(['DELETED']);
    }
  });

  it('NAME-1: after an upgrade, an ARPAdvertisement under the hashed form (as a dashed namespace got before the seed names) moves to the seed name: copy first on its node, then the old one deleted; the address is answered by one node throughout', async () => {
    const ns = await namespace(`nh${suffix}-x`);
    const owner = slb(ns, 'web');
    await loadBalancer(ns, 'web');
    const first = await waitFor(() => advertisedFor(owner), { what: `Service ${ns}/web advertised` });
    expect(first.metadata?.name).toBe(seedName(owner));
    // The cluster as the release before wrote it: the controller stopped, the object under the
    // hashed form (every owner mark, same address and node), none under the seed name.
    await controller.stop();
    await rest.delete(ARP, undefined, seedName(owner), {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid: first.metadata?.uid },
    });
    const old = await createByHand(
      hashedAdvertisementName(owner),
      first.spec.address,
      ownerMetadata(owner),
      first.spec.nodeName,
    );
    const watch = await new AdWatch({ labelSelector: `${OWNER_LABELS.namespace}=${ns}` }).start();
    expect(watch.initial.map((e) => e.name)).toEqual([old.metadata?.name]);
    controller = sweepingController(recorder, 2_000);
    await controller.start();
    const moved = await waitFor(
      async () => {
        const ad = await advertisedFor(owner);
        return ad?.metadata?.name === seedName(owner) && !(await getAd(old.metadata!.name!)) ? ad : undefined;
      },
      { what: `the Service advertised under ${seedName(owner)}, the hashed object gone` },
    );
    const events = watch.stop();
    console.log(`arp-names: the move, as watched: ${events.map((e) => `${e.type} ${e.name} (${e.node})`).join('; ')}`);
    expect(moved.spec).toMatchObject({ address: first.spec.address, nodeName: first.spec.nodeName });
    expect(moved.metadata?.uid).not.toBe(old.metadata?.uid);
    // From the watch's list on, the address was answered by exactly that node after every event.
    const answering = answeringNodes(watch.initial, events, first.spec.address);
    expect(answering.length).toBeGreaterThanOrEqual(2);
    expect(answering.every((n) => n.length === 1 && n[0] === first.spec.nodeName)).toBe(true);
    // The copy came before the delete, and the old object was never changed.
    expect(events.filter((e) => e.uid === old.metadata?.uid).map((e) => e.type)).toEqual(['DELETED']);
    const added = events.findIndex((e) => e.uid === moved.metadata?.uid && e.type === 'ADDED');
    const deleted = events.findIndex((e) => e.uid === old.metadata?.uid && e.type === 'DELETED');
    expect(added).toBeGreaterThanOrEqual(0);
    expect(added).toBeLessThan(deleted);
  });
});
