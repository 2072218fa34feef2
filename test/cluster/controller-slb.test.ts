// The controller in-process against the real control plane: Services -> ServiceLoadBalancers,
// VIPs by claim creation, ARPAdvertisements that follow ready Local backends (SLB-1..10, ARP-6,
// EN-7, ALLOC-1/2). Backends are Pods whose status the test sets; the real EndpointSlice
// controller turns them into EndpointSlices.
import { advertisementName } from '../../runtime/controller/arp/names';
import {
  API_VERSION,
  type ARPAdvertisement,
  type AllocationClaim,
  type ExternalNetwork,
  type ServiceLoadBalancer,
} from '../../api';
import { RestClient, deleteIgnoringNotFound, isNotFound } from '../../runtime/kube/rest';
import { resourcePath, type ResourceType } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { JuneauController } from '../../runtime/controller/controller';
import { RuntimeMetrics } from '../../runtime/kube/metrics';
import {
  createNamespace,
  deleteNamespace,
  deleteNodes,
  createLoadBalancerService,
  createRunningPod,
  deletePodNow,
  ensureNode,
  type EndpointSlice,
  type Service,
  setPodReady,
  testKubeConfig,
  useNamespace,
  waitFor,
  waitForMatch,
} from './fixture';
import { controllerRecorder, sweepingController } from './in-process-controller';
import { reportNodeState } from './bgp-fixture';
import { expectNoChangesFor, watchForChanges } from './quiet-watch';

const rest = new RestClient(testKubeConfig());
const getService = (namespace: string, name: string) => rest.get<Service>(Resources.services, namespace, name);

async function getAs<T>(type: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
  try {
    return (await rest.get<KubeObject>(type, namespace, name)) as unknown as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
const getSlb = (ns: string, name: string) => getAs<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, ns, name);
const getAd = (name: string) => getAs<ARPAdvertisement>(JuneauResources.arpAdvertisements, undefined, name);
const getClaim = (name: string) => getAs<AllocationClaim>(JuneauResources.allocationClaims, undefined, name);
const getNetwork = (name: string) => getAs<ExternalNetwork>(JuneauResources.externalNetworks, undefined, name);
const cond = (slb: ServiceLoadBalancer | undefined, type: string) =>
  slb?.status?.conditions?.find((c) => c.type === type);

async function createPool(name: string, advertiseMode: 'arp' | 'bgp', addresses: string[]) {
  await rest.create(JuneauResources.addressPools, {
    apiVersion: API_VERSION,
    kind: 'AddressPool',
    metadata: { name },
    spec: { advertiseMode, addresses },
  });
}
async function createNetwork(name: string, type: 'arp' | 'bgp', addressPools: string[]) {
  await rest.create(JuneauResources.externalNetworks, {
    apiVersion: API_VERSION,
    kind: 'ExternalNetwork',
    metadata: { name },
    spec: { type, addressPools },
  });
}
const deleteClusterObject = (type: ResourceType, name: string) => deleteIgnoringNotFound(rest, type, undefined, name);
/** The ServiceLoadBalancer once its phase is `phase`. */
const slbInPhase = (namespace: string, name: string, phase: string, what: string) =>
  waitFor(
    async () => {
      const s = await getSlb(namespace, name);
      return s?.status?.phase === phase ? s : undefined;
    },
    { what },
  );
const slbAdName = (namespace: string, name: string) =>
  advertisementName({ kind: 'ServiceLoadBalancer', namespace, name });

/**
 * Every event of some watches, opened now, with its resourceVersion: on one etcd these are
 * revisions of one counter, so they order writes to different objects. `first` throws when no
 * event matches, naming what was seen.
 */
async function revisionLog(sources: Array<{ type: ResourceType; namespace?: string }>) {
  const events: Array<{ kind: string; name: string; revision: number; object: KubeObject }> = [];
  const handles = await Promise.all(
    sources.map(async ({ type, namespace }) => {
      const list = await rest.list<KubeObject>(type, { namespace });
      return rest.watch<KubeObject>(
        resourcePath(type, namespace),
        { resourceVersion: list.metadata?.resourceVersion },
        (e) => {
          if (e.type === 'ERROR') throw new Error(`watch of ${type.kind}: ${JSON.stringify(e.object)}`);
          if (e.type === 'BOOKMARK') return;
          events.push({
            kind: type.kind,
            name: e.object.metadata?.name ?? '',
            revision: Number(e.object.metadata?.resourceVersion),
            object: e.object,
          });
        },
      );
    }),
  );
  return {
    first(match: (e: (typeof events)[number]) => boolean): number {
      const hits = events.filter(match).map((e) => e.revision);
      if (!hits.length)
        throw new Error(
          `no matching event among: ${events.map((e) => `${e.kind}/${e.name}@${e.revision}`).join(', ')}`,
        );
      return Math.min(...hits);
    },
    stop: () => handles.forEach((h) => h.abort()),
  };
}

// Addresses from 198.18.0.0/15 (benchmarking range), a distinct /24 per purpose, so nothing here
// collides with other test files' pools.
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `ctl-arp-${suffix}`;
const BGP_POOL = `ctl-bgp-${suffix}`;
const NET = `ctl-public-${suffix}`;
const BGP_NET = `ctl-bgp-${suffix}`;
const BGP_PEER = `ctl-tor-${suffix}`;
const BGP_ADV = `ctl-adv-${suffix}`;
const nodes = [1, 2, 3].map((i) => `ctl-${suffix}-n${i}`);
const ports = [{ name: 'http', containerPort: 8080 }];
/** A ready backend `<app>-<n>` of the Service `<app>` (port http 8080). */
const createBackend = (namespace: string, name: string, nodeName: string, podIP: string) =>
  createRunningPod({ namespace, name, labels: { app: name.replace(/-\d+$/, '') }, nodeName, podIP, ports });

const writeNodeState = (node: string, state: string, announced: string[]) =>
  reportNodeState(rest, node, { peer: BGP_PEER, state, announced });

let controller: JuneauController;
const recorder = controllerRecorder(rest, 'test');
const newController = () => sweepingController(recorder, 2_000);
async function eventReasons(namespace: string): Promise<Array<{ type?: string; reason?: string; note?: string }>> {
  const list = await rest.list<KubeObject & { type?: string; reason?: string; note?: string }>(Resources.events, {
    namespace,
  });
  return list.items;
}

beforeAll(async () => {
  await Promise.all(nodes.map((n, i) => ensureNode(n, { internalIP: `192.0.2.${101 + i}` })));
  await createPool(POOL, 'arp', ['198.18.77.0/29']);
  await createPool(BGP_POOL, 'bgp', ['198.18.78.0/29']);
  await createNetwork(NET, 'arp', [POOL]);
  await createNetwork(BGP_NET, 'bgp', [BGP_POOL]);
  controller = newController();
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  await deleteNodes(nodes);
});

describe('ExternalNetwork (EN-7)', () => {
  it('EN-7: gets status.networkID from subnet-vni once, backed by a claim it owns; subnet-vni is created with the default range', async () => {
    const network = await waitForMatch(
      () => getNetwork(NET),
      (n) => n?.status?.networkID,
      'networkID',
    );
    const id = network.status!.networkID!;
    expect(id).toBeGreaterThanOrEqual(4096);
    const claim = await getClaim(`subnet-vni.${id}`);
    expect(claim?.spec.holder).toMatchObject({ kind: 'ExternalNetwork', name: NET });
    expect(claim?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ExternalNetwork', name: NET });
    const pool = await getAs<{ spec: { start: number; end: number } }>(
      JuneauResources.allocationPools,
      undefined,
      'subnet-vni',
    );
    expect(pool?.spec).toEqual({ start: 4096, end: 16777215 });
    expect(network.status?.conditions?.find((c) => c.type === 'NetworkIDAssigned')).toMatchObject({
      status: 'True',
      observedGeneration: 1,
    });
  });

  it('AP-3: AddressPool status shows size, used and its network', async () => {
    type Pool = { status?: { size?: number; used?: number; externalNetwork?: string } };
    const getPool = () => getAs<Pool>(JuneauResources.addressPools, undefined, POOL);
    const claimsOfPool = async () =>
      (await rest.list<AllocationClaim & KubeObject>(JuneauResources.allocationClaims)).items.filter(
        (c) => c.spec.pool.kind === 'AddressPool' && c.spec.pool.name === POOL,
      ).length;
    const pool = await waitFor(
      async () => ((await getPool())?.status?.externalNetwork === NET ? getPool() : undefined),
      {
        what: 'pool status',
      },
    );
    expect(pool?.status?.size).toBe(6); // a /29 less its network and broadcast addresses (ADDR-2)
    expect(pool?.status?.used).toBe(await claimsOfPool());
    // One more address taken: `used` follows, and equals the claims counted independently.
    const namespace = await createNamespace('ap3');
    try {
      await createLoadBalancerService(namespace, 'ap3', { network: NET });
      const before = pool?.status?.used ?? 0;
      const after = await waitForMatch(getPool, (p) => (p?.status?.used ?? 0) > before, 'used counts the new VIP');
      const claims = await claimsOfPool();
      console.log(
        `controller-slb: AP-3 pool ${POOL} size ${after.status?.size}, used ${after.status?.used}, claims ${claims}`,
      );
      expect(after.status?.used).toBe(claims);
      expect(after.status?.used).toBe(before + 1);
    } finally {
      await deleteNamespace(namespace);
    }
  });
});

describe('ServiceLoadBalancer (SLB-1..10, ARP-6)', () => {
  const ns = useNamespace();

  it('SLB-1/3/4/6/7/8, ARP-6: VIP, EXTERNAL-IP, ARPAdvertisement that moves only its node, Degraded without backends, released on delete', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'web', { network: NET });
    // SLB-3: no backend yet -> Allocated.
    const allocated = await slbInPhase(namespace, 'web', 'Allocated', 'phase Allocated');
    const vip = allocated.status!.vip!;
    expect(vip).toMatch(/^198\.18\.77\.[0-7]$/);
    expect(allocated.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Service', name: 'web', controller: true });
    expect(allocated.metadata.finalizers).toContain('juneau.loutres.me/service-load-balancer');
    expect(cond(allocated, 'Available')).toMatchObject({ status: 'False', reason: 'NoReadyBackends' });
    expect((await getClaim(`ipv4.${vip}`))?.spec.holder).toMatchObject({
      kind: 'ServiceLoadBalancer',
      namespace,
      name: 'web',
      uid: allocated.metadata.uid,
    });
    expect(await getAd(slbAdName(namespace, 'web'))).toBeUndefined();

    // Backends on two nodes -> Ready, ARPAdvertisement on one of them.
    await createBackend(namespace, 'web-1', nodes[0], '10.244.1.10');
    await createBackend(namespace, 'web-2', nodes[1], '10.244.2.10');
    const ready = await waitForMatch(
      () => getSlb(namespace, 'web'),
      (s) => s?.status?.phase === 'Ready' && s.status.advertisingNodes?.length === 2,
      'phase Ready with two advertising nodes',
    );
    expect(ready.status).toMatchObject({
      vip,
      addressPool: POOL,
      advertisingNodes: [nodes[0], nodes[1]].sort(),
      backendSummary: { totalReady: 2, localReadyNodes: 2 },
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    });
    const ad = await waitFor(() => getAd(slbAdName(namespace, 'web')), {
      what: 'ARPAdvertisement',
    });
    expect(ad.spec).toMatchObject({ externalNetwork: NET, address: vip });
    expect([nodes[0], nodes[1]]).toContain(ad.spec.nodeName);
    expect(ready.status?.arpAnnouncingNode).toBe(ad.spec.nodeName);
    const svc = await getService(namespace, 'web');
    expect(svc.status?.loadBalancer?.ingress?.map((i) => i.ip)).toEqual([vip]);

    // SLB-7: a new backend node does not move it: watched from before the new backend until the
    // status shows the pass that saw it (three advertising nodes).
    const stays = await watchForChanges<ARPAdvertisement>({
      type: JuneauResources.arpAdvertisements,
      name: slbAdName(namespace, 'web'),
      project: (a) => a.spec.nodeName,
      what: 'the ARPAdvertisement node',
    });
    await createBackend(namespace, 'web-3', nodes[2], '10.244.3.10');
    await waitFor(async () => (await getSlb(namespace, 'web'))?.status?.advertisingNodes?.length === 3, {
      what: 'three advertising nodes',
    });
    stays.expectNoChange();
    expect((await getAd(slbAdName(namespace, 'web')))?.spec.nodeName).toBe(ad.spec.nodeName);

    // SLB-7: the chosen node's backend goes unready -> only spec.nodeName changes.
    const chosenPod = ad.spec.nodeName === nodes[0] ? 'web-1' : 'web-2';
    await setPodReady(namespace, chosenPod, false);
    const moved = await waitForMatch(
      () => getAd(slbAdName(namespace, 'web')),
      (a) => a && a.spec.nodeName !== ad.spec.nodeName,
      'ARPAdvertisement moved',
    );
    expect(moved.metadata.uid).toBe(ad.metadata.uid);
    expect(moved.spec).toMatchObject({ address: vip, externalNetwork: NET });
    expect(moved.spec.nodeName).not.toBe(ad.spec.nodeName);
    await waitFor(async () => (await getSlb(namespace, 'web'))?.status?.arpAnnouncingNode === moved.spec.nodeName, {
      what: 'status follows',
    });

    // SLB-8: all backends gone -> ARPAdvertisement deleted, Degraded.
    await Promise.all(['web-1', 'web-2', 'web-3'].map((p) => deletePodNow(namespace, p)));
    const degraded = await slbInPhase(namespace, 'web', 'Degraded', 'phase Degraded');
    expect(degraded.status).toMatchObject({ vip, advertisingNodes: [], arpAnnouncingNode: '' });
    expect(cond(degraded, 'Available')).toMatchObject({ status: 'False', reason: 'NoReadyBackends' });
    await waitFor(async () => (await getAd(slbAdName(namespace, 'web'))) === undefined, {
      what: 'ARPAdvertisement deleted',
    });

    // ARP-6: deleting the Service removes the SLB, its claim and its ARPAdvertisement.
    await createBackend(namespace, 'web-4', nodes[0], '10.244.1.11');
    await waitFor(() => getAd(slbAdName(namespace, 'web')), {
      what: 'ARPAdvertisement again',
    });
    await rest.delete(Resources.services, namespace, 'web');
    await waitFor(async () => (await getSlb(namespace, 'web')) === undefined, { what: 'SLB gone', timeoutMs: 45_000 });
    expect(await getClaim(`ipv4.${vip}`)).toBeUndefined();
    expect(await getAd(slbAdName(namespace, 'web'))).toBeUndefined();
  });

  it('SLB-3, BGP-5: a new VIP is in the Service ingress (what kube-proxy serves) before any ARPAdvertisement or advertisingNodes names it', async () => {
    const namespace = ns();
    // The network is created last, once the backend is in the Service's EndpointSlice, so the
    // pass that allocates the VIP also chooses its node: the order of that pass's writes is what
    // is read here.
    const lateNet = `ctl-late-${suffix}`;
    await createPool(lateNet, 'arp', ['198.18.83.0/29']);
    await createBackend(namespace, 'first-1', nodes[0], '10.244.1.20');
    await createLoadBalancerService(namespace, 'first', { network: lateNet });
    await waitFor(
      async () => {
        const slices = await rest.list<EndpointSlice>(Resources.endpointSlices, {
          namespace,
          labelSelector: 'kubernetes.io/service-name=first',
        });
        return slices.items.some((sl) => sl.endpoints?.some((e) => e.conditions?.ready)) || undefined;
      },
      { what: 'the ready backend in the EndpointSlice' },
    );
    expect((await getSlb(namespace, 'first'))?.status?.vip).toBeUndefined();
    const log = await revisionLog([
      { type: Resources.services, namespace },
      { type: JuneauResources.serviceLoadBalancers, namespace },
      { type: JuneauResources.arpAdvertisements },
    ]);
    await createNetwork(lateNet, 'arp', [lateNet]);
    const ready = await slbInPhase(namespace, 'first', 'Ready', 'phase Ready');
    const vip = ready.status!.vip!;
    const adName = slbAdName(namespace, 'first');
    const ingressAt = log.first(
      (e) =>
        e.kind === 'Service' && (e.object as Service).status?.loadBalancer?.ingress?.some((i) => i.ip === vip) === true,
    );
    const advertisedAt = log.first((e) => e.kind === 'ARPAdvertisement' && e.name === adName);
    const namedAt = log.first(
      (e) =>
        e.kind === 'ServiceLoadBalancer' &&
        ((e.object as ServiceLoadBalancer).status?.advertisingNodes?.length ?? 0) > 0,
    );
    log.stop();
    // resourceVersions are etcd revisions here: one counter for every write to the store.
    expect(ingressAt).toBeLessThan(advertisedAt);
    expect(ingressAt).toBeLessThan(namedAt);
  });

  it('SLB-3, ARP-6: a ServiceLoadBalancer deleted while its Service lives (kubectl delete): the ingress (what kube-proxy serves) is emptied before the claim is released to the next holder', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'leaving', { network: NET });
    const first = await slbInPhase(namespace, 'leaving', 'Allocated', 'phase Allocated');
    const vip = first.status!.vip!;
    const ingressOf = (s: Service) => (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip);
    await waitFor(async () => ingressOf(await getService(namespace, 'leaving')).includes(vip), {
      what: 'the VIP in the ingress',
    });
    const log = await revisionLog([
      { type: Resources.services, namespace },
      { type: JuneauResources.allocationClaims },
    ]);
    await rest.delete(JuneauResources.serviceLoadBalancers, namespace, 'leaving');
    // The Service is still a Juneau LoadBalancer: a new ServiceLoadBalancer follows the old one.
    await waitForMatch(
      () => getSlb(namespace, 'leaving'),
      (s) => s.metadata.uid !== first.metadata.uid && s.status?.phase === 'Allocated',
      'a new ServiceLoadBalancer Allocated',
    );
    const clearedAt = log.first((e) => e.kind === 'Service' && ingressOf(e.object as Service).length === 0);
    const releasedAt = log.first((e) => e.kind === 'AllocationClaim' && e.name === `ipv4.${vip}`);
    log.stop();
    expect(clearedAt).toBeLessThan(releasedAt);
  });

  it('SLB-2: a requested IP outside the pools -> Error, no VIP, the condition names the annotation', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'req', { network: NET, requestedIP: '203.0.113.7' });
    const slb = await slbInPhase(namespace, 'req', 'Error', 'phase Error');
    expect(slb.status?.vip).toBeUndefined();
    expect(cond(slb, 'Allocated')).toMatchObject({ status: 'False', reason: 'RequestedIPNotInPool' });
    expect(cond(slb, 'Allocated')?.message).toContain(
      'metadata.annotations["juneau.loutres.me/load-balancer-requested-ip"]: "203.0.113.7"',
    );
    expect(await getClaim('ipv4.203.0.113.7')).toBeUndefined();
  });

  it('SLB-2: a requested IP inside the pool gets exactly that address; a second Service asking for it is told who holds it', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'a', { network: NET, requestedIP: '198.18.77.6' });
    await waitFor(async () => (await getSlb(namespace, 'a'))?.status?.vip === '198.18.77.6', { what: 'requested VIP' });
    await createLoadBalancerService(namespace, 'b', { network: NET, requestedIP: '198.18.77.6' });
    const b = await slbInPhase(namespace, 'b', 'Pending', 'b Pending');
    expect(cond(b, 'Allocated')).toMatchObject({ status: 'False', reason: 'RequestedIPInUse' });
    expect(cond(b, 'Allocated')?.message).toContain(`ServiceLoadBalancer ${namespace}/a`);
  });

  it.each([
    ['externalTrafficPolicy Cluster', { externalTrafficPolicy: 'Cluster' as const }, 'ExternalTrafficPolicyNotLocal'],
    ['an SCTP port', { ports: [{ name: 'x', port: 9, protocol: 'SCTP' }] }, 'UnsupportedProtocol'],
    // The test API server is dual-stack (harness SERVICE_CLUSTER_IP_RANGE), so the Service exists
    // with an IPv6 cluster IP and the controller's own check is what refuses it.
    ['IPv6-only', { ipFamilies: ['IPv6'] }, 'IPv4Required'],
  ])('SLB-10: %s -> Error with a clear condition and a Warning Event, no VIP', async (_t, options, reason) => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'odd', { network: NET, ...options });
    if ('ipFamilies' in options) {
      const svc = await getService(namespace, 'odd');
      expect(svc.spec?.ipFamilies).toEqual(['IPv6']);
      expect(svc.spec?.clusterIP).toContain(':');
    }
    const slb = await slbInPhase(namespace, 'odd', 'Error', 'phase Error');
    expect(slb.status?.vip).toBeUndefined();
    expect(cond(slb, 'Allocated')).toMatchObject({ status: 'False', reason });
    const events = await waitFor(
      async () => {
        const e = (await eventReasons(namespace)).filter((x) => x.reason === reason);
        return e.length ? e : undefined;
      },
      { what: `Event ${reason}` },
    );
    expect(events[0]).toMatchObject({ type: 'Warning', note: expect.stringContaining('SLB-10') });
    const svc = await getService(namespace, 'odd');
    expect(svc.status?.loadBalancer?.ingress ?? []).toEqual([]);
  });

  it('SLB-10: a dual-stack Service (IPv6 first) gets an IPv4 VIP, and only that address is published', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'dual', { network: NET, ipFamilies: ['IPv6', 'IPv4'] });
    const svc = await getService(namespace, 'dual');
    expect(svc.spec?.clusterIPs?.map((ip) => ip.includes(':'))).toEqual([true, false]);
    const slb = await waitForMatch(
      () => getSlb(namespace, 'dual'),
      (s) => s?.status?.vip,
      'a VIP',
    );
    expect(slb.status?.vip).toMatch(/^198\.18\.77\.\d+$/);
    expect(cond(slb, 'Allocated')).toMatchObject({ status: 'True' });
    const published = await waitFor(async () => (await getService(namespace, 'dual')).status?.loadBalancer?.ingress, {
      what: 'status.loadBalancer.ingress',
    });
    expect(published.map((i) => i.ip)).toEqual([slb.status?.vip]);
  });

  // BGP-5 changed this test on purpose: a bgp VIP used to reach Ready with nobody announcing it
  // (the silent half-working VIP SLB-10 forbids); now Ready waits for a node's report.
  it('SLB-5, BGP-2, BGP-5: a bgp VIP gets advertisingNodes and no ARPAdvertisement; Ready only once a node reports it announced over an Established session', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'bgp', { network: BGP_NET });
    await createBackend(namespace, 'bgp-1', nodes[2], '10.244.3.20');
    const alone = await waitForMatch(
      () => getSlb(namespace, 'bgp'),
      (s) => cond(s, 'Available')?.reason === 'NoBGPAdvertisement',
      'NoBGPAdvertisement',
    );
    expect(alone.status?.phase).toBe('Allocated');
    expect(cond(alone, 'Available')?.message).toContain(`no BGPAdvertisement lists ExternalNetwork ${BGP_NET}`);
    const vip = alone.status!.vip!;
    expect(vip).toMatch(/^198\.18\.78\./);
    expect(await getAd(slbAdName(namespace, 'bgp'))).toBeUndefined();

    await rest.create(JuneauResources.bgpPeers, {
      apiVersion: API_VERSION,
      kind: 'BGPPeer',
      metadata: { name: BGP_PEER },
      spec: { peerAddress: '192.0.2.250', peerASN: 65001, myASN: 65000 },
    });
    await rest.create(JuneauResources.bgpAdvertisements, {
      apiVersion: API_VERSION,
      kind: 'BGPAdvertisement',
      metadata: { name: BGP_ADV },
      spec: { externalNetworks: [BGP_NET], peers: [BGP_PEER] },
    });
    const waiting = await waitForMatch(
      () => getSlb(namespace, 'bgp'),
      (s) => cond(s, 'Available')?.reason === 'NotAnnounced',
      'NotAnnounced',
    );
    expect(waiting.status).toMatchObject({ phase: 'Allocated', advertisingNodes: [nodes[2]], arpAnnouncingNode: '' });
    expect(cond(waiting, 'Available')?.message).toContain(`node ${nodes[2]}: its agent has written no BGPNodeState`);

    // What the node's agent writes: its BGPNodeState, the session Established and the VIP announced.
    await writeNodeState(nodes[2], 'Established', [vip]);
    const ready = await slbInPhase(namespace, 'bgp', 'Ready', 'bgp Ready');
    expect(cond(ready, 'Available')).toMatchObject({ status: 'True', reason: 'Advertised' });
    expect(cond(ready, 'Available')?.message).toContain(`VIP ${vip} announced over BGP by 1 of 1 node(s): ${nodes[2]}`);

    // The session goes down: nobody announces the VIP any more.
    await writeNodeState(nodes[2], 'Active', []);
    const degraded = await slbInPhase(namespace, 'bgp', 'Degraded', 'bgp Degraded');
    expect(cond(degraded, 'Available')?.message).toContain(
      `no Established session to an allowed BGPPeer: ${BGP_PEER} Active`,
    );
    const events = (await eventReasons(namespace)).map((e) => e.reason);
    expect(events).toEqual(expect.arrayContaining(['Advertised', 'NotAnnounced']));
  });

  it('ALLOC-1: a restarted controller rebuilds the index from the claims and changes nothing', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'keep', { network: NET });
    await createBackend(namespace, 'keep-1', nodes[1], '10.244.2.30');
    const before = await slbInPhase(namespace, 'keep', 'Ready', 'Ready');
    const adBefore = await waitFor(() => getAd(slbAdName(namespace, 'keep')), { what: 'ad' });
    // Watched from before the stop: any write to the SLB, its ARPAdvertisement or its claim during
    // the restart and the 3 s after it fails the test.
    const quiet = await Promise.all([
      watchForChanges({ type: JuneauResources.serviceLoadBalancers, namespace, name: 'keep' }),
      watchForChanges({ type: JuneauResources.arpAdvertisements, name: adBefore.metadata.name! }),
      watchForChanges({ type: JuneauResources.allocationClaims, name: `ipv4.${before.status!.vip}` }),
    ]);
    await controller.stop();
    const metrics = new RuntimeMetrics({ processMetrics: false });
    controller = new JuneauController({
      rest: new RestClient(testKubeConfig()),
      recorder,
      sweepGraceMs: 2_000,
      sweepIntervalMs: 2_000,
      metrics,
    });
    await controller.start();
    // The sign that the restarted controller's passes ran inside the window: its ServiceLoadBalancer
    // queue, which held every Service of the first list ('keep' among them), counted passes and drained.
    const passes = async () =>
      (await metrics.reconcileTotal.get()).values
        .filter((v) => v.labels.controller === 'serviceloadbalancer')
        .reduce((n, v) => n + v.value, 0);
    const depth = async () =>
      (await metrics.queueDepth.get()).values.find((v) => v.labels.queue === 'serviceloadbalancer')?.value;
    await waitFor(async () => (await passes()) > 0 && (await depth()) === 0, {
      what: 'the restarted controller reconciled every Service it listed',
    });
    console.log(`controller-slb: ALLOC-1 restart, ${await passes()} ServiceLoadBalancer passes inside the window`);
    await expectNoChangesFor(3_000, ...quiet);
    // A new Service does not get the VIP already taken.
    await createLoadBalancerService(namespace, 'fresh', { network: NET });
    const fresh = await waitFor(async () => (await getSlb(namespace, 'fresh'))?.status?.vip, { what: 'fresh VIP' });
    expect(fresh).not.toBe(before.status?.vip);
  });

  it('ALLOC-2: a claim whose holder is gone is released by the sweep; a claim whose holder exists is kept', async () => {
    const namespace = ns();
    // A pool of its own, so the orphan's address is certainly free: its creation must succeed.
    const pool = `ctl-orphan-${suffix}`;
    await createPool(pool, 'arp', ['198.18.79.0/30']);
    try {
      // A live holder's claim, older than the orphan and watched until the orphan is gone: the
      // sweep that releases the orphan has looked at it too, and must leave it alone.
      await createLoadBalancerService(namespace, 'held', { network: NET });
      const held = await waitFor(async () => (await getSlb(namespace, 'held'))?.status?.vip, { what: 'held VIP' });
      const kept = await watchForChanges({ type: JuneauResources.allocationClaims, name: `ipv4.${held}` });
      try {
        const name = 'ipv4.198.18.79.1';
        const created = await rest.create(JuneauResources.allocationClaims, {
          apiVersion: API_VERSION,
          kind: 'AllocationClaim',
          metadata: { name },
          spec: {
            pool: { kind: 'AddressPool', name: pool },
            value: '198.18.79.1',
            holder: { kind: 'ServiceLoadBalancer', namespace: 'nowhere', name: 'gone', uid: 'x' },
          },
        });
        expect(created.metadata?.name).toBe(name);
        await waitFor(async () => (await getClaim(name)) === undefined, { what: 'orphan released', timeoutMs: 20_000 });
      } catch (err) {
        kept.stop();
        throw err;
      }
      kept.expectNoChange();
    } finally {
      await deleteClusterObject(JuneauResources.addressPools, pool);
    }
  });
});

afterAll(async () => {
  await deleteClusterObject(JuneauResources.externalNetworks, NET);
  await deleteClusterObject(JuneauResources.bgpAdvertisements, BGP_ADV);
  await deleteClusterObject(JuneauResources.bgpPeers, BGP_PEER);
  for (const n of nodes) await deleteClusterObject(JuneauResources.bgpNodeStates, n);
  await deleteClusterObject(JuneauResources.externalNetworks, BGP_NET);
  await deleteClusterObject(JuneauResources.addressPools, POOL);
  await deleteClusterObject(JuneauResources.addressPools, BGP_POOL);
});
