import { ANNOTATIONS, LOAD_BALANCER_CLASS } from '../../../api';
import type { PoolView } from '../../../api/validation';
import { isServingEndpoint, normalizePorts, summarizeBackends } from '../../../runtime/controller/slb/backends';
import { advertisementAction } from '../../../runtime/controller/arp/action';
import {
  phaseOf,
  planServiceLoadBalancer,
  type AllocationOutcome,
  type SlbObservation,
} from '../../../runtime/controller/slb/plan';
import {
  decideAllocationRequest,
  isJuneauLoadBalancer,
  serviceLoadBalancerSpec,
  unsupportedServiceReason,
} from '../../../runtime/controller/slb/request';
import type { EndpointSliceView, EndpointView, ServiceView } from '../../../runtime/kube/service-views';

const now = new Date('2025-01-01T00:00:00Z');

function service(
  over: { annotations?: Record<string, string>; spec?: Partial<NonNullable<ServiceView['spec']>> } = {},
): ServiceView {
  return {
    metadata: {
      namespace: 'shop',
      name: 'web',
      uid: 'svc-uid',
      annotations: { [ANNOTATIONS.loadBalancerExternalNetwork]: 'public', ...over.annotations },
    },
    spec: {
      type: 'LoadBalancer',
      loadBalancerClass: LOAD_BALANCER_CLASS,
      externalTrafficPolicy: 'Local',
      ipFamilies: ['IPv4'],
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'web' }],
      ...over.spec,
    },
  };
}

const ep = (
  ip: string,
  nodeName: string | undefined,
  conditions: EndpointView['conditions'] = { ready: true, serving: true, terminating: false },
): EndpointView => ({ addresses: [ip], nodeName, conditions });
const slice = (
  endpoints: EndpointView[],
  ports = [{ name: 'http', port: 8080, protocol: 'TCP' }],
  addressType = 'IPv4',
): EndpointSliceView => ({ addressType, endpoints, ports });

const pools = new Map<string, PoolView>([
  ['arp-pool', { name: 'arp-pool', advertiseMode: 'arp', addresses: ['192.0.2.0/28'] }],
  ['bgp-pool', { name: 'bgp-pool', advertiseMode: 'bgp', addresses: ['198.51.100.0/28'] }],
]);
const arpNet = { name: 'public', type: 'arp', addressPools: ['arp-pool'] };

describe('SLB-1 / SLB-2: which Services, and what they ask for', () => {
  it('serves only type LoadBalancer with the Juneau class (SLB-1)', () => {
    expect(isJuneauLoadBalancer(service())).toBe(true);
    expect(isJuneauLoadBalancer(service({ spec: { loadBalancerClass: 'other' } }))).toBe(false);
    expect(isJuneauLoadBalancer(service({ spec: { type: 'ClusterIP' } }))).toBe(false);
  });

  it('derives the SLB spec from the annotations', () => {
    expect(
      serviceLoadBalancerSpec(service({ annotations: { [ANNOTATIONS.loadBalancerRequestedIP]: ' 192.0.2.5 ' } })),
    ).toEqual({ externalNetwork: 'public', requestedIP: '192.0.2.5' });
  });

  const table: Array<
    [string, ServiceView, typeof arpNet | undefined, { ok: boolean; phase?: string; reason?: string; message?: RegExp }]
  > = [
    ['a valid Service', service(), arpNet, { ok: true }],
    [
      'no network annotation',
      { ...service(), metadata: { ...service().metadata, annotations: {} } },
      undefined,
      { ok: false, phase: 'Error', reason: 'ExternalNetworkNotSpecified', message: /load-balancer-external-network/ },
    ],
    [
      'network missing',
      service(),
      undefined,
      { ok: false, phase: 'Pending', reason: 'ExternalNetworkNotFound', message: /"public" does not exist/ },
    ],
    [
      'only pools of the wrong mode (EN-3)',
      service(),
      { name: 'public', type: 'arp', addressPools: ['bgp-pool', 'gone'] },
      {
        ok: false,
        phase: 'Error',
        reason: 'NoUsableAddressPool',
        message: /bgp-pool.*advertiseMode bgp.*AddressPool gone does not exist/,
      },
    ],
    [
      'requested IP outside the pools',
      service({ annotations: { [ANNOTATIONS.loadBalancerRequestedIP]: '203.0.113.9' } }),
      arpNet,
      {
        ok: false,
        phase: 'Error',
        reason: 'RequestedIPNotInPool',
        message:
          /metadata\.annotations\["juneau\.loutres\.me\/load-balancer-requested-ip"\]: "203\.0\.113\.9" is not inside any arp AddressPool/,
      },
    ],
    [
      'requested IP not IPv4',
      service({ annotations: { [ANNOTATIONS.loadBalancerRequestedIP]: 'fe80::1' } }),
      arpNet,
      { ok: false, phase: 'Error', reason: 'RequestedIPNotInPool', message: /is not an IPv4 address/ },
    ],
    [
      'externalTrafficPolicy Cluster (SLB-10)',
      service({ spec: { externalTrafficPolicy: 'Cluster' } }),
      arpNet,
      {
        ok: false,
        phase: 'Error',
        reason: 'ExternalTrafficPolicyNotLocal',
        message: /spec\.externalTrafficPolicy is "Cluster"/,
      },
    ],
    [
      'SCTP port (SLB-10)',
      service({
        spec: {
          ports: [
            { port: 80, protocol: 'TCP' },
            { port: 9, protocol: 'SCTP' },
          ],
        },
      }),
      arpNet,
      { ok: false, phase: 'Error', reason: 'UnsupportedProtocol', message: /spec\.ports\[1\]\.protocol is "SCTP"/ },
    ],
    [
      'IPv6-only (SLB-10)',
      service({ spec: { ipFamilies: ['IPv6'] } }),
      arpNet,
      { ok: false, phase: 'Error', reason: 'IPv4Required', message: /spec\.ipFamilies is \["IPv6"\]/ },
    ],
  ];
  it.each(table)('%s', (_title, svc, network, expected) => {
    const decision = decideAllocationRequest(svc, network, pools);
    expect(decision.ok).toBe(expected.ok);
    if (!decision.ok) {
      expect(decision.phase).toBe(expected.phase);
      expect(decision.reason).toBe(expected.reason);
      expect(decision.message).toMatch(expected.message!);
    }
  });

  it('a requested IP inside a pool names that pool', () => {
    const d = decideAllocationRequest(
      service({ annotations: { [ANNOTATIONS.loadBalancerRequestedIP]: '192.0.2.9' } }),
      arpNet,
      pools,
    );
    expect(d).toMatchObject({
      ok: true,
      request: { pools: ['arp-pool'], requested: { address: '192.0.2.9', pool: 'arp-pool' } },
    });
  });

  it('dual-stack Services are supported (the VIP is IPv4) and several SLB-10 problems are all listed', () => {
    expect(unsupportedServiceReason(service({ spec: { ipFamilies: ['IPv6', 'IPv4'] } }))).toBeUndefined();
    const both = unsupportedServiceReason(
      service({ spec: { externalTrafficPolicy: 'Cluster', ipFamilies: ['IPv6'] } }),
    );
    expect(both?.message).toMatch(/externalTrafficPolicy.*ipFamilies/);
  });
});

describe('SLB-4 backends and ports', () => {
  it('advertisingNodes: nodes with a Ready, Serving, non-terminating endpoint; nil ready/serving mean true', () => {
    const s = summarizeBackends([
      slice([
        ep('10.1.0.1', 'n1'),
        ep('10.1.0.2', 'n2', { ready: false, serving: false }),
        ep('10.1.0.3', 'n3', { ready: true, serving: true, terminating: true }),
        ep('10.1.0.4', 'n4', {}),
      ]),
      slice([ep('10.1.0.1', 'n1'), ep('10.1.0.5', undefined)]),
      slice([ep('fd00::1', 'n6')], [], 'IPv6'),
    ]);
    expect(s).toEqual({ advertisingNodes: ['n1', 'n4'], totalReady: 3 });
    expect(isServingEndpoint(ep('x', 'n', { ready: true, serving: false }))).toBe(false);
  });

  it('resolves named targetPorts through the EndpointSlices, numbers as they are, absent as port', () => {
    const r = normalizePorts(
      [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 'web' },
        { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353 },
        { name: 'plain', port: 7000 },
        { name: 'missing', protocol: 'TCP', port: 81, targetPort: 'nope' },
        { name: 'sctp', protocol: 'SCTP', port: 9, targetPort: 9 },
      ],
      [
        slice([], [{ name: 'http', port: 8081, protocol: 'TCP' }]),
        slice(
          [],
          [
            { name: 'http', port: 8080, protocol: 'TCP' },
            { name: 'http', port: 9999, protocol: 'UDP' },
          ],
        ),
      ],
    );
    expect(r.ports).toEqual([
      { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 },
      { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353 },
      { name: 'plain', protocol: 'TCP', port: 7000, targetPort: 7000 },
    ]);
    expect(r.unresolved).toEqual(['missing/TCP -> nope']);
  });
});

const allocated: AllocationOutcome = { allocated: true, vip: '192.0.2.1', pool: 'arp-pool' };
function observe(over: Partial<SlbObservation> = {}): SlbObservation {
  return {
    service: service(),
    slices: [slice([ep('10.1.0.1', 'n1'), ep('10.1.0.2', 'n2')])],
    generation: 3,
    previous: undefined,
    network: { name: 'public', type: 'arp' },
    allocation: allocated,
    currentAdvertisement: undefined,
    ...over,
  };
}
const cond = (plan: ReturnType<typeof planServiceLoadBalancer>, type: string) =>
  plan.status.conditions?.find((c) => c.type === type);

describe('SLB-3 phases and conditions', () => {
  const noBackends = [slice([ep('10.1.0.1', 'n1', { ready: false, serving: false })])];
  const table: Array<[string, Partial<SlbObservation>, string, [string, string], [string, string]]> = [
    [
      'no VIP yet (pool full) -> Pending',
      { allocation: { allocated: false, phase: 'Pending', reason: 'NoFreeAddress', message: 'full' } },
      'Pending',
      ['False', 'NoFreeAddress'],
      ['Unknown', 'NotAllocated'],
    ],
    [
      'inconsistent network -> Error',
      {
        allocation: { allocated: false, phase: 'Error', reason: 'NoUsableAddressPool', message: 'x' },
        slices: noBackends,
      },
      'Error',
      ['False', 'NoUsableAddressPool'],
      ['False', 'NoReadyBackends'],
    ],
    [
      'VIP, never advertised, no backend -> Allocated',
      { slices: noBackends },
      'Allocated',
      ['True', 'AddressAllocated'],
      ['False', 'NoReadyBackends'],
    ],
    ['VIP, backends -> Ready', {}, 'Ready', ['True', 'AddressAllocated'], ['True', 'Advertised']],
    [
      'was Ready, backends gone -> Degraded (SLB-8)',
      { slices: noBackends, previous: { phase: 'Ready', vip: '192.0.2.1' } },
      'Degraded',
      ['True', 'AddressAllocated'],
      ['False', 'NoReadyBackends'],
    ],
    [
      'stays Degraded while no backend',
      { slices: [], previous: { phase: 'Degraded', vip: '192.0.2.1' } },
      'Degraded',
      ['True', 'AddressAllocated'],
      ['False', 'NoReadyBackends'],
    ],
    [
      'was Ready with another VIP -> Allocated',
      { slices: noBackends, previous: { phase: 'Ready', vip: '192.0.2.9' } },
      'Allocated',
      ['True', 'AddressAllocated'],
      ['False', 'NoReadyBackends'],
    ],
    [
      'Degraded, backend back -> Ready',
      { previous: { phase: 'Degraded', vip: '192.0.2.1' } },
      'Ready',
      ['True', 'AddressAllocated'],
      ['True', 'Advertised'],
    ],
  ];
  it.each(table)('%s', (_title, over, phase, [allocStatus, allocReason], [availStatus, availReason]) => {
    const plan = planServiceLoadBalancer(observe(over), now);
    expect(plan.status.phase).toBe(phase);
    expect(cond(plan, 'Allocated')).toMatchObject({ status: allocStatus, reason: allocReason, observedGeneration: 3 });
    expect(cond(plan, 'Available')).toMatchObject({ status: availStatus, reason: availReason, observedGeneration: 3 });
    expect(plan.status.observedGeneration).toBe(3);
  });

  it('phaseOf covers every input combination consistently', () => {
    for (const prev of [undefined, 'Pending', 'Allocated', 'Ready', 'Degraded', 'Error'] as const) {
      expect(phaseOf(allocated, 1, { phase: prev, vip: '192.0.2.1' })).toBe('Ready');
      expect(phaseOf(allocated, 0, { phase: prev, vip: '192.0.2.1' })).toBe(
        prev === 'Ready' || prev === 'Degraded' ? 'Degraded' : 'Allocated',
      );
    }
  });
});

describe('SLB-4..8 status, ARPAdvertisement, ingress, events', () => {
  it('Ready arp: full status, one ARPAdvertisement slb-<ns>-<name> on an advertising node, ingress VIP', () => {
    const plan = planServiceLoadBalancer(observe(), now);
    expect(plan.status).toMatchObject({
      vip: '192.0.2.1',
      addressPool: 'arp-pool',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
      advertisingNodes: ['n1', 'n2'],
      backendSummary: { totalReady: 2, localReadyNodes: 2 },
    });
    expect(plan.advertisement).toMatchObject({ name: 'slb-shop-web', externalNetwork: 'public', address: '192.0.2.1' });
    expect(['n1', 'n2']).toContain(plan.advertisement!.nodeName);
    expect(plan.status.arpAnnouncingNode).toBe(plan.advertisement!.nodeName);
    expect(plan.ingressIPs).toEqual(['192.0.2.1']);
    expect(plan.events).toEqual([
      { type: 'Normal', reason: 'Advertised', message: expect.stringContaining('phase Ready') },
    ]);
  });

  it('SLB-7 sticky: keeps the current node while it stays advertising', () => {
    const first = planServiceLoadBalancer(observe(), now).advertisement!;
    const other = first.nodeName === 'n1' ? 'n2' : 'n1';
    const plan = planServiceLoadBalancer(
      observe({ currentAdvertisement: { ...first, nodeName: other }, previous: { phase: 'Ready', vip: '192.0.2.1' } }),
      now,
    );
    expect(plan.advertisement?.nodeName).toBe(other);
    expect(plan.events).toEqual([]);
  });

  it('SLB-7 moves only nodeName when the current node loses its backend, with an event', () => {
    const current = { name: 'slb-shop-web', externalNetwork: 'public', address: '192.0.2.1', nodeName: 'n1' };
    const plan = planServiceLoadBalancer(
      observe({
        slices: [slice([ep('10.1.0.2', 'n2'), ep('10.1.0.3', 'n3')])],
        currentAdvertisement: current,
        previous: { phase: 'Ready', vip: '192.0.2.1' },
      }),
      now,
    );
    expect(['n2', 'n3']).toContain(plan.advertisement?.nodeName);
    expect(advertisementAction(current, plan.advertisement)).toEqual({
      action: 'move',
      desired: plan.advertisement,
      from: 'n1',
    });
    expect(plan.events.map((e) => e.reason)).toEqual(['AnnouncingNodeChanged']);
  });

  it('SLB-8: no advertising node -> no ARPAdvertisement (delete), arpAnnouncingNode empty, Warning event', () => {
    const current = { name: 'slb-shop-web', externalNetwork: 'public', address: '192.0.2.1', nodeName: 'n1' };
    const plan = planServiceLoadBalancer(
      observe({ slices: [], currentAdvertisement: current, previous: { phase: 'Ready', vip: '192.0.2.1' } }),
      now,
    );
    expect(plan.advertisement).toBeUndefined();
    expect(plan.status.arpAnnouncingNode).toBe('');
    expect(plan.ingressIPs).toEqual(['192.0.2.1']);
    expect(advertisementAction(current, plan.advertisement)).toEqual({ action: 'delete', name: 'slb-shop-web' });
    expect(plan.events).toEqual([
      { type: 'Warning', reason: 'NoReadyBackends', message: expect.stringContaining('phase Degraded') },
    ]);
  });

  // BGP-5: a bgp VIP is Ready only when a node reports it announced (test/unit/controller/bgp-slb-plan.test.ts).
  it('bgp without BGPAdvertisement: not Ready (BGP-5), no ARPAdvertisement and empty arpAnnouncingNode (SLB-5)', () => {
    const plan = planServiceLoadBalancer(observe({ network: { name: 'public', type: 'bgp' } }), now);
    expect(plan.status.phase).toBe('Allocated');
    expect(plan.advertisement).toBeUndefined();
    expect(plan.status.arpAnnouncingNode).toBe('');
    expect(cond(plan, 'Available')).toMatchObject({ status: 'False', reason: 'NoBGPAdvertisement' });
  });

  it('no VIP: no ARPAdvertisement, no ingress, no vip in status; event only on the phase change', () => {
    const allocation: AllocationOutcome = {
      allocated: false,
      phase: 'Error',
      reason: 'ExternalTrafficPolicyNotLocal',
      message: 'unsupported',
    };
    const plan = planServiceLoadBalancer(observe({ allocation }), now);
    expect(plan.status.vip).toBeUndefined();
    expect(plan.advertisement).toBeUndefined();
    expect(plan.ingressIPs).toEqual([]);
    expect(plan.events).toEqual([
      { type: 'Warning', reason: 'ExternalTrafficPolicyNotLocal', message: 'phase Error: unsupported' },
    ]);
    const again = planServiceLoadBalancer(observe({ allocation, previous: plan.status }), now);
    expect(again.events).toEqual([]);
  });

  it('keeps lastTransitionTime of unchanged conditions (a pass with nothing new changes nothing)', () => {
    const first = planServiceLoadBalancer(observe(), now);
    const later = planServiceLoadBalancer(
      observe({ previous: first.status, currentAdvertisement: first.advertisement }),
      new Date('2025-02-01T00:00:00Z'),
    );
    expect(later.status).toEqual(first.status);
  });

  it('advertisementAction: create, none, recreate when the VIP changed (ARP-3 immutable address)', () => {
    const d = { name: 'slb-a-b', externalNetwork: 'n', address: '192.0.2.1', nodeName: 'x' };
    expect(advertisementAction(undefined, d)).toEqual({ action: 'create', desired: d });
    expect(advertisementAction(d, d)).toEqual({ action: 'none' });
    expect(advertisementAction({ ...d, address: '192.0.2.2' }, d)).toEqual({ action: 'recreate', desired: d });
    expect(advertisementAction(undefined, undefined)).toEqual({ action: 'none' });
  });
});
