// ARP-11 as a pure rule (runtime/controller/webhook/rules/arp-advertisement-writers.ts); the same
// through the real API server is test/cluster/webhook-arp.test.ts.
import type { AdmissionRequest } from '../../../runtime/controller/webhook/admission';
import { ownerMetadata } from '../../../runtime/controller/arp/names';
import { checkARPAdvertisementWriter } from '../../../runtime/controller/webhook/rules/arp-advertisement-writers';

const CONTROLLER = 'system:serviceaccount:juneau-system:juneau-controller';
type Ad = {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec: { externalNetwork: string; address: string; nodeName: string };
};
const ad = (name: string, nodeName = 'n1', meta: Partial<Ad['metadata']> = {}): Ad => ({
  metadata: { name, ...meta },
  spec: { externalNetwork: 'lan', address: '192.0.2.1', nodeName },
});
const req = (
  operation: 'CREATE' | 'UPDATE' | 'DELETE',
  user: string,
  object?: Ad,
  oldObject?: Ad,
  subResource?: string,
): AdmissionRequest<Ad> => ({
  uid: 'u',
  operation,
  userInfo: { username: user },
  object,
  oldObject,
  name: object?.metadata.name ?? oldObject?.metadata.name,
  subResource,
});
const message = (v: ReturnType<typeof checkARPAdvertisementWriter>) =>
  v.allowed ? '' : v.issues.map((i) => i.message).join('; ');

describe('ARPAdvertisement writers (ARP-11)', () => {
  it('ARP-11: the controller creates, moves and writes status', () => {
    expect(checkARPAdvertisementWriter(req('CREATE', CONTROLLER, ad('x')), [CONTROLLER]).allowed).toBe(true);
    expect(checkARPAdvertisementWriter(req('UPDATE', CONTROLLER, ad('x', 'n2'), ad('x')), [CONTROLLER]).allowed).toBe(
      true,
    );
    expect(
      checkARPAdvertisementWriter(req('UPDATE', CONTROLLER, ad('x'), ad('x'), 'status'), [CONTROLLER]).allowed,
    ).toBe(true);
  });

  it('ARP-11: anyone else is refused, told which object to change (Service, ElasticIP, or how to make one)', () => {
    const slbOwned = ad(
      'slb-shop-web',
      'n1',
      ownerMetadata({ kind: 'ServiceLoadBalancer', namespace: 'shop', name: 'web' }),
    );
    const moved = message(
      checkARPAdvertisementWriter(
        req('UPDATE', 'alice', { ...slbOwned, spec: { ...slbOwned.spec, nodeName: 'n2' } }, slbOwned),
        [CONTROLLER],
      ),
    );
    expect(moved).toContain('of ARPAdvertisement slb-shop-web is written by the Juneau controller only (ARP-11)');
    expect(moved).toContain('change the Service shop/web instead');
    expect(moved).toContain('(request by alice)');
    const eipOwned = ad('eip-shop-db', 'n1', ownerMetadata({ kind: 'ElasticIP', namespace: 'shop', name: 'db' }));
    expect(message(checkARPAdvertisementWriter(req('UPDATE', 'alice', eipOwned, eipOwned), [CONTROLLER]))).toContain(
      'change the ElasticIP shop/db, or the ElasticIPAttachment or Pod that uses it, instead',
    );
    expect(message(checkARPAdvertisementWriter(req('CREATE', 'alice', ad('mine')), [CONTROLLER]))).toContain(
      'derived from ElasticIPs and from Services of type LoadBalancer',
    );
    expect(
      message(checkARPAdvertisementWriter(req('UPDATE', 'alice', ad('x'), ad('x'), 'status'), [CONTROLLER])),
    ).toMatch(/^of ARPAdvertisement x/);
    // Nobody known (the identity was never learned): everyone is refused.
    expect(checkARPAdvertisementWriter(req('CREATE', CONTROLLER, ad('x')), []).allowed).toBe(false);
  });

  it("ARP-11: removing finalizers of a deleting object is anyone's; with any other change it is not; DELETE is not refused", () => {
    const deleting = ad('x', 'n1', { finalizers: ['example.com/hold'], deletionTimestamp: '2026-01-01T00:00:00Z' });
    const released = ad('x', 'n1', { deletionTimestamp: '2026-01-01T00:00:00Z' });
    expect(checkARPAdvertisementWriter(req('UPDATE', 'alice', released, deleting), [CONTROLLER]).allowed).toBe(true);
    expect(
      checkARPAdvertisementWriter(
        req('UPDATE', 'alice', { ...released, spec: { ...released.spec, nodeName: 'n9' } }, deleting),
        [CONTROLLER],
      ).allowed,
    ).toBe(false);
    expect(
      checkARPAdvertisementWriter(
        req('UPDATE', 'alice', ad('x'), ad('x', 'n1', { finalizers: ['example.com/hold'] })),
        [CONTROLLER],
      ).allowed,
    ).toBe(false);
    expect(checkARPAdvertisementWriter(req('DELETE', 'alice', undefined, ad('x')), [CONTROLLER]).allowed).toBe(true);
  });
});
