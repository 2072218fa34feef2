// NATGateway's pure rules: the gateway node (NGW-3, NGW-6), the plan's phases, conditions,
// ARPAdvertisement and Events (NGW-2..6, NAME-1), and the webhook rule (NGW-1, NGW-2).
import { MAX_CONTESTED_PODS } from '../../../api';
import { chooseGatewayNode, describeLeftOut, type GatewayNodeView } from '../../../runtime/controller/ngw/gateway-node';
import { planNATGateway, type NATGatewayObservation } from '../../../runtime/controller/ngw/plan';
import { highestRandomWeightNode } from '../../../runtime/controller/arp/rendezvous';
import { checkNATGatewayAdmission } from '../../../runtime/controller/webhook/rules/nat-gateway';

const node = (name: string, more: Partial<GatewayNodeView> = {}): GatewayNodeView => ({
  name,
  labels: { egress: 'yes' },
  ready: true,
  deleting: false,
  lease: { state: 'live' },
  ...more,
});
const NODES = ['a', 'b', 'c'].map((n) => node(n));
const ADDRESS = '198.51.100.7';

const observation = (more: Partial<NATGatewayObservation> = {}): NATGatewayObservation => ({
  namespace: 'team',
  name: 'egress',
  generation: 3,
  deleting: false,
  previous: undefined,
  resolution: { ok: true, network: 'lan', type: 'arp' },
  allocation: { allocated: true, address: ADDRESS, pool: 'pool' },
  nodes: NODES,
  pods: { selected: 4, contested: [] },
  ...more,
});
const NOW = new Date('2026-01-01T00:00:00Z');

describe('NGW-3: the gateway node', () => {
  it('NGW-3: rendezvous on the address among the nodes that can serve', () => {
    const choice = chooseGatewayNode({ address: ADDRESS, nodes: NODES });
    expect(choice.nodeName).toBe(highestRandomWeightNode(ADDRESS, ['a', 'b', 'c']));
    expect(choice).toMatchObject({ candidates: 3, leftOut: [] });
  });

  it('NGW-3 NGW-6: the current node is kept while it can serve, left when it cannot, with why', () => {
    const other = ['a', 'b', 'c'].find((n) => n !== highestRandomWeightNode(ADDRESS, ['a', 'b', 'c']))!;
    expect(chooseGatewayNode({ address: ADDRESS, nodes: NODES, current: other }).nodeName).toBe(other);
    const cases: Array<[Partial<GatewayNodeView>, string]> = [
      [{ ready: false }, 'it is not Ready'],
      [{ deleting: true }, 'it is being deleted'],
      [{ lease: { state: 'none' } }, 'its agent has no Lease (no agent runs there)'],
      [{ lease: { state: 'expired', why: 'its agent Lease expired' } }, 'its agent Lease expired'],
      [{ labels: {} }, 'it does not match spec.nodeSelector'],
    ];
    for (const [change, why] of cases) {
      const nodes = NODES.map((n) => (n.name === other ? node(other, change) : n));
      const choice = chooseGatewayNode({
        address: ADDRESS,
        nodes,
        current: other,
        nodeSelector: { matchLabels: { egress: 'yes' } },
      });
      expect(choice.nodeName).not.toBe(other);
      expect(choice.leftOut).toEqual([[other, why]]);
    }
  });

  it('NGW-3: messages name five left-out nodes and count the rest (5,000 nodes fit no message)', () => {
    const leftOut = Array.from({ length: 7 }, (_, i) => [`n${i}`, 'it is not Ready'] as const);
    expect(describeLeftOut(leftOut)).toBe(
      'node n0: it is not Ready; node n1: it is not Ready; node n2: it is not Ready; node n3: it is not Ready; node n4: it is not Ready; and 2 more',
    );
  });
});

describe('NGW-2..6: the plan', () => {
  it('NGW-3 NAME-1: Ready on an arp network: status, conditions with observedGeneration, the ARPAdvertisement ngw-<namespace>-<name>, one Event', () => {
    const plan = planNATGateway(observation(), NOW);
    const nodeName = highestRandomWeightNode(ADDRESS, ['a', 'b', 'c']);
    expect(plan.status).toMatchObject({
      phase: 'Ready',
      address: ADDRESS,
      addressPool: 'pool',
      nodeName,
      selectedPods: 4,
      observedGeneration: 3,
    });
    expect(plan.status?.conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration])).toEqual([
      ['Allocated', 'True', 'AddressAllocated', 3],
      ['Ready', 'True', 'GatewayReady', 3],
    ]);
    expect(plan.advertisement).toEqual({ name: 'ngw-team-egress', externalNetwork: 'lan', address: ADDRESS, nodeName });
    expect(plan.events).toEqual([
      { type: 'Normal', reason: 'GatewayReady', message: expect.stringContaining(`node ${nodeName} is the gateway`) },
    ]);
    // The same observation again: no Event (one per transition).
    expect(planNATGateway(observation({ previous: plan.status }), NOW).events).toEqual([]);
  });

  it('NGW-6: the gateway moves when its node cannot serve: one GatewayNodeChanged Event naming both nodes and why, saying connections are lost', () => {
    const first = planNATGateway(observation(), NOW);
    const old = first.status!.nodeName!;
    const nodes = NODES.map((n) => (n.name === old ? node(old, { ready: false }) : n));
    const moved = planNATGateway(
      observation({ previous: first.status, nodes, currentAdvertisement: { address: ADDRESS, nodeName: old } }),
      NOW,
    );
    expect(moved.status?.nodeName).not.toBe(old);
    expect(moved.advertisement?.nodeName).toBe(moved.status?.nodeName);
    expect(moved.events).toEqual([
      {
        type: 'Normal',
        reason: 'GatewayNodeChanged',
        message: `the gateway for ${ADDRESS} moved from node ${old} (it is not Ready) to node ${moved.status?.nodeName}; connections that went through ${old} are lost, new ones leave through ${moved.status?.nodeName} (NGW-6)`,
      },
    ]);
  });

  it('NGW-3: no node can serve: Degraded, no ARPAdvertisement, the address kept, a Warning', () => {
    const plan = planNATGateway(observation({ nodes: NODES.map((n) => node(n.name, { ready: false })) }), NOW);
    expect(plan.status).toMatchObject({ phase: 'Degraded', address: ADDRESS, nodeName: '' });
    expect(plan.advertisement).toBeUndefined();
    expect(plan.status?.conditions?.[1]).toMatchObject({
      reason: 'NoGatewayNode',
      message: expect.stringContaining('node a: it is not Ready'),
    });
    expect(plan.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'NoGatewayNode']]);
  });

  it('NGW-3, BGP-2: a bgp network no BGPAdvertisement lists: Pending, a gateway node, no ARPAdvertisement, NoBGPAdvertisement', () => {
    const plan = planNATGateway(observation({ resolution: { ok: true, network: 'wan', type: 'bgp' } }), NOW);
    expect(plan.status?.phase).toBe('Pending');
    expect(plan.status?.nodeName).not.toBe('');
    expect(plan.advertisement).toBeUndefined();
    expect(plan.status?.conditions?.[1].reason).toBe('NoBGPAdvertisement');
  });

  it('NGW-3, BGP-4, BGP-5: on a bgp network the gateway is a node a BGPAdvertisement allows; Ready only once its BGPNodeState reports the address announced', () => {
    const peers = [{ name: 'tor', peerAddress: '192.0.2.1', peerASN: 65000, myASN: 64512 }];
    const advertisements = [{ name: 'ad', externalNetworks: ['wan'], nodeSelector: { matchLabels: { rack: 'r1' } } }];
    const nodeLabels = new Map([
      ['a', { rack: 'r2' }],
      ['b', { rack: 'r1' }],
      ['c', { rack: 'r2' }],
    ]);
    const bgp = (announced: string[]) => ({
      advertisements,
      peers,
      nodeLabels,
      nodeStates: new Map([
        [
          'b',
          {
            peers: [{ peer: 'tor', state: 'Established' as const }],
            announced: { count: announced.length, addresses: announced },
          },
        ],
      ]),
    });
    const on = (announced: string[]) =>
      planNATGateway(observation({ resolution: { ok: true, network: 'wan', type: 'bgp' }, bgp: bgp(announced) }), NOW);
    const waiting = on([]);
    // Only b may announce, so b is the gateway whatever the rendezvous says.
    expect(waiting.status).toMatchObject({ phase: 'Pending', nodeName: 'b' });
    expect(waiting.status?.conditions?.[1]).toMatchObject({ reason: 'NotAnnounced', status: 'False' });
    expect(waiting.status?.conditions?.[1].message).toContain(
      'node b: its BGPNodeState does not report the VIP announced',
    );
    const ready = on([ADDRESS]);
    expect(ready.status).toMatchObject({ phase: 'Ready', nodeName: 'b' });
    expect(ready.status?.conditions?.[1]).toMatchObject({ reason: 'GatewayReady', status: 'True' });
    expect(ready.status?.conditions?.[1].message).toContain('announces it over BGP');
    expect(ready.advertisement).toBeUndefined();
  });

  it('NGW-2: no address: Pending with the allocator reason; an unusable network: Error', () => {
    const pending = planNATGateway(
      observation({
        allocation: { allocated: false, reason: 'RequestedIPInUse', message: 'held by ElasticIP team/web' },
      }),
      NOW,
    );
    expect(pending.status).toMatchObject({ phase: 'Pending', nodeName: '' });
    expect(pending.status?.address).toBeUndefined();
    expect(pending.events).toEqual([
      { type: 'Warning', reason: 'RequestedIPInUse', message: 'phase Pending: held by ElasticIP team/web' },
    ]);
    const error = planNATGateway(
      observation({
        resolution: { ok: false, reason: 'ExternalNetworkNotFound', message: 'spec.externalNetwork: nope' },
      }),
      NOW,
    );
    expect(error.status?.phase).toBe('Error');
    expect(error.events[0].reason).toBe('ExternalNetworkNotFound');
  });

  it('NGW-4: contested pods are listed up to the bound and counted in full', () => {
    const contested = Array.from({ length: MAX_CONTESTED_PODS + 5 }, (_, i) => ({
      pod: `p${String(i).padStart(3, '0')}`,
      natGateway: 'older',
    }));
    const plan = planNATGateway(observation({ pods: { selected: 0, contested } }), NOW);
    expect(plan.status?.contestedPods).toHaveLength(MAX_CONTESTED_PODS);
    expect(plan.status?.contestedPodCount).toBe(MAX_CONTESTED_PODS + 5);
  });

  it('deleting: finalize, nothing advertised, nothing written', () => {
    expect(planNATGateway(observation({ deleting: true }), NOW)).toEqual({
      status: undefined,
      advertisement: undefined,
      finalize: true,
      events: [],
    });
  });
});

describe('NGW-1, NGW-2: the webhook rule', () => {
  const snapshot = {
    externalNetworks: [{ metadata: { name: 'lan' }, spec: { type: 'arp', addressPools: ['pool'] } }],
    addressPools: [{ metadata: { name: 'pool' }, spec: { advertiseMode: 'arp', addresses: ['198.51.100.0/28'] } }],
    namespaces: [],
    arpAdvertisements: [],
  };
  const create = (spec: Record<string, unknown>) =>
    checkNATGatewayAdmission(
      {
        uid: 'u',
        operation: 'CREATE',
        namespace: 'team',
        object: { metadata: { name: 'g' }, spec: { externalNetwork: 'lan', podSelector: {}, ...spec } },
      },
      snapshot,
    );

  it('NGW-1 NGW-2: allowed when valid; refused naming the field otherwise', () => {
    expect(create({ requestedIP: '198.51.100.5' })).toEqual({ allowed: true });
    expect(create({ externalNetwork: 'nope' })).toMatchObject({
      allowed: false,
      reason: 'Invalid',
      issues: [{ field: 'spec.externalNetwork', value: 'nope' }],
    });
    expect(create({ requestedIP: '203.0.113.1' })).toMatchObject({
      allowed: false,
      issues: [{ field: 'spec.requestedIP' }],
    });
    expect(
      create({ podSelector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] } }),
    ).toMatchObject({
      allowed: false,
      issues: [
        { field: 'spec.podSelector.matchExpressions[0].values', message: 'must be empty for operator Exists (NGW-1)' },
      ],
    });
    expect(create({ podSelector: undefined })).toMatchObject({
      allowed: false,
      issues: [{ field: 'spec.podSelector' }],
    });
  });
});
