// FO-3 pure logic: when an agent Lease counts as expired (by the controller's observation clock,
// not the renewTime), the tracker's liveness-change notifications, and the ServiceLoadBalancer
// plan leaving expired nodes out with the reason while SLB-7 keeps a live answering node. Also the
// agent's flag rules that make FO-4 hold (answer expiry <= lease duration).
import type { Lease } from '../../../runtime/kube/leader-election';
import { AgentLeaseTracker, leaseExpired, observeLease } from '../../../runtime/controller/nodes/agent-leases';
import { planServiceLoadBalancer, type SlbObservation } from '../../../runtime/controller/slb/plan';
import type { EndpointView, EndpointSliceView } from '../../../runtime/kube/service-views';
import { parseAgentFlags } from '../../../runtime/agent/flags';

const lease = (node: string, renewTime: string, seconds = 10): Lease => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: `juneau-agent-${node}`, namespace: 'juneau-system' },
  spec: { holderIdentity: node, renewTime, leaseDurationSeconds: seconds },
});

describe('FO-3 agent Lease expiry', () => {
  test('FO-3: expired only after the duration has passed since the controller saw the renewTime change, whatever renewTime says', () => {
    const seen = observeLease(undefined, lease('n1', '1999-01-01T00:00:00.000000Z'), 1_000)!;
    expect(seen).toMatchObject({ node: 'n1', durationMs: 10_000, observedAtMs: 1_000 });
    expect(leaseExpired(seen, 11_000)).toBe(false);
    expect(leaseExpired(seen, 11_001)).toBe(true);
    expect(leaseExpired(seen, 11_001, 2_000)).toBe(false); // the controller's --agent-lease-grace
    expect(leaseExpired(seen, 13_001, 2_000)).toBe(true);
    // The same record seen again restarts nothing; a new renewTime does.
    expect(observeLease(seen, lease('n1', '1999-01-01T00:00:00.000000Z'), 9_000)).toBe(seen);
    expect(observeLease(seen, lease('n1', '1999-01-01T00:00:02.000000Z'), 9_000)?.observedAtMs).toBe(9_000);
    expect(observeLease(undefined, { ...lease('x', 'r'), metadata: { name: 'juneau-controller' } }, 0)).toBeUndefined();
  });

  test('FO-3: the tracker reports a node unavailable after its duration, notifies at expiry and at recovery', () => {
    jest.useFakeTimers();
    try {
      let handlers: { onAdd?: (l: Lease) => void; onUpdate?: (o: Lease, l: Lease) => void } = {};
      const tracker = new AgentLeaseTracker({ addHandlers: (h) => ((handlers = h), () => true) }, () => Date.now());
      const changes: string[] = [];
      tracker.onLivenessChange((n) => changes.push(n));
      handlers.onAdd!(lease('n1', 'r1', 2));
      handlers.onAdd!(lease('n2', 'r1', 2));
      jest.advanceTimersByTime(1_500);
      handlers.onUpdate!(lease('n2', 'r1', 2), lease('n2', 'r2', 2));
      expect(tracker.unavailableNodes().size).toBe(0);
      jest.advanceTimersByTime(600);
      expect([...tracker.unavailableNodes().keys()]).toEqual(['n1']);
      expect(tracker.unavailableNodes().get('n1')).toMatch(
        /juneau-agent-n1 was not renewed for 2 s \(lease duration 2 s\)/,
      );
      expect(changes).toEqual(['n1']);
      handlers.onUpdate!(lease('n1', 'r1', 2), lease('n1', 'r2', 2));
      expect(tracker.unavailableNodes().size).toBe(0);
      expect(changes).toEqual(['n1', 'n1']);
      tracker.stop();
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('FO-3 ServiceLoadBalancer plan with expired agents', () => {
  const ep = (ip: string, nodeName: string): EndpointView => ({
    addresses: [ip],
    nodeName,
    conditions: { ready: true, serving: true, terminating: false },
  });
  const slices: EndpointSliceView[] = [
    {
      addressType: 'IPv4',
      endpoints: [ep('10.1.0.1', 'n1'), ep('10.1.0.2', 'n2'), ep('10.1.0.3', 'n3')],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    },
  ];
  const observe = (over: Partial<SlbObservation>): SlbObservation => ({
    service: {
      metadata: { namespace: 'ns', name: 'web' },
      spec: { type: 'LoadBalancer', ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    } as SlbObservation['service'],
    slices,
    generation: 1,
    previous: undefined,
    network: { name: 'public', type: 'arp' },
    allocation: { allocated: true, vip: '192.0.2.1', pool: 'p' },
    currentAdvertisement: undefined,
    ...over,
  });
  const ad = (nodeName: string) => ({ name: 'slb-ns-web', externalNetwork: 'public', address: '192.0.2.1', nodeName });
  const why =
    'its agent Lease juneau-agent-n2 was not renewed for 16 s (lease duration 15 s): the node cannot answer (FO-3)';

  test('FO-3 SLB-7: an expired non-answering node leaves advertisingNodes with the reason; the live answering node is kept', () => {
    const plan = planServiceLoadBalancer(
      observe({ currentAdvertisement: ad('n1'), unavailableNodes: new Map([['n2', why]]) }),
    );
    expect(plan.status.advertisingNodes).toEqual(['n1', 'n3']);
    expect(plan.advertisement?.nodeName).toBe('n1');
    expect(plan.status.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'True',
      reason: 'Advertised',
      message: expect.stringContaining(`left out: node n2: ${why}`),
    });
  });

  test('FO-3: the answering node expired: the address moves to a live node, and the Event says why', () => {
    const plan = planServiceLoadBalancer(
      observe({ currentAdvertisement: ad('n2'), unavailableNodes: new Map([['n2', why]]) }),
    );
    expect(['n1', 'n3']).toContain(plan.advertisement?.nodeName);
    expect(plan.events).toContainEqual(
      expect.objectContaining({
        reason: 'AnnouncingNodeChanged',
        message: expect.stringContaining(`was n2, whose agent cannot answer: ${why}`),
      }),
    );
  });

  test('FO-3: every node with backends expired: no ARPAdvertisement, Available False AgentLeaseExpired naming them', () => {
    const all = new Map(['n1', 'n2', 'n3'].map((n) => [n, `lease of ${n} expired`]));
    const plan = planServiceLoadBalancer(observe({ currentAdvertisement: ad('n1'), unavailableNodes: all }));
    expect(plan.advertisement).toBeUndefined();
    expect(plan.status.advertisingNodes).toEqual([]);
    expect(plan.status.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'False',
      reason: 'AgentLeaseExpired',
      message: expect.stringContaining('node n3: lease of n3 expired'),
    });
  });
});

describe('FO-2/FO-3/FO-4 agent timing flags', () => {
  const parse =
    (...argv: string[]) =>
    () =>
      parseAgentFlags(['--node-name', 'n1', ...argv]);
  test('FO-4: the answer expiry may not exceed the lease duration (the node must be silent before another node answers)', () => {
    expect(parse('--answer-expiry=20s')).toThrow(
      /--answer-expiry \(20000ms\) must not exceed --lease-duration \(10000ms\).*FO-4/,
    );
    expect(parse('--answer-expiry=20s', '--lease-duration=20s')).not.toThrow();
  });
  test('FO-2: the renewal, which moves the heartbeat, must come at least twice per expiry; durations are bounded', () => {
    expect(parse('--lease-renew-interval=6s')).toThrow(
      /--lease-renew-interval \(6000ms\) must be at most half of --answer-expiry \(10000ms\)/,
    );
    expect(parse('--answer-expiry=100ms')).toThrow(/--answer-expiry must be at least 500ms/);
    expect(parse('--lease-duration=15500ms')).toThrow(/whole seconds/);
    expect(parse('--lease-namespace=', '--answer-expiry=20s')).not.toThrow();
  });
});
