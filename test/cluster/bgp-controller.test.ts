// The controller's BGP side on the real API server, with the nodes' BGPNodeStates written by the
// test as each node's agent would: BGPPeer status counts the Established nodes (BGP-7, `kubectl get
// bgppeer`), a bgp ExternalNetwork says whether a BGPAdvertisement lists it (BGP-2), and a Service
// with externalTrafficPolicy Cluster on a bgp network is announced by every node with a live agent
// that the BGPAdvertisement allows (BGP-3), Ready only while one reports it (BGP-5).
import { API_VERSION, INSTALL, type BGPPeer, type ExternalNetwork, type ServiceLoadBalancer } from '../../api';
import { AgentLease } from '../../runtime/agent/liveness/lease';
import type { JuneauController } from '../../runtime/controller/controller';
import { JuneauResources, Resources, type ResourceType } from '../../runtime/kube/resources';
import { deleteIgnoringNotFound, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import {
  createLoadBalancerService,
  deleteNodes,
  ensureNode,
  kubectl,
  testKubeConfig,
  useNamespace,
  waitForMatch,
} from './fixture';
import { controllerRecorder, sweepingController } from './in-process-controller';
import { reportNodeState } from './bgp-fixture';

const rest = new RestClient(testKubeConfig());
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `bgpc-${suffix}`;
const NET = `bgpc-${suffix}`;
const PEER = `bgpc-tor-${suffix}`;
const ADV = `bgpc-adv-${suffix}`;
const nodes = [1, 2, 3].map((i) => `bgpc-${suffix}-n${i}`);
const racks = ['a', 'a', 'b'];
const LEASE_MS = 3_000;
const leases = new Map(
  nodes.map((n) => [
    n,
    new AgentLease({
      rest,
      namespace: INSTALL.namespace,
      nodeName: n,
      leaseDurationMs: LEASE_MS,
      renewIntervalMs: 300,
    }),
  ]),
);
const get = <T>(type: ResourceType, name: string, namespace?: string) =>
  rest.get<KubeObject>(type, namespace, name) as unknown as Promise<T>;
const create = (type: ResourceType, kind: string, name: string, spec: object) =>
  rest.create(type, { apiVersion: API_VERSION, kind, metadata: { name }, spec });
const cond = (
  o: { status?: { conditions?: Array<{ type: string; reason: string; message: string }> } },
  type: string,
) => o.status?.conditions?.find((c) => c.type === type);

const report = (node: string, state: string, announced: string[] = [], lastError?: string) =>
  reportNodeState(rest, node, { peer: PEER, state, announced, lastError });

let controller: JuneauController;
const recorder = controllerRecorder(rest, 'bgp');

beforeAll(async () => {
  await Promise.all(
    nodes.map((n, i) => ensureNode(n, { internalIP: `192.0.2.${121 + i}`, labels: { rack: racks[i] } })),
  );
  for (const l of leases.values()) l.start();
  await create(JuneauResources.addressPools, 'AddressPool', POOL, {
    advertiseMode: 'bgp',
    addresses: ['198.18.79.0/29'],
  });
  await create(JuneauResources.externalNetworks, 'ExternalNetwork', NET, { type: 'bgp', addressPools: [POOL] });
  await create(JuneauResources.bgpPeers, 'BGPPeer', PEER, { peerAddress: '192.0.2.254', peerASN: 65001, myASN: 65000 });
  controller = sweepingController(recorder, 60_000);
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  for (const l of leases.values()) await l.stop();
  for (const n of nodes) {
    await deleteIgnoringNotFound(rest, JuneauResources.bgpNodeStates, undefined, n);
    await deleteIgnoringNotFound(rest, Resources.leases, INSTALL.namespace, `juneau-agent-${n}`);
  }
  await deleteNodes(nodes);
  for (const [type, name] of [
    [JuneauResources.bgpAdvertisements, ADV],
    [JuneauResources.bgpPeers, PEER],
    [JuneauResources.externalNetworks, NET],
    [JuneauResources.addressPools, POOL],
  ] as const)
    await deleteIgnoringNotFound(rest, type, undefined, name);
});

describe('BGP-2: a bgp ExternalNetwork says whether a BGPAdvertisement lists it', () => {
  test('BGP-2: NoBGPAdvertisement until one lists it, then ListedByBGPAdvertisement naming it', async () => {
    const bare = await waitForMatch(
      () => get<ExternalNetwork>(JuneauResources.externalNetworks, NET),
      (n) => cond(n, 'Advertised')?.reason === 'NoBGPAdvertisement',
      'NoBGPAdvertisement',
    );
    expect(cond(bare, 'Advertised')?.message).toContain(`no BGPAdvertisement lists ExternalNetwork ${NET}`);
    // Only the nodes of rack a may announce (BGP-3).
    await create(JuneauResources.bgpAdvertisements, 'BGPAdvertisement', ADV, {
      externalNetworks: [NET],
      nodeSelector: { matchLabels: { rack: 'a' } },
    });
    const listed = await waitForMatch(
      () => get<ExternalNetwork>(JuneauResources.externalNetworks, NET),
      (n) => cond(n, 'Advertised')?.reason === 'ListedByBGPAdvertisement',
      'ListedByBGPAdvertisement',
    );
    expect(cond(listed, 'Advertised')?.message).toContain(`BGPAdvertisement ${ADV}`);
  });
});

describe("BGP-7: BGPPeer status aggregates the nodes' reports", () => {
  test('BGP-7: nodes and established counted, the node that is down named with its error, kubectl get bgppeer shows them; an Event per change', async () => {
    const start = performance.now();
    await report(nodes[0], 'Established');
    await report(nodes[1], 'Established');
    await report(nodes[2], 'Active', [], 'Hold timer expired');
    const down = await waitForMatch(
      () => get<BGPPeer>(JuneauResources.bgpPeers, PEER),
      (p) => p.status?.nodes === 3 && p.status.established === 2,
      'nodes 3, established 2',
    );
    console.log(`BGP-7: BGPPeer status aggregated ${Math.round(performance.now() - start)} ms after the third report`);
    expect(cond(down, 'SessionsEstablished')).toMatchObject({ status: 'False', reason: 'SessionsDown' });
    expect(cond(down, 'SessionsEstablished')?.message).toContain(
      `not Established: ${nodes[2]} Active (Hold timer expired)`,
    );
    const { stdout } = await kubectl(['get', 'bgppeer', PEER]);
    const [header, row] = stdout.trim().split('\n');
    expect(header.split(/\s+/)).toEqual(['NAME', 'ADDRESS', 'PEERASN', 'MYASN', 'NODES', 'ESTABLISHED', 'AGE']);
    expect(row.split(/\s+/).slice(0, 6)).toEqual([PEER, '192.0.2.254', '65001', '65000', '3', '2']);

    await report(nodes[2], 'Established');
    const up = await waitForMatch(
      () => get<BGPPeer>(JuneauResources.bgpPeers, PEER),
      (p) => p.status?.established === 3,
      'established 3',
    );
    expect(cond(up, 'SessionsEstablished')).toMatchObject({ status: 'True', reason: 'AllEstablished' });
    const events = await waitForMatch(
      async () =>
        (
          await rest.list<KubeObject & { reason?: string; regarding?: { name?: string } }>(Resources.events)
        ).items.filter((e) => e.regarding?.name === PEER),
      (e) => e.some((x) => x.reason === 'AllEstablished'),
      'the AllEstablished Event',
    );
    // One Event per change of the condition: NoSessions at creation, SessionsDown, AllEstablished.
    expect(events.map((e) => e.reason).sort()).toEqual(['AllEstablished', 'NoSessions', 'SessionsDown']);
  });
});

describe('BGP-3, BGP-5: externalTrafficPolicy Cluster on a bgp network', () => {
  const ns = useNamespace();

  test('BGP-3: every allowed node with a live agent is in advertisingNodes; Ready once one reports the VIP; its agent dead, it leaves and the VIP is Degraded', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'web', { network: NET, externalTrafficPolicy: 'Cluster' });
    const slb = await waitForMatch(
      () => get<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, 'web', namespace),
      (s) => s.status?.vip && s.status.advertisingNodes?.length === 2,
      'advertisingNodes of rack a',
    );
    // No endpoint at all: under Cluster the nodes of rack a announce; rack b is left out by the BGPAdvertisement.
    expect(slb.status?.advertisingNodes).toEqual([nodes[0], nodes[1]]);
    expect(slb.status?.phase).toBe('Allocated');
    const vip = slb.status!.vip!;

    await report(nodes[0], 'Established', [vip]);
    const ready = await waitForMatch(
      () => get<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, 'web', namespace),
      (s) => s.status?.phase === 'Ready',
      'Ready',
    );
    expect(cond(ready, 'Available')?.message).toContain(`announced over BGP by 1 of 2 node(s): ${nodes[0]}`);

    // FO-3: node 1's agent dies; once its Lease expires it leaves advertisingNodes, and node 2 does not announce.
    await leases.get(nodes[0])!.stop();
    const degraded = await waitForMatch(
      () => get<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, 'web', namespace),
      (s) => s.status?.phase === 'Degraded',
      { what: 'Degraded', timeoutMs: 4 * LEASE_MS + 10_000 },
    );
    expect(degraded.status?.advertisingNodes).toEqual([nodes[1]]);
    expect(cond(degraded, 'Available')).toMatchObject({ status: 'False', reason: 'NotAnnounced' });
  });
});
