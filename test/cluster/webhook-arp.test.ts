// ARP-11 through the real API server: the ARPAdvertisement webhook (rules/arp-advertisement-writers.ts,
// registered with the install manifest's rules, status included) lets only the controller's identity
// create and change ARPAdvertisements. Here that identity is the test kubeconfig's user `admin` (as
// main.ts would learn from a SelfSubjectReview); `alice` is impersonated with group system:masters,
// so RBAC allows her everything and only the webhook can refuse. Removing the finalizers of a
// deleting ARPAdvertisement stays open to anyone.
import { JuneauResources } from '../../runtime/kube/resources';
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import { ownerMetadata } from '../../runtime/controller/arp/names';
import { RestClient } from '../../runtime/kube/rest';
import { kubectl, testKubeConfig, waitFor } from './fixture';
import {
  addressPool,
  applyOk,
  arpAdvertisement,
  deleteClusterObjects,
  externalNetwork,
  randomId,
  randomSubnet,
  startTestWebhook,
  type Manifest,
  type TestWebhook,
} from './webhook-fixture';

const DENIED = 'admission webhook "arpadvertisements.juneau.loutres.me" denied the request';
const ALICE = ['--as=alice', '--as-group=system:masters'];
const ONLY = 'is written by the Juneau controller only (ARP-11)';

const u = randomId();
const net = randomSubnet();
const name = (s: string) => `${s}-${u}`;
const LAN = name('arp11-lan');
const POOL = name('arp11-pool');
const ads: string[] = [];

let webhook: TestWebhook;

/** An ARPAdvertisement routed to this file's webhook, with the owner marks the controller writes. */
function ad(
  adName: string,
  host: number,
  owner?: Parameters<typeof ownerMetadata>[0],
  nodeName = 'node-a',
  finalizers?: string[],
): Manifest {
  const base = arpAdvertisement(adName, `${net}${host}`, LAN, webhook.labels, nodeName);
  const marks = owner ? ownerMetadata(owner) : { labels: {}, annotations: {} };
  if (!ads.includes(adName)) ads.push(adName);
  return {
    ...base,
    metadata: {
      ...base.metadata,
      labels: { ...webhook.labels, ...marks.labels },
      annotations: marks.annotations,
      ...(finalizers ? { finalizers } : {}),
    },
  };
}

async function asAlice(args: string[], input?: Manifest): Promise<{ ok: boolean; output: string }> {
  const r = await kubectl([...ALICE, ...args], { input: input && JSON.stringify(input), allowFailure: true });
  return { ok: r.code === 0, output: `${r.stdout}${r.stderr}`.trim() };
}

const nodeOf = async (adName: string) =>
  (await kubectl(['get', 'arpadvertisement', adName, '-o', 'jsonpath={.spec.nodeName}'])).stdout;

beforeAll(async () => {
  const rest = new RestClient(testKubeConfig());
  webhook = await startTestWebhook('arp11', {
    caches: { ...liveWebhookCaches(rest), arpAdvertisementWriters: () => ['admin'] },
  });
  await applyOk(addressPool(POOL, [`${net}0/26`], {}));
  await applyOk(externalNetwork(LAN, [POOL], {}));
});

afterAll(async () => {
  for (const n of ads)
    await kubectl(['patch', 'arpadvertisement', n, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], {
      allowFailure: true,
    });
  await deleteClusterObjects(JuneauResources.arpAdvertisements, ads);
  await deleteClusterObjects(JuneauResources.externalNetworks, [LAN]);
  await deleteClusterObjects(JuneauResources.addressPools, [POOL]);
  await webhook?.stop();
});

/** kubectl arguments of a merge patch of the ARPAdvertisement `adName` (its status subresource when `status`). */
const patchAd = (adName: string, patch: object, o: { status?: boolean } = {}) => [
  'patch',
  'arpadvertisement',
  adName,
  ...(o.status ? ['--subresource=status'] : []),
  '--type=merge',
  '-p',
  JSON.stringify(patch),
];

describe('ARPAdvertisement writers (ARP-11)', () => {
  test('ARP-11: the controller identity (admin) creates, moves and writes status', async () => {
    await applyOk(ad(name('web'), 10, { kind: 'ServiceLoadBalancer', namespace: 'shop', name: 'web' }));
    await applyOk(ad(name('web'), 10, { kind: 'ServiceLoadBalancer', namespace: 'shop', name: 'web' }, 'node-b'));
    expect(await nodeOf(name('web'))).toBe('node-b');
    const status = await kubectl(patchAd(name('web'), { status: { conditions: [condition()] } }, { status: true }), {
      allowFailure: true,
    });
    expect(`${status.stdout}${status.stderr}`).not.toContain(DENIED);
    expect(status.code).toBe(0);
  });

  test('ARP-11: another user creating one is refused, told to create an ElasticIP or a Juneau LoadBalancer Service instead', async () => {
    const r = await asAlice(['apply', '-f', '-'], ad(name('sneaky'), 11));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(DENIED);
    expect(r.output).toMatch(/Error from server \(Forbidden\)/);
    expect(r.output).toContain(`of ARPAdvertisement ${name('sneaky')} ${ONLY}`);
    expect(r.output).toContain(
      'derived from ElasticIPs and from Services of type LoadBalancer with loadBalancerClass juneau.loutres.me/load-balancer; create or change one of those instead (request by alice)',
    );
    expect((await kubectl(['get', 'arpadvertisement', name('sneaky')], { allowFailure: true })).code).not.toBe(0);
  });

  test("ARP-11: another user moving a Service's ARPAdvertisement is refused, told to change that Service; it stays where it was", async () => {
    const r = await asAlice(patchAd(name('web'), { spec: { nodeName: 'node-z' } }));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(DENIED);
    expect(r.output).toContain(
      `spec: of ARPAdvertisement ${name('web')} ${ONLY}: it advertises the VIP of Service shop/web; change the Service shop/web instead`,
    );
    expect(await nodeOf(name('web'))).toBe('node-b');
  });

  test("ARP-11: another user editing an ElasticIP's ARPAdvertisement is refused, told to change that ElasticIP; labels count as a change too", async () => {
    await applyOk(ad(name('db'), 12, { kind: 'ElasticIP', namespace: 'shop', name: 'db' }));
    const r = await asAlice(['label', 'arpadvertisement', name('db'), 'sneaky=yes']);
    expect(r.ok).toBe(false);
    expect(r.output).toContain(
      `of ARPAdvertisement ${name('db')} ${ONLY}: it advertises the address of ElasticIP shop/db; change the ElasticIP shop/db, or the ElasticIPAttachment or Pod that uses it, instead`,
    );
    expect(
      (await kubectl(['get', 'arpadvertisement', name('db'), '-o', 'jsonpath={.metadata.labels.sneaky}'])).stdout,
    ).toBe('');
  });

  test('ARP-11: another user writing status is refused (the status subresource is covered)', async () => {
    const r = await asAlice(patchAd(name('web'), { status: { conditions: [condition('False')] } }, { status: true }));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(`status: of ARPAdvertisement ${name('web')} ${ONLY}`);
  });

  test('ARP-11: anyone may remove the finalizers of a deleting ARPAdvertisement, and nothing else', async () => {
    const gone = name('gone');
    await applyOk(ad(gone, 13, { kind: 'ElasticIP', namespace: 'shop', name: 'gone' }, 'node-a', ['example.com/hold']));
    await kubectl(['delete', 'arpadvertisement', gone, '--wait=false']);
    const edit = await asAlice([
      'patch',
      'arpadvertisement',
      gone,
      '--type=merge',
      '-p',
      '{"spec":{"nodeName":"node-z"}}',
    ]);
    expect(edit.ok).toBe(false);
    expect(edit.output).toContain(`of ARPAdvertisement ${gone} ${ONLY}`);
    const release = await asAlice([
      'patch',
      'arpadvertisement',
      gone,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    expect(release.output).not.toContain(DENIED);
    expect(release.ok).toBe(true);
    await waitFor(async () => (await kubectl(['get', 'arpadvertisement', gone], { allowFailure: true })).code !== 0, {
      what: `${gone} is gone`,
    });
  });
});

function condition(status = 'True') {
  return {
    type: 'Unique',
    status,
    reason: 'UniqueAddress',
    message: 'no other ARPAdvertisement has this address',
    lastTransitionTime: '2026-01-01T00:00:00Z',
    observedGeneration: 1,
  };
}
