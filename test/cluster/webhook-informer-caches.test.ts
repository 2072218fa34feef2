// On the real API server: admission reads informers (runtime/kube/informer.ts),
// not a LIST per request, and answers nothing before they have synced (an empty cache would allow
// what it must refuse); the controller's own ServiceLoadBalancer writes skip the SLB-1 webhook by
// the install manifest's matchConditions, everyone else's still reach it.
import { JuneauResources } from '../../runtime/kube/resources';
import { API_VERSION } from '../../api';
import { informerWebhookCaches, type WebhookCacheSet } from '../../runtime/controller/webhook/listers';
import { RestClient } from '../../runtime/kube/rest';
import { kubectl, testKubeConfig, waitFor } from './fixture';
import { patchSlb, SLB_DENIED, slbField, startSlbWebhook, stopSlbWebhook } from './slb-kubectl';
import {
  addressPool,
  apply,
  deleteClusterObjects,
  randomId,
  randomSubnet,
  startTestWebhook,
  WEBHOOK_LABEL,
  type TestWebhook,
} from './webhook-fixture';

const rest = new RestClient(testKubeConfig());

describe('informer-backed admission (AP-2)', () => {
  const net = randomSubnet();
  const id = randomId();
  const pools = [`inf-held-${id}`, `inf-dup-${id}`, `inf-early-${id}`];
  let cacheSet: WebhookCacheSet;
  let webhook: TestWebhook | undefined;
  const pending: Array<Promise<TestWebhook>> = [];

  afterAll(async () => {
    await deleteClusterObjects(JuneauResources.addressPools, pools);
    cacheSet?.start(); // a test that failed early left the webhook waiting for it
    await Promise.all(pending);
    await webhook?.stop();
    await cacheSet?.stop();
  });

  test('AP-2: before its informers synced the webhook answers nothing (the write is refused by failurePolicy Fail); once synced it judges from the cache', async () => {
    cacheSet = informerWebhookCaches(rest);
    const webhookId = `informer-${id}`;
    const labels = { [WEBHOOK_LABEL]: webhookId };
    const starting = startTestWebhook('informer', { caches: cacheSet.caches }, webhookId);
    pending.push(starting);
    // The registration (by URL) exists before the caches start; a server-side dry run shows when the API server calls it.
    await waitFor(
      async () => {
        const r = await kubectl(['apply', '--dry-run=server', '-f', '-'], {
          input: JSON.stringify(addressPool(pools[2], [`${net}96/28`], labels)),
          allowFailure: true,
        });
        return r.stderr.includes('webhook') || undefined;
      },
      { what: 'the API server calls the unsynced webhook' },
    );
    const early = await apply(addressPool(pools[2], [`${net}96/28`], labels));
    expect(early.ok).toBe(false);
    expect(early.output).toContain('failed calling webhook "addresspools.juneau.loutres.me"');
    expect(early.output).toContain('webhook caches not synced yet');

    cacheSet.start();
    webhook = await starting;
    expect(cacheSet.hasSynced()).toBe(true);
    expect((await apply(addressPool(pools[0], [`${net}0/28`], webhook.labels))).ok).toBe(true);
    // Watch lag: the informer must have seen the first pool before it can refuse an overlap with it.
    await waitFor(
      async () => (await cacheSet.caches.addressPools.list()).some((p) => p.metadata?.name === pools[0]) || undefined,
      { what: 'the informer sees the pool' },
    );
    const overlap = await apply(addressPool(pools[1], [`${net}0/29`], webhook.labels));
    expect(overlap.ok).toBe(false);
    expect(overlap.output).toContain(
      `spec.addresses[0]: "${net}0/29" overlaps "${net}0/28" of AddressPool ${pools[0]} (AP-2)`,
    );
  }, 90_000);
});

describe('the controller skips its own SLB-1 webhook (matchConditions)', () => {
  let webhook: TestWebhook;
  let namespace: string;
  // Nobody is a known writer: every write that reaches the webhook is refused.
  beforeAll(async () => ({ webhook, namespace } = await startSlbWebhook('slb-self', [])));
  afterAll(() => stopSlbWebhook(webhook, namespace));

  test('SLB-1: writes by the install ServiceAccount juneau-controller are not sent to the webhook; the same write by another user is refused by it', async () => {
    // The url registration takes the install manifest's webhooks for the webhook's namespace.
    const controller = [
      `--as=system:serviceaccount:${webhook.namespace}:juneau-controller`,
      '--as-group=system:masters',
    ];
    const other = [`--as=system:serviceaccount:${namespace}:juneau-controller`, '--as-group=system:masters'];
    const slb = {
      apiVersion: API_VERSION,
      kind: 'ServiceLoadBalancer',
      metadata: { name: 'web', namespace, labels: webhook.labels },
      spec: { externalNetwork: 'net-self' },
    };
    const refused = await kubectl([...other, 'apply', '-f', '-'], { input: JSON.stringify(slb), allowFailure: true });
    expect(refused.code).not.toBe(0);
    expect(`${refused.stdout}${refused.stderr}`).toContain(SLB_DENIED);
    await kubectl([...controller, 'apply', '-f', '-'], { input: JSON.stringify(slb) });
    const patched = await patchSlb(
      namespace,
      'web',
      { status: { phase: 'Pending' } },
      { as: controller, status: true },
    );
    expect(patched.code).toBe(0);
    expect(await slbField(namespace, 'web', '.status.phase')).toBe('Pending');
  });
});
