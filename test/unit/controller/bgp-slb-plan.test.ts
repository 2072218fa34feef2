// BGP-3, BGP-5, SLB-10: the ServiceLoadBalancer plan on a bgp network. advertisingNodes are the
// candidates (ready Local endpoints; under externalTrafficPolicy Cluster every node with a live
// agent) a BGPAdvertisement allows; phase Ready needs one of them to report the VIP announced over
// an Established session to an allowed peer; otherwise a reason names what is missing.
import { ANNOTATIONS, LOAD_BALANCER_CLASS, type BGPNodeState } from '../../../api';
import { announcedItems, parseIPv4, type AdvertisementView, type PeerView } from '../../../api/validation';
import { planServiceLoadBalancer, type SlbObservation } from '../../../runtime/controller/slb/plan';
import { decideAllocationRequest, unsupportedServiceReason } from '../../../runtime/controller/slb/request';
import type { ServiceView } from '../../../runtime/kube/service-views';

const now = new Date('2025-01-01T00:00:00Z');
type NodeStatus = NonNullable<BGPNodeState['status']>;
const VIP = '198.51.100.5';
const tor: PeerView = { name: 'tor', peerAddress: '192.0.2.1', peerASN: 65001, myASN: 65000 };
const adv: AdvertisementView = { name: 'adv', externalNetworks: ['wan'] };
const established = (announced: string[] = [VIP]): NodeStatus => ({
  peers: [{ peer: 'tor', state: 'Established', prefixesSent: announced.length }],
  announced: { count: announced.length, addresses: announcedItems(announced.map((a) => parseIPv4(a)!)) },
});
const service = (etp: 'Local' | 'Cluster' = 'Local'): ServiceView => ({
  metadata: { namespace: 'shop', name: 'web', annotations: { [ANNOTATIONS.loadBalancerExternalNetwork]: 'wan' } },
  spec: {
    type: 'LoadBalancer',
    loadBalancerClass: LOAD_BALANCER_CLASS,
    externalTrafficPolicy: etp,
    ports: [{ port: 80 }],
  },
});
const slices = [
  {
    addressType: 'IPv4',
    endpoints: [
      { addresses: ['10.1.0.1'], nodeName: 'n1' },
      { addresses: ['10.1.0.2'], nodeName: 'n2' },
    ],
  },
];
function observe(bgp: Partial<NonNullable<SlbObservation['bgp']>>, over: Partial<SlbObservation> = {}): SlbObservation {
  return {
    service: service(),
    slices,
    generation: 2,
    previous: undefined,
    network: { name: 'wan', type: 'bgp' },
    allocation: { allocated: true, vip: VIP, pool: 'bgp-pool' },
    currentAdvertisement: undefined,
    bgp: {
      advertisements: [adv],
      peers: [tor],
      nodeStates: new Map(),
      nodeLabels: new Map(),
      liveNodes: ['n1', 'n2', 'n3'],
      ...bgp,
    },
    ...over,
  };
}
const available = (o: SlbObservation) => {
  const plan = planServiceLoadBalancer(o, now);
  return { plan, cond: plan.status.conditions?.find((c) => c.type === 'Available') };
};

describe('BGP-5: phase Ready of a bgp VIP', () => {
  test('no BGPAdvertisement lists the network: Allocated, NoBGPAdvertisement naming the network', () => {
    const { plan, cond } = available(observe({ advertisements: [] }));
    expect(plan.status.phase).toBe('Allocated');
    expect(plan.status.advertisingNodes).toEqual([]);
    expect(cond).toMatchObject({ status: 'False', reason: 'NoBGPAdvertisement', observedGeneration: 2 });
    expect(cond?.message).toContain('no BGPAdvertisement lists ExternalNetwork wan');
  });

  test('allowed nodes without a report or an Established session: NotAnnounced, naming each node and why', () => {
    const idle: NodeStatus = { peers: [{ peer: 'tor', state: 'Active', lastError: 'Connection refused' }] };
    const { plan, cond } = available(observe({ nodeStates: new Map([['n2', idle]]) }));
    expect(plan.status.phase).toBe('Allocated');
    expect(plan.status.advertisingNodes).toEqual(['n1', 'n2']);
    expect(cond).toMatchObject({ status: 'False', reason: 'NotAnnounced' });
    expect(cond?.message).toContain('node n1: its agent has written no BGPNodeState n1 yet');
    expect(cond?.message).toContain(
      'node n2: no Established session to an allowed BGPPeer: tor Active (Connection refused)',
    );
  });

  test('an Established session that does not carry the VIP is not enough', () => {
    const { plan, cond } = available(observe({ nodeStates: new Map([['n1', established(['198.51.100.9'])]]) }));
    expect(plan.status.phase).toBe('Allocated');
    expect(cond?.message).toContain('node n1: its BGPNodeState does not report the VIP announced');
  });

  test('one node reporting the VIP over an Established session: Ready, Advertised naming it; a Ready VIP nobody announces any more is Degraded', () => {
    const { plan, cond } = available(observe({ nodeStates: new Map([['n1', established(['198.51.100.4', VIP])]]) }));
    expect(plan.status.phase).toBe('Ready');
    expect(cond).toMatchObject({ status: 'True', reason: 'Advertised' });
    expect(cond?.message).toContain(`VIP ${VIP} announced over BGP by 1 of 2 node(s): n1`);
    const after = planServiceLoadBalancer(observe({}, { previous: plan.status }), now);
    expect(after.status.phase).toBe('Degraded');
  });

  test('a session to a peer the advertisement does not name does not count', () => {
    const other: PeerView = { ...tor, name: 'other', peerAddress: '192.0.2.2' };
    const status: NodeStatus = { ...established(), peers: [{ peer: 'other', state: 'Established' }] };
    const { plan } = available(
      observe({
        peers: [tor, other],
        advertisements: [{ ...adv, peers: ['tor'] }],
        nodeStates: new Map([['n1', status]]),
      }),
    );
    expect(plan.status.phase).toBe('Allocated');
  });
});

describe('BGP-3: advertisingNodes of a bgp VIP', () => {
  test("the advertisement's nodeSelector narrows the nodes with ready endpoints; none allowed: NotAllowedByBGPAdvertisement", () => {
    const rackA = { ...adv, nodeSelector: { matchLabels: { rack: 'a' } } };
    const labels = new Map([
      ['n1', { rack: 'a' }],
      ['n2', { rack: 'b' }],
    ]);
    expect(
      planServiceLoadBalancer(observe({ advertisements: [rackA], nodeLabels: labels }), now).status.advertisingNodes,
    ).toEqual(['n1']);
    const { cond } = available(
      observe({ advertisements: [{ ...adv, nodeSelector: { matchLabels: { rack: 'c' } } }], nodeLabels: labels }),
    );
    expect(cond).toMatchObject({ status: 'False', reason: 'NotAllowedByBGPAdvertisement' });
    expect(cond?.message).toContain('node n2: no BGPAdvertisement of ExternalNetwork wan (adv)');
  });

  test('externalTrafficPolicy Cluster: every live node the advertisement allows, expired agents left out (FO-3)', () => {
    const o = observe(
      {},
      { service: service('Cluster'), unavailableNodes: new Map([['n3', 'its agent Lease expired']]) },
    );
    expect(planServiceLoadBalancer(o, now).status.advertisingNodes).toEqual(['n1', 'n2']);
    const none = available(observe({ liveNodes: [] }, { service: service('Cluster') }));
    expect(none.cond).toMatchObject({ status: 'False', reason: 'NoReadyBackends' });
  });

  test('SLB-10, BGP-3: Cluster is refused on arp networks only', () => {
    expect(unsupportedServiceReason(service('Cluster'), 'bgp')).toBeUndefined();
    expect(unsupportedServiceReason(service('Cluster'), 'arp')?.reason).toBe('ExternalTrafficPolicyNotLocal');
    const pools = new Map([['bgp-pool', { name: 'bgp-pool', advertiseMode: 'bgp', addresses: ['198.51.100.0/28'] }]]);
    const wan = { name: 'wan', type: 'bgp', addressPools: ['bgp-pool'] };
    expect(decideAllocationRequest(service('Cluster'), wan, pools)).toMatchObject({ ok: true });
  });
});
