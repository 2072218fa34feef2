// ARP-4 made visible: 50 ARPAdvertisements for one address created at once by hand, with no webhook
// registered (so all succeed) — the controller's duplicate detector flags every one: condition
// Unique=False/DuplicateAddress naming the others and the first, one Warning Event each, the gauge
// juneau_arp_duplicate_addresses; once all but one are deleted the survivor goes back to True.
import { API_VERSION, type ARPAdvertisement } from '../../api';
import { JuneauController } from '../../runtime/controller/controller';
import { EventRecorder } from '../../runtime/kube/events';
import { RuntimeMetrics } from '../../runtime/kube/metrics';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { ignoreNotFound, testKubeConfig, waitFor, waitForMatch } from './fixture';

type Ad = ARPAdvertisement & KubeObject;
interface EventObject extends KubeObject {
  type?: string;
  reason?: string;
  note?: string;
  regarding?: { kind?: string; name?: string; uid?: string };
}

const rest = new RestClient(testKubeConfig());
const suffix = Math.random().toString(36).slice(2, 7);
const ADDRESS = '198.18.121.7'; // 198.18.121.0/24: no other test file's pool
const COUNT = 50;
const names = Array.from({ length: COUNT }, (_, i) => `dup-${suffix}-${String(i).padStart(2, '0')}`);
const unique = (a: Ad | undefined) => a?.status?.conditions?.find((c) => c.type === 'Unique');

const metrics = new RuntimeMetrics({ processMetrics: false });
const recorder = new EventRecorder(rest, {
  reportingController: 'juneau.loutres.me/controller',
  reportingInstance: `dup-${suffix}`,
  flushIntervalMs: 500,
});
let controller: JuneauController;

beforeAll(async () => {
  controller = new JuneauController({ rest: new RestClient(testKubeConfig()), recorder, metrics });
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  await Promise.all(
    names.map((n) => rest.delete(JuneauResources.arpAdvertisements, undefined, n).catch(ignoreNotFound)),
  );
});

async function gauge(): Promise<number | undefined> {
  const line = (await metrics.exposition()).split('\n').find((l) => l.startsWith('juneau_arp_duplicate_addresses '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

async function warningsFor(): Promise<EventObject[]> {
  const events = (await rest.list<EventObject>(Resources.events, { namespace: 'default' })).items;
  return events.filter((e) => e.regarding?.kind === 'ARPAdvertisement' && names.includes(e.regarding.name ?? ''));
}

describe('duplicate detector (ARP-4)', () => {
  it(`ARP-4: ${COUNT} racing creates of one address without a webhook -> every survivor flagged Unique=False naming the first, one Warning each, gauge 1; back to True when one is left`, async () => {
    expect(await gauge()).toBe(0);
    const results = await Promise.allSettled(
      names.map((name, i) =>
        rest.create(JuneauResources.arpAdvertisements, {
          apiVersion: API_VERSION,
          kind: 'ARPAdvertisement',
          metadata: { name },
          spec: { externalNetwork: `dup-net-${suffix}`, address: ADDRESS, nodeName: `node-${i % 3}` },
        }),
      ),
    );
    const created = results.filter((r) => r.status === 'fulfilled').length;
    expect(created).toBeGreaterThan(1); // nothing refuses them: this is what a webhook alone cannot prevent

    const survivors = await waitFor(
      async () => {
        const ads = (await rest.list<Ad>(JuneauResources.arpAdvertisements)).items.filter(
          (a) => a.spec.address === ADDRESS,
        );
        return ads.length === created && ads.every((a) => unique(a)?.status === 'False') ? ads : undefined;
      },
      { what: `all ${created} flagged`, timeoutMs: 60_000, intervalMs: 500 },
    );
    // The first by creationTimestamp, then name: flagged too, and every message says which one it is.
    const ordered = [...survivors].sort(
      (a, b) =>
        String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)) ||
        (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
    );
    const first = ordered[0].metadata.name!;
    for (const a of ordered) {
      const c = unique(a)!;
      expect(c).toMatchObject({
        status: 'False',
        reason: 'DuplicateAddress',
        observedGeneration: a.metadata.generation,
      });
      expect(c.message).toContain(`spec.address ${ADDRESS} is also advertised by ARPAdvertisement`);
      expect(c.message).toContain(
        a.metadata.name === first ? 'this one was created first' : `the first created is ${first}`,
      );
    }
    expect(unique(ordered[1])!.message).toContain(`${first} (node ${ordered[0].spec.nodeName})`);
    expect(await gauge()).toBe(1);
    expect(controller.duplicates.duplicatedAddresses()).toEqual([ADDRESS]);

    // One Warning per object (per transition), not one per pass.
    const warnings = await waitFor(
      async () => {
        await recorder.flush();
        const w = (await warningsFor()).filter((e) => e.type === 'Warning' && e.reason === 'DuplicateAddress');
        return new Set(w.map((e) => e.regarding?.name)).size === created ? w : undefined;
      },
      { what: 'a Warning on each', timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(warnings).toHaveLength(created);

    // Resolved: all but the first deleted -> True/UniqueAddress, a Normal Event, gauge 0.
    await Promise.all(
      ordered.slice(1).map((a) => rest.delete(JuneauResources.arpAdvertisements, undefined, a.metadata.name!)),
    );
    const resolved = await waitForMatch(
      () => rest.get<Ad>(JuneauResources.arpAdvertisements, undefined, first),
      (a) => unique(a)?.status === 'True',
      { what: 'the survivor back to Unique=True', timeoutMs: 30_000 },
    );
    expect(unique(resolved)).toMatchObject({ reason: 'UniqueAddress' });
    expect(await gauge()).toBe(0);
    await waitFor(
      async () => {
        await recorder.flush();
        return (await warningsFor()).some(
          (e) => e.type === 'Normal' && e.reason === 'DuplicateResolved' && e.regarding?.name === first,
        );
      },
      { what: 'a Normal DuplicateResolved Event on the survivor' },
    );
    expect((await warningsFor()).filter((e) => e.regarding?.name === first && e.type === 'Warning')).toHaveLength(1);
  }, 120_000);
});
