/**
 * Admission latency with the run's ARPAdvertisements present: the webhook server code the
 * controller runs (informer caches), registered by URL, against the same server over caches that
 * hold only the network and pool (the cost of the webhook call itself), requests interleaved.
 * As bench/admission does, with the population the controller just wrote; `walk` is the same
 * informer caches without the address index (what ARP-4 read before the index).
 */
import { API_VERSION } from '../../api';
import { informerWebhookCaches } from '../../runtime/controller/webhook/listers';
import { startWebhookServer, type WebhookServerHandle } from '../../runtime/controller/webhook/start';
import type { WebhookCaches } from '../../runtime/controller/webhook/views';
import { JuneauResources, Resources, resourcePath } from '../../runtime/kube/resources';
import type { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { forEachConcurrent, freePort, ipv4, log, percentile } from './common';
import { sides } from './control-plane';

export const VARIANT_LABEL = 'bench.juneau/variant';

export interface AdmissionFigures {
  readonly population: number;
  readonly syncMs: number;
  readonly variants: Record<string, { p50: number; p99: number; mean: number }>;
}

export async function measureAdmission(
  rest: RestClient,
  used: ReadonlySet<string>,
  requests: number,
): Promise<AdmissionFigures> {
  const { slbNetwork, slbBase } = sides.controller;
  const population = (await rest.list(JuneauResources.arpAdvertisements)).items.length;
  const cacheSet = informerWebhookCaches(rest);
  cacheSet.start();
  const t0 = Date.now();
  await cacheSet.waitForSync(120_000);
  const syncMs = Date.now() - t0;
  const fixed = (items: unknown[]) => ({ list: () => items as never[] });
  const empty = fixed([]);
  const variants: Record<string, WebhookCaches> = {
    informer: cacheSet.caches,
    // The same informers without the address index: ARP-4 walks every cached ARPAdvertisement (before the index).
    walk: { ...cacheSet.caches, arpAdvertisementsAt: undefined },
    empty: {
      addressPools: fixed([
        { metadata: { name: slbNetwork }, spec: { advertiseMode: 'arp', addresses: [`${slbBase}/16`] } },
      ]),
      externalNetworks: fixed([{ metadata: { name: slbNetwork }, spec: { type: 'arp', addressPools: [slbNetwork] } }]),
      arpAdvertisements: empty,
      nodes: empty,
      elasticIPAttachments: empty,
      networkInterfaces: empty,
      pods: empty,
    },
  };
  const handles: WebhookServerHandle[] = [];
  try {
    for (const [name, caches] of Object.entries(variants)) {
      const handle = await startVariantServer(rest, name, caches);
      handles.push(handle);
      await handle.ready;
    }
    // Fresh addresses of the controller's network that no object holds, from the top of the pool down.
    let offset = 65_534;
    const nextAddress = () => {
      for (;;) {
        const a = ipv4(slbBase, offset--);
        if (!used.has(a)) return a;
      }
    };
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((n) => [n, []]));
    const path = `${resourcePath(JuneauResources.arpAdvertisements)}?dryRun=All`;
    const names = Object.keys(variants);
    for (let round = -1; round < requests; round++) {
      for (const [k] of names.entries()) {
        const name = names[(k + Math.max(round, 0)) % names.length];
        const object = {
          apiVersion: API_VERSION,
          kind: 'ARPAdvertisement',
          metadata: { name: `probe-${round + 1}-${name}`, labels: { [VARIANT_LABEL]: name } },
          spec: { externalNetwork: slbNetwork, address: nextAddress(), nodeName: 'scale-n1' },
        };
        const t = process.hrtime.bigint();
        // Every variant must allow it: a refusal would be a different (shorter) path, so it stops the run.
        await rest.request('POST', path, { body: object as unknown as KubeObject });
        if (round >= 0) samples[name].push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }
    const figures = Object.fromEntries(
      Object.entries(samples).map(([name, values]) => [
        name,
        {
          p50: percentile(values, 50),
          p99: percentile(values, 99),
          mean: values.reduce((a, b) => a + b, 0) / values.length,
        },
      ]),
    );
    return { population, syncMs, variants: figures };
  } finally {
    await Promise.all(handles.map((h) => h.stop()));
    await cacheSet.stop();
    for (const name of Object.keys(variants))
      await rest
        .delete(Resources.namespaces, undefined, `bench-${name}`)
        .catch(() => log(`  (namespace bench-${name} not deleted)`));
  }
}

/** For `--admission-only`: N ARPAdvertisements in the controllers' network, as the controllers would write them. */
export async function populateAdvertisements(rest: RestClient, count: number): Promise<Set<string>> {
  const { slbNetwork, slbBase } = sides.controller;
  const used = new Set<string>();
  await forEachConcurrent(count, 32, async (i) => {
    const address = ipv4(slbBase, i + 1);
    used.add(address);
    await rest.create(JuneauResources.arpAdvertisements, {
      apiVersion: API_VERSION,
      kind: 'ARPAdvertisement',
      metadata: { name: `pop-${i}` },
      spec: { externalNetwork: slbNetwork, address, nodeName: `scale-n${(i % 6) + 1}` },
    } as unknown as KubeObject);
  });
  return used;
}

/** A webhook server of its own (namespace and configuration named for the variant) that admits
 * only objects labelled with the variant's name, the bench's own identity taken for the
 * controller's (ARP-11: only the controller writes ARPAdvertisements); the caller awaits `ready`
 * and stops it. */
export async function startVariantServer(
  rest: RestClient,
  name: string,
  caches: WebhookCaches,
): Promise<WebhookServerHandle> {
  const namespace = `bench-${name}`;
  await rest.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const review = await rest.request<{ status?: { userInfo?: { username?: string } } }>(
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } as unknown as KubeObject,
    },
  );
  const writers = [review.status?.userInfo?.username ?? ''];
  return startWebhookServer({
    rest,
    caches: { ...caches, arpAdvertisementWriters: () => writers },
    urlBase: `https://127.0.0.1:${await freePort()}`,
    inCluster: false,
    namespace,
    configurationName: `bench-${name}`,
    objectSelector: { matchLabels: { [VARIANT_LABEL]: name } },
    checkIntervalMs: 60_000,
  });
}
