// NATGateway on the real API server with the whole controller in-process: allocation (NGW-2), the
// gateway node and its ARPAdvertisement (NGW-3, NAME-1), takeover when the node's agent Lease
// expires or it stops matching nodeSelector (NGW-6), the pods it selects (NGW-4), printer columns
// (NGW-8), phases, Events, and deletion that withdraws the address before releasing it.
import { addressClaimName, API_VERSION } from '../../api';
import { parseIPv4 } from '../../api/validation';
import { explain } from '../../runtime/cli/why';
import { ngwAdvertisementName } from '../../runtime/controller/ngw/plan';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import {
  condition,
  createEip,
  createNetwork,
  createPool,
  deleteObject,
  eipIn,
  getClaim,
  listEvents,
} from './eip-harness';
import { createRunningPod, deleteNamespace, kubectl, useNamespace, waitFor } from './fixture';
import {
  createGateway,
  gatewayWhere,
  getGateway,
  getGatewayAd,
  labelNode,
  rest,
  setNodeReady,
  useGatewayFleet,
} from './ngw-harness';
import { watchForChanges } from './quiet-watch';
import { reportNodeState } from './bgp-fixture';

jest.setTimeout(120_000);

const LEASE_MS = 2_000;
const CIDR = '198.18.241.0/28';
const fleet = useGatewayFleet('ngwc', { count: 3, leaseMs: LEASE_MS, firstHost: 201, cidr: CIDR });
const inPool = (address: string | undefined) => {
  const v = parseIPv4(address ?? '') ?? 0;
  return v > parseIPv4('198.18.241.0')! && v < parseIPv4('198.18.241.15')!;
};
const crawlers = { podSelector: { matchLabels: { app: 'crawler' } } };

async function crawlerPods(ns: string): Promise<void> {
  for (const [i, app] of ['crawler', 'crawler', 'web'].entries())
    await createRunningPod({
      namespace: ns,
      name: `${app}-${i}`,
      nodeName: fleet.nodes[i],
      podIP: `10.244.${i}.${20 + i}`,
      labels: { app },
    });
}

describe('NGW-2, NGW-3, NAME-1, NGW-8: one address, one gateway node, one ARPAdvertisement', () => {
  it('NGW-2 NGW-3 NAME-1 NGW-8: Ready with an address of the network, a Ready leased node, the ARPAdvertisement ngw-<namespace>-<name> on it, the selected pods counted, the columns of kubectl get', async () => {
    // A namespace without "-": NAME-1 keeps the readable name.
    const ns = `ngwc${fleet.suffix}`;
    await rest.create(Resources.namespaces, { metadata: { name: ns } });
    try {
      await crawlerPods(ns);
      await createGateway(ns, 'egress', { externalNetwork: fleet.network, ...crawlers });
      const ready = await gatewayWhere(ns, 'egress', 'Ready');
      expect(inPool(ready.status?.address)).toBe(true);
      expect(ready.status).toMatchObject({ addressPool: fleet.pool, selectedPods: 2, contestedPodCount: 0 });
      expect(fleet.nodes).toContain(ready.status?.nodeName);
      expect(condition(ready, 'Allocated')).toMatchObject({ status: 'True', reason: 'AddressAllocated' });
      expect(condition(ready, 'Ready')).toMatchObject({
        status: 'True',
        reason: 'GatewayReady',
        observedGeneration: 1,
      });
      expect(ngwAdvertisementName(ns, 'egress')).toBe(`ngw-${ns}-egress`);
      const ad = await waitFor(() => getGatewayAd(ns, 'egress'), { what: 'the ARPAdvertisement' });
      expect(ad.spec).toEqual({
        externalNetwork: fleet.network,
        address: ready.status?.address,
        nodeName: ready.status?.nodeName,
      });
      expect(ad.metadata.labels).toMatchObject({
        'juneau.loutres.me/owner-kind': 'NATGateway',
        'juneau.loutres.me/owner-namespace': ns,
      });
      const table = (await kubectl(['get', 'natgateway', 'egress'], { namespace: ns })).stdout.trim().split('\n');
      expect(table[0].split(/\s+/)).toEqual(['NAME', 'EXTERNALNETWORK', 'ADDRESS', 'NODE', 'PODS', 'PHASE']);
      expect(table[1].split(/\s+/)).toEqual([
        'egress',
        fleet.network,
        ready.status?.address,
        ready.status?.nodeName,
        '2',
        'Ready',
      ]);
      // `kubectl juneau why <address>`: the holder, its phase and gateway node.
      const why = await explain(rest, 'default', ready.status!.address!);
      console.log(`why ${ready.status?.address}:\n${why}`);
      expect(why).toContain(`address ${ready.status?.address} is held by NATGateway ${ns}/egress`);
      expect(why).toContain(`NATGateway ${ns}/egress: Ready, address ${ready.status?.address}`);
      expect(why).toMatch(new RegExp(`gateway node ${ready.status?.nodeName}: Ready, agent Lease renewed`));
      expect(why).toContain('pods: 2 selected use it; 0 selected use an older NATGateway (NGW-4)');
      const events = await waitFor(
        async () => ((await listEvents(ns)).some((e) => e.reason === 'GatewayReady') ? listEvents(ns) : undefined),
        { what: 'the Ready Event' },
      );
      expect(events.filter((e) => e.regarding?.name === 'egress' && e.reason === 'GatewayReady')).toHaveLength(1);
    } finally {
      await deleteNamespace(ns);
    }
  });
});

describe('NGW-2: allocated like an ElasticIP, never shared', () => {
  const ns = useNamespace();

  it('NGW-2: requestedIP is honoured; one held by an ElasticIP or another NATGateway is reported naming the field and the holder; no two holders share an address', async () => {
    const namespace = ns();
    await createEip(namespace, 'eip', fleet.network, '198.18.241.5');
    await eipIn(namespace, 'eip', 'Available');
    await createGateway(namespace, 'by-eip', { externalNetwork: fleet.network, requestedIP: '198.18.241.5' });
    const held = await gatewayWhere(namespace, 'by-eip', 'Pending');
    expect(condition(held, 'Allocated')).toMatchObject({ status: 'False', reason: 'RequestedIPInUse' });
    expect(condition(held, 'Allocated')?.message).toMatch(
      new RegExp(`spec\\.requestedIP: .*198\\.18\\.241\\.5.*ElasticIP ${namespace}/eip`),
    );
    expect(held.status?.address).toBeUndefined();

    await createGateway(namespace, 'first', { externalNetwork: fleet.network, requestedIP: '198.18.241.6' });
    expect((await gatewayWhere(namespace, 'first', 'Ready')).status?.address).toBe('198.18.241.6');
    await createGateway(namespace, 'second', { externalNetwork: fleet.network, requestedIP: '198.18.241.6' });
    const second = await gatewayWhere(namespace, 'second', 'Pending');
    expect(condition(second, 'Allocated')?.message).toMatch(new RegExp(`NATGateway ${namespace}/first`));

    await createGateway(namespace, 'any', { externalNetwork: fleet.network });
    const any = await gatewayWhere(namespace, 'any', 'Ready');
    expect(inPool(any.status?.address)).toBe(true);
    expect(['198.18.241.5', '198.18.241.6']).not.toContain(any.status?.address);
    const claim = await getClaim(addressClaimName(any.status!.address!));
    expect(claim?.spec.holder).toMatchObject({ kind: 'NATGateway', name: 'any' });
  });

  it('NGW-3, BGP-2, BGP-4, BGP-5: a bgp network: an address and a gateway node, no ARPAdvertisement; Pending saying why until a BGPAdvertisement lists the network and the gateway node reports the address announced, then Ready', async () => {
    const namespace = ns();
    const name = `ngwc-bgp-${fleet.suffix}`;
    await createPool(name, ['198.18.243.0/29'], 'bgp');
    await createNetwork(name, [name], { type: 'bgp' });
    try {
      await createGateway(namespace, 'egress', { externalNetwork: name });
      const pending = await gatewayWhere(
        namespace,
        'egress',
        (g) => condition(g, 'Ready')?.reason === 'NoBGPAdvertisement',
      );
      expect(pending.status?.phase).toBe('Pending');
      expect(condition(pending, 'Allocated')?.status).toBe('True');
      const gateway = pending.status!.nodeName!;
      const address = pending.status!.address!;
      expect(fleet.nodes).toContain(gateway);
      expect(condition(pending, 'Ready')?.message).toContain(`no BGPAdvertisement lists ExternalNetwork ${name}`);
      expect(await getGatewayAd(namespace, 'egress')).toBeUndefined();

      await rest.create(JuneauResources.bgpPeers, {
        apiVersion: API_VERSION,
        kind: 'BGPPeer',
        metadata: { name },
        spec: { peerAddress: '192.0.2.250', peerASN: 65001, myASN: 65000 },
      });
      await rest.create(JuneauResources.bgpAdvertisements, {
        apiVersion: API_VERSION,
        kind: 'BGPAdvertisement',
        metadata: { name },
        spec: { externalNetworks: [name], peers: [name] },
      });
      const notAnnounced = await gatewayWhere(
        namespace,
        'egress',
        (g) => condition(g, 'Ready')?.reason === 'NotAnnounced',
      );
      expect(notAnnounced.status).toMatchObject({ phase: 'Pending', nodeName: gateway });
      expect(condition(notAnnounced, 'Ready')?.message).toContain(
        `node ${gateway}: its agent has written no BGPNodeState`,
      );

      // What the gateway node's agent writes once its BIRD announces the address.
      await reportNodeState(rest, gateway, { peer: name, state: 'Established', announced: [address] });
      const ready = await gatewayWhere(namespace, 'egress', 'Ready');
      expect(condition(ready, 'Ready')?.message).toBe(
        `node ${gateway} is the gateway for ${address} and announces it over BGP (NGW-3, BGP-4)`,
      );
      expect(await getGatewayAd(namespace, 'egress')).toBeUndefined();

      // Deleting it while announced is bgp-withdraw-release.test.ts's (BGP-5).
      await reportNodeState(rest, gateway, { peer: name, state: 'Established', announced: [] });
    } finally {
      await deleteObject(JuneauResources.natGateways, namespace, 'egress');
      await waitFor(async () => (await getGateway(namespace, 'egress')) === undefined, { what: 'NATGateway gone' });
      await deleteObject(JuneauResources.bgpAdvertisements, undefined, name);
      await deleteObject(JuneauResources.bgpPeers, undefined, name);
      for (const node of fleet.nodes) await deleteObject(JuneauResources.bgpNodeStates, undefined, node);
      await deleteObject(JuneauResources.externalNetworks, undefined, name);
      await deleteObject(JuneauResources.addressPools, undefined, name);
    }
  });
});

describe('NGW-3, NGW-6: the gateway node and takeover', () => {
  const ns = useNamespace();

  it("NGW-6 FO-3: the gateway node's agent Lease expires: another node takes over within the Lease expiry plus a second, with one GatewayNodeChanged Event", async () => {
    const namespace = ns();
    await createGateway(namespace, 'egress', { externalNetwork: fleet.network });
    const ready = await gatewayWhere(namespace, 'egress', 'Ready');
    const old = ready.status!.nodeName!;
    await waitFor(async () => (await getGatewayAd(namespace, 'egress'))?.spec.nodeName === old, {
      what: 'ad on the gateway',
    });
    const stoppedAt = Date.now();
    await fleet.leases.get(old)!.stop();
    const moved = await waitFor(
      async () => {
        const ad = await getGatewayAd(namespace, 'egress');
        return ad && ad.spec.nodeName !== old ? ad : undefined;
      },
      { what: 'the ARPAdvertisement moved', intervalMs: 50 },
    );
    const tookMs = Date.now() - stoppedAt;
    console.log(
      `NGW-6: gateway moved ${old} -> ${moved.spec.nodeName} ${tookMs} ms after its agent stopped renewing (lease ${LEASE_MS} ms)`,
    );
    // The last renewal was up to 300 ms before the stop; the statement allows the expiry plus a second.
    expect(tookMs).toBeLessThanOrEqual(LEASE_MS + 1_000);
    const after = await gatewayWhere(namespace, 'egress', (g) => g.status?.nodeName === moved.spec.nodeName);
    expect(after.status?.phase).toBe('Ready');
    const changes = await waitFor(
      async () => {
        const list = (await listEvents(namespace)).filter((e) => e.reason === 'GatewayNodeChanged');
        return list.length ? list : undefined;
      },
      { what: 'the GatewayNodeChanged Event' },
    );
    expect(changes).toHaveLength(1);
    expect(changes[0].note).toMatch(
      new RegExp(`from node ${old} \\(its agent Lease .*\\) to node ${moved.spec.nodeName}; connections .* are lost`),
    );
    fleet.revive(old);
  });

  it('NGW-6 NGW-3: a gateway node that stops matching nodeSelector or is not Ready is left; none left: Degraded naming why, no ARPAdvertisement; a matching node again: Ready', async () => {
    const namespace = ns();
    const [a, b, c] = fleet.nodes;
    await createGateway(namespace, 'egress', {
      externalNetwork: fleet.network,
      nodeSelector: { matchLabels: { 'ngw.test/gateway': 'yes' } },
    });
    const first = (await gatewayWhere(namespace, 'egress', 'Ready')).status!.nodeName!;
    try {
      await labelNode(first, { 'ngw.test/gateway': null });
      const second = (
        await gatewayWhere(namespace, 'egress', (g) => g.status?.phase === 'Ready' && g.status.nodeName !== first)
      ).status!.nodeName!;
      expect((await getGatewayAd(namespace, 'egress'))?.spec.nodeName).toBe(second);
      await setNodeReady(second, false);
      const third = (
        await gatewayWhere(
          namespace,
          'egress',
          (g) => g.status?.phase === 'Ready' && ![first, second].includes(g.status.nodeName ?? ''),
        )
      ).status!.nodeName!;
      expect([a, b, c]).toContain(third);
      await labelNode(third, { 'ngw.test/gateway': null });
      const degraded = await gatewayWhere(namespace, 'egress', 'Degraded');
      expect(degraded.status?.nodeName).toBe('');
      expect(condition(degraded, 'Ready')).toMatchObject({ status: 'False', reason: 'NoGatewayNode' });
      expect(condition(degraded, 'Ready')?.message).toContain(`node ${second}: it is not Ready`);
      expect(condition(degraded, 'Ready')?.message).toContain(`node ${third}: it does not match spec.nodeSelector`);
      await waitFor(async () => (await getGatewayAd(namespace, 'egress')) === undefined, {
        what: 'the ARPAdvertisement withdrawn',
      });
      await labelNode(first, { 'ngw.test/gateway': 'yes' });
      expect((await gatewayWhere(namespace, 'egress', 'Ready')).status?.nodeName).toBe(first);
      // One Event per transition; a repeat of the same Event is counted in its series (EventRecorder).
      const occurrences = async () => {
        const counts: Record<string, number> = {};
        for (const e of (await listEvents(namespace)) as Array<{ reason?: string; series?: { count: number } }>)
          counts[e.reason ?? ''] = (counts[e.reason ?? ''] ?? 0) + (e.series?.count ?? 1);
        return counts;
      };
      const counts = await waitFor(
        async () => {
          const c = await occurrences();
          return c.GatewayReady === 2 && c.NoGatewayNode === 1 ? c : undefined;
        },
        { what: 'Ready, Degraded, Ready Events' },
      );
      expect(counts.GatewayNodeChanged).toBe(2);
    } finally {
      for (const n of fleet.nodes) {
        await labelNode(n, { 'ngw.test/gateway': 'yes' });
        await setNodeReady(n, true);
      }
    }
  });
});

describe('NGW-4: a pod selected by two NATGateways', () => {
  const ns = useNamespace();

  it('NGW-4: the older one serves it; the other names it in status.contestedPods; deleting the older hands the pods over', async () => {
    const namespace = ns();
    await crawlerPods(namespace);
    await createGateway(namespace, 'a-old', { externalNetwork: fleet.network, ...crawlers });
    await gatewayWhere(namespace, 'a-old', 'Ready');
    await createGateway(namespace, 'b-new', { externalNetwork: fleet.network, podSelector: {} });
    const newer = await gatewayWhere(namespace, 'b-new', (g) => g.status?.contestedPodCount === 2);
    expect(newer.status).toMatchObject({
      selectedPods: 1,
      contestedPods: [
        { pod: 'crawler-0', natGateway: 'a-old' },
        { pod: 'crawler-1', natGateway: 'a-old' },
      ],
    });
    expect((await getGateway(namespace, 'a-old'))?.status).toMatchObject({ selectedPods: 2, contestedPodCount: 0 });
    await deleteObject(JuneauResources.natGateways, namespace, 'a-old');
    const alone = await gatewayWhere(namespace, 'b-new', (g) => g.status?.selectedPods === 3);
    expect(alone.status).toMatchObject({ contestedPodCount: 0, contestedPods: [] });
  });
});

describe('NGW deletion', () => {
  const ns = useNamespace();

  it('NGW-2 ARP-6: deleting a NATGateway withdraws its ARPAdvertisement before its address claim is released (by resourceVersion)', async () => {
    const namespace = ns();
    await createGateway(namespace, 'egress', { externalNetwork: fleet.network });
    const address = (await gatewayWhere(namespace, 'egress', 'Ready')).status!.address!;
    const adName = ngwAdvertisementName(namespace, 'egress');
    await waitFor(() => getGatewayAd(namespace, 'egress'), { what: 'the ARPAdvertisement' });
    const ads = await watchForChanges({ type: JuneauResources.arpAdvertisements, name: adName });
    const claims = await watchForChanges({ type: JuneauResources.allocationClaims, name: addressClaimName(address) });
    await deleteObject(JuneauResources.natGateways, namespace, 'egress');
    await waitFor(async () => (await getGateway(namespace, 'egress')) === undefined, { what: 'NATGateway gone' });
    const deletedAt = (changes: readonly string[]) => {
      const line = changes.find((l) => l.startsWith('DELETED'));
      return line ? Number(/resourceVersion (\d+)/.exec(line)?.[1]) : undefined;
    };
    const [adRV, claimRV] = await waitFor(
      () => {
        const pair = [deletedAt(ads.changes), deletedAt(claims.changes)];
        return pair.every((v) => v !== undefined) ? (pair as number[]) : undefined;
      },
      { what: 'both deletions seen' },
    );
    ads.stop();
    claims.stop();
    console.log(
      `NGW deletion: ARPAdvertisement deleted at resourceVersion ${adRV}, claim ${addressClaimName(address)} at ${claimRV}`,
    );
    expect(adRV).toBeLessThan(claimRV);
  });
});
