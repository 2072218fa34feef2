// SLB-1 through the real API server: the ServiceLoadBalancer webhook (rules/service-load-balancer.ts)
// lets only the controller's identity write ServiceLoadBalancers and their status. Here that
// identity is the test kubeconfig's user `admin` (as main.ts would learn from a SelfSubjectReview);
// `alice` is impersonated with group system:masters, so RBAC allows her everything and only the
// webhook can refuse. Removing finalizers of a deleting ServiceLoadBalancer is allowed to anyone.
import { API_VERSION } from '../../api';
import { kubectl, waitFor } from './fixture';
import { patchSlb, SLB_DENIED as DENIED, slbField, startSlbWebhook, stopSlbWebhook } from './slb-kubectl';
import { apply, applyOk, type Manifest, type TestWebhook } from './webhook-fixture';

const ALICE = ['--as=alice', '--as-group=system:masters'];

let webhook: TestWebhook;
let namespace: string;

const slb = (name: string, spec: Record<string, unknown>, extra: { finalizers?: string[] } = {}): Manifest => ({
  apiVersion: API_VERSION,
  kind: 'ServiceLoadBalancer',
  metadata: { name, namespace, labels: webhook.labels, ...extra },
  spec,
});

/** `kubectl apply -f -` as alice. */
async function applyAsAlice(object: Manifest): Promise<{ ok: boolean; output: string }> {
  const r = await kubectl([...ALICE, 'apply', '-f', '-'], { input: JSON.stringify(object), allowFailure: true });
  return { ok: r.code === 0, output: `${r.stdout}${r.stderr}`.trim() };
}

beforeAll(async () => ({ webhook, namespace } = await startSlbWebhook('webhook-slb', ['admin'])));
afterAll(() => stopSlbWebhook(webhook, namespace));

describe('ServiceLoadBalancer admission (SLB-1)', () => {
  test('SLB-1: the controller identity (admin) creates and updates a ServiceLoadBalancer', async () => {
    await applyOk(slb('web', { externalNetwork: 'net-a' }));
    await applyOk(slb('web', { externalNetwork: 'net-a', requestedIP: '198.18.122.1' }));
    expect(await slbField(namespace, 'web', '.spec.requestedIP')).toBe('198.18.122.1');
  });

  test('SLB-1: another user creating one through kubectl apply is refused, naming it and saying to change the Service', async () => {
    const r = await applyAsAlice(slb('sneaky', { externalNetwork: 'net-a' }));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(DENIED);
    expect(r.output).toMatch(/Error from server \(Forbidden\)/);
    expect(r.output).toContain(
      `of ServiceLoadBalancer ${namespace}/sneaky is written by the Juneau controller only (SLB-1)`,
    );
    expect(r.output).toContain('change the Service instead (request by alice)');
    const get = await kubectl(['-n', namespace, 'get', 'serviceloadbalancer', 'sneaky'], { allowFailure: true });
    expect(get.code).not.toBe(0);
  });

  test('SLB-1: another user editing the spec through kubectl apply is refused; the object is unchanged', async () => {
    const r = await applyAsAlice(slb('web', { externalNetwork: 'net-b', requestedIP: '198.18.122.1' }));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(DENIED);
    expect(r.output).toContain(
      `spec: of ServiceLoadBalancer ${namespace}/web is written by the Juneau controller only (SLB-1)`,
    );
    expect(r.output).toContain(`derived from Service ${namespace}/web; change the Service instead`);
    expect(await slbField(namespace, 'web', '.spec.externalNetwork')).toBe('net-a');
  });

  test('SLB-1: another user writing status is refused too (the status subresource)', async () => {
    const r = await patchSlb(namespace, 'web', { status: { vip: '198.18.122.9' } }, { as: ALICE, status: true });
    expect(r.code).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain(
      `status: of ServiceLoadBalancer ${namespace}/web is written by the Juneau controller only (SLB-1)`,
    );
    expect(`${r.stdout}${r.stderr}`).toContain('change the Service instead');
  });

  test('SLB-1: anyone may remove the finalizers of a deleting ServiceLoadBalancer, and nothing else', async () => {
    await applyOk(
      slb('gone', { externalNetwork: 'net-a' }, { finalizers: ['juneau.loutres.me/service-load-balancer'] }),
    );
    await kubectl(['-n', namespace, 'delete', 'serviceloadbalancer', 'gone', '--wait=false']);
    const edit = await applyAsAlice(
      slb('gone', { externalNetwork: 'net-b' }, { finalizers: ['juneau.loutres.me/service-load-balancer'] }),
    );
    expect(edit.ok).toBe(false);
    expect(edit.output).toContain(
      `ServiceLoadBalancer ${namespace}/gone is written by the Juneau controller only (SLB-1)`,
    );
    const release = await patchSlb(namespace, 'gone', [{ op: 'remove', path: '/metadata/finalizers' }], {
      as: ALICE,
      type: 'json',
    });
    expect(`${release.stdout}${release.stderr}`).not.toContain(DENIED);
    expect(release.code).toBe(0);
    await waitFor(
      async () =>
        (await kubectl(['-n', namespace, 'get', 'serviceloadbalancer', 'gone'], { allowFailure: true })).code !== 0,
      { what: 'gone is gone' },
    );
  });

  test("SLB-1: the same apply as admin passes where alice's was refused (the identity decides, not the content)", async () => {
    expect((await apply(slb('sneaky', { externalNetwork: 'net-a' }))).ok).toBe(true);
  });
});
