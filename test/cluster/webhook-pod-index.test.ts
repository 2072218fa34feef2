// The Pod side of the ElasticIP webhooks on the real API server: an ElasticIPAttachment CREATE
// reads the Pods naming its ElasticIP from the controller's Pod informer (an index), not a LIST of
// the namespace per request (SEC-18); a NIC takes one attachment (SEC-12); and the Pod rule runs on UPDATE too, so an annotation added
// to a running Pod is checked (SEC-19).
import { ANNOTATIONS, WEBHOOK_PATHS } from '../../api';
import { admissionHandlers } from '../../runtime/controller/webhook/handlers';
import {
  informerWebhookCaches,
  liveWebhookCaches,
  type WebhookCacheSet,
} from '../../runtime/controller/webhook/listers';
import type { ResourceType } from '../../runtime/kube/resources';
import { RestClient, type ListOptions } from '../../runtime/kube/rest';
import type { KubeList, KubeObject } from '../../runtime/kube/types';
import { createNamespace, deleteNamespace, kubectl, testKubeConfig, waitFor } from './fixture';
import { apply, applyOk, elasticIPAttachment, pod, startTestWebhook, type TestWebhook } from './webhook-fixture';

/** A RestClient that counts the Pod LISTs it sends: what the API server would have to answer. */
class PodListCounter extends RestClient {
  podLists = 0;
  override list<T extends KubeObject>(type: ResourceType, options: ListOptions = {}): Promise<KubeList<T>> {
    if (type.plural === 'pods') this.podLists++;
    return super.list<T>(type, options);
  }
}

const DENIED = (webhook: string) => `admission webhook "${webhook}.juneau.loutres.me" denied the request`;

describe('SEC-18, SEC-19: the Pod side of EIP-5 from an informer, on CREATE and UPDATE', () => {
  const rest = new PodListCounter(testKubeConfig());
  let cacheSet: WebhookCacheSet;
  let webhook: TestWebhook;
  let ns: string;
  let L: Record<string, string>;

  beforeAll(async () => {
    ns = await createNamespace('webhook-podindex');
    cacheSet = informerWebhookCaches(rest);
    cacheSet.start();
    await cacheSet.waitForSync(30_000);
    webhook = await startTestWebhook('podindex', { caches: cacheSet.caches });
    L = webhook.labels;
  });
  afterAll(async () => {
    await webhook?.stop();
    await cacheSet?.stop();
    await deleteNamespace(ns);
  });

  test('SEC-18, L9: ElasticIPAttachment CREATEs send no Pod LIST; the Pod informer index still finds the Pod naming the ElasticIP', async () => {
    await applyOk(
      pod(ns, 'cache', { [ANNOTATIONS.networks]: JSON.stringify([{ interface: 'eth0', elasticIP: 'eip-c' }]) }, L),
    );
    await waitFor(() => cacheSet.caches.podsNamingElasticIP?.(ns, 'eip-c')[0], { what: 'the informer sees the Pod' });
    const listsBefore = rest.podLists;

    const byPod = await apply(elasticIPAttachment(ns, 'nat-c', 'eip-c', L));
    expect(byPod.ok).toBe(false);
    expect(byPod.output).toContain(DENIED('elasticipattachments'));
    expect(byPod.output).toContain('spec.elasticIP: "eip-c" is named directly by Pod cache');
    for (const i of [1, 2, 3]) await applyOk(elasticIPAttachment(ns, `nat-${i}`, `eip-${i}`, L));
    expect(rest.podLists).toBe(listsBefore);

    // The counter's positive control: the same handler over live listers sends one LIST per request.
    const request = {
      uid: 'u',
      operation: 'CREATE' as const,
      namespace: ns,
      object: elasticIPAttachment(ns, 'nat-4', 'eip-4', L),
    };
    const verdict = await admissionHandlers[WEBHOOK_PATHS.elasticIPAttachment](request, liveWebhookCaches(rest));
    expect(verdict.allowed).toBe(true);
    expect(rest.podLists).toBe(listsBefore + 1);
  });

  test('SEC-12, M7: a second ElasticIPAttachment of the same NetworkInterface is refused, naming the first', async () => {
    const onNic = (name: string, elasticIP: string) => ({
      ...elasticIPAttachment(ns, name, elasticIP, L),
      spec: { elasticIP, networkInterface: 'shared.eth0' },
    });
    await applyOk(onNic('shared-1', 'eip-s1'));
    await waitFor(
      async () => (await cacheSet.caches.elasticIPAttachments.list(ns)).some((a) => a.metadata?.name === 'shared-1'),
      { what: 'the informer sees the first attachment' },
    );
    const second = await apply(onNic('shared-2', 'eip-s2'));
    expect(second.ok).toBe(false);
    expect(second.output).toContain(
      'spec.networkInterface: "shared.eth0" is already used by ElasticIPAttachment shared-1 (ElasticIP eip-s1)',
    );
  });

  test('SEC-19, L10, EIP-5: an ElasticIP annotation added to a running Pod is checked: refused when an attachment uses it, naming it', async () => {
    await applyOk(elasticIPAttachment(ns, 'nat-a', 'eip-a', L));
    await applyOk(pod(ns, 'plain', {}, L));
    const added = await kubectl(['annotate', '-n', ns, 'pod', 'plain', `${ANNOTATIONS.elasticIP}=eip-a`], {
      allowFailure: true,
    });
    expect(added.code).not.toBe(0);
    expect(added.stderr).toContain(DENIED('pods'));
    expect(added.stderr).toContain(`"eip-a" is used through NAT by ElasticIPAttachment nat-a`);
    // An ElasticIP nobody attaches is fine to add, and a later update that leaves it alone passes.
    await kubectl(['annotate', '-n', ns, 'pod', 'plain', `${ANNOTATIONS.elasticIP}=eip-free`]);
    await kubectl(['label', '-n', ns, 'pod', 'plain', 'tier=web']);
  });
});
