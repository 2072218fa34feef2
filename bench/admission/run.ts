/**
 * Admission latency with many ARPAdvertisements in the API server (ARP-4, ARP-5): the time a
 * client waits for an ARPAdvertisement create (server-side dry run, so the population stays put)
 * through three registrations of the same webhook server code, side by side on one throwaway
 * control plane, requests interleaved so the machine's noise lands on all alike:
 *   - `informer`: caches from runtime/kube/informer.ts (what the controller runs now);
 *   - `list`:     live listers, four cluster-wide LISTs per request (what it ran before);
 *   - `empty`:    the same handler over empty in-memory caches: the webhook call's own cost (TLS,
 *                 AdmissionReview, the API server's side), with nothing to read.
 *
 *   npx tsx bench/admission/run.ts [arpadvertisements=10000] [requests-per-variant=200]
 *
 * Needs the control-plane binaries (`npm run cluster:build`) and the CRDs (`npx cdk8s synth`).
 * See bench/README.md.
 */
import { API_VERSION } from '../../api';
import {
  informerWebhookCaches,
  liveWebhookCaches,
  type WebhookCacheSet,
} from '../../runtime/controller/webhook/listers';
import type { WebhookServerHandle } from '../../runtime/controller/webhook/start';
import type { WebhookCaches } from '../../runtime/controller/webhook/views';
import { JuneauResources, resourcePath } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { startCluster } from '../../test/cluster/harness';
import { CRD_MANIFEST } from '../../test/cluster/paths';
import { startVariantServer, VARIANT_LABEL } from '../scale/admission';

const POPULATION = Number(process.argv[2] ?? 10_000);
const REQUESTS = Number(process.argv[3] ?? 200);
const NETWORK = 'bench-net';
const POOL = 'bench-pool';
const log = (line: string) => process.stdout.write(`${line}\n`);

/** 10.(i / 65536 + 16).x.y: population from 10.16.0.0, probes from 10.200.0.0, all in the pool. */
const address = (i: number, base = 16) => `10.${base + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
const arp = (name: string, addr: string, labels: Record<string, string> = {}) =>
  ({
    apiVersion: API_VERSION,
    kind: 'ARPAdvertisement',
    metadata: { name, labels },
    spec: { externalNetwork: NETWORK, address: addr, nodeName: 'bench-node' },
  }) as unknown as KubeObject;

async function populate(rest: RestClient): Promise<void> {
  await rest.create(JuneauResources.addressPools, {
    apiVersion: API_VERSION,
    kind: 'AddressPool',
    metadata: { name: POOL },
    spec: { advertiseMode: 'arp', addresses: ['10.0.0.0/8'] },
  } as unknown as KubeObject);
  await rest.create(JuneauResources.externalNetworks, {
    apiVersion: API_VERSION,
    kind: 'ExternalNetwork',
    metadata: { name: NETWORK },
    spec: { type: 'arp', addressPools: [POOL] },
  } as unknown as KubeObject);
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < POPULATION; i = next++) {
      await rest.create(JuneauResources.arpAdvertisements, arp(`pop-${i}`, address(i)));
      if (i % 2000 === 1999) log(`  ${i + 1} ARPAdvertisements (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

async function variant(rest: RestClient, name: string, caches: WebhookCaches): Promise<WebhookServerHandle> {
  const handle = await startVariantServer(rest, name, caches);
  await handle.ready;
  return handle;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main(): Promise<void> {
  const cluster = await startCluster({ crdFiles: [CRD_MANIFEST], log: (l) => log(`  ${l}`) });
  const stop = () => void cluster.stop().then(() => process.exit(130));
  process.once('SIGINT', stop);
  let cacheSet: WebhookCacheSet | undefined;
  const handles: WebhookServerHandle[] = [];
  try {
    const rest = new RestClient(cluster.kubeConfig, { requestTimeoutMs: 60_000 });
    log(`creating ${POPULATION} ARPAdvertisements`);
    await populate(rest);
    cacheSet = informerWebhookCaches(rest);
    cacheSet.start();
    const synced = Date.now();
    await cacheSet.waitForSync(120_000);
    log(`informers synced in ${Date.now() - synced} ms`);
    const empty = { list: () => [] };
    const fixed = (items: unknown[]) => ({ list: () => items as never[] });
    const variants: Record<string, WebhookCaches> = {
      informer: cacheSet.caches,
      list: liveWebhookCaches(rest),
      // Only the network and the pool, so its verdicts equal the others' (allowed).
      empty: {
        addressPools: fixed([{ metadata: { name: POOL }, spec: { advertiseMode: 'arp', addresses: ['10.0.0.0/8'] } }]),
        externalNetworks: fixed([{ metadata: { name: NETWORK }, spec: { type: 'arp', addressPools: [POOL] } }]),
        arpAdvertisements: empty,
        nodes: empty,
        elasticIPAttachments: empty,
        networkInterfaces: empty,
        pods: empty,
      },
    };
    for (const [name, caches] of Object.entries(variants)) handles.push(await variant(rest, name, caches));
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((n) => [n, []]));
    const path = `${resourcePath(JuneauResources.arpAdvertisements)}?dryRun=All`;
    let probe = 0;
    // A warm-up round per variant, then REQUESTS rounds taking the variants in turn (order rotating).
    for (let round = -1; round < REQUESTS; round++) {
      const names = Object.keys(variants);
      const order = names.map((_, i) => names[(i + Math.max(round, 0)) % names.length]);
      for (const name of order) {
        const object = arp(`probe-${probe}`, address(probe++, 200), { [VARIANT_LABEL]: name });
        const t0 = process.hrtime.bigint();
        // Every variant must allow it: a refusal would be a different (shorter) path, so it stops the run.
        await rest.request('POST', path, { body: object });
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (round >= 0) samples[name].push(ms);
      }
    }
    log(
      `\nARPAdvertisement create (dry run) latency with ${POPULATION} ARPAdvertisements, ${REQUESTS} requests per variant:`,
    );
    log('| variant  | p50 ms | p99 ms | mean ms |');
    log('|----------|-------:|-------:|--------:|');
    for (const [name, values] of Object.entries(samples)) {
      const sorted = [...values].sort((a, b) => a - b);
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      log(
        `| ${name.padEnd(8)} | ${percentile(sorted, 50).toFixed(1)} | ${percentile(sorted, 99).toFixed(1)} | ${mean.toFixed(1)} |`,
      );
    }
  } finally {
    await Promise.all(handles.map((h) => h.stop()));
    await cacheSet?.stop();
    await cluster.stop();
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`bench/admission: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
