// SLB-3: the order of the Service's ingress (what kube-proxy serves) around an announcement
// change: a new address is published before anything answers for it, an old one leaves only after.
import { ingressDuring } from '../../../runtime/controller/slb/reconcile';
import type { ServiceObject } from '../../../runtime/controller/context';

const service = (ips: string[]): ServiceObject =>
  ({
    metadata: { namespace: 'default', name: 'web' },
    spec: { type: 'LoadBalancer' },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip, ipMode: 'VIP' })) } },
  }) as unknown as ServiceObject;

test('SLB-3: a first VIP is published before the announcement', () => {
  expect(ingressDuring(service([]), ['198.51.100.1'])).toEqual(['198.51.100.1']);
});

test('SLB-3: a VIP that changes: both during the change, the old one first (it leaves after the withdrawal)', () => {
  expect(ingressDuring(service(['198.51.100.1']), ['198.51.100.2'])).toEqual(['198.51.100.1', '198.51.100.2']);
});

test('SLB-3: nothing new (unchanged, or only a removal): nothing written before the announcement', () => {
  expect(ingressDuring(service(['198.51.100.1']), ['198.51.100.1'])).toBeUndefined();
  expect(ingressDuring(service(['198.51.100.1', '198.51.100.2']), ['198.51.100.2'])).toBeUndefined();
  expect(ingressDuring(service(['198.51.100.1']), [])).toBeUndefined();
});
