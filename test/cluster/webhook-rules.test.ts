// The admission webhooks on the real API server: kube-apiserver calls the Juneau webhook server
// (running in this process, registered by URL with its own CA) over TLS for every `kubectl apply`
// of this file's objects. Each rule: allowed cases allowed, and refusals whose message names the
// conflicting object. EN-3, EN-4, EN-5, AP-2, ARP-2, ARP-4, ARP-5, EIP-5.
import { ANNOTATIONS, WEBHOOK_PATHS } from '../../api';
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { createLogger } from '../../runtime/kube/log';
import { RestClient } from '../../runtime/kube/rest';
import { createNamespace, deleteNamespace, ensureNode, ignoreNotFound, testKubeConfig } from './fixture';
import {
  addressPool,
  apply,
  applyOk,
  arpAdvertisement,
  deleteClusterObjects,
  elasticIPAttachment,
  externalNetwork,
  networkInterface,
  pod,
  randomId,
  randomSubnet,
  startTestWebhook,
  type TestWebhook,
} from './webhook-fixture';

const rest = new RestClient(testKubeConfig());
const DENIED = (webhook: string) => `admission webhook "${webhook}.juneau.loutres.me" denied the request`;

let webhook: TestWebhook;
let L: Record<string, string>;
/** Every admission review this file's webhook server answered (its own log lines), as `path name`. */
const reviewed: string[] = [];
const reviewLog = createLogger({
  component: 'test-webhook-rules',
  level: 'debug',
  sink: (line) => {
    const fields = JSON.parse(line) as { msg?: string; message?: string; path?: string; name?: string };
    const what = fields.msg ?? fields.message ?? '';
    if (what.startsWith('admission ')) reviewed.push(`${fields.path} ${fields.name}`);
  },
});
const net = randomSubnet();
const u = randomId();
const name = (s: string) => `${s}-${u}`;
const created: Record<string, string[]> = { addresspools: [], externalnetworks: [], arpadvertisements: [] };
const track = (plural: string, n: string) => (created[plural].push(n), n);

beforeAll(async () => {
  // These ARPAdvertisements are written as the controller would be: `admin` is the writer ARP-11 allows
  // (test/cluster/webhook-arp.test.ts proves everyone else is refused).
  webhook = await startTestWebhook('rules', {
    caches: { ...liveWebhookCaches(rest), arpAdvertisementWriters: () => ['admin'] },
    logger: reviewLog,
  });
  L = webhook.labels;
});

afterAll(async () => {
  await deleteClusterObjects(JuneauResources.arpAdvertisements, created.arpadvertisements);
  await deleteClusterObjects(JuneauResources.externalNetworks, created.externalnetworks);
  await deleteClusterObjects(JuneauResources.addressPools, created.addresspools);
  await webhook?.stop();
});

describe('AddressPool (AP-2 across pools)', () => {
  beforeAll(async () => {
    await applyOk(addressPool(track('addresspools', name('ap-held')), [`${net}0/28`], L));
  });

  test('AP-2: a pool overlapping no other is allowed', async () => {
    expect((await apply(addressPool(track('addresspools', name('ap-free')), [`${net}16/28`], L))).ok).toBe(true);
  });

  test('AP-2: a CIDR or a range overlapping another pool is refused, naming the pool and its item', async () => {
    const cidr = await apply(addressPool(name('ap-bad1'), [`${net}0/29`], L));
    expect(cidr.ok).toBe(false);
    expect(cidr.output).toContain(DENIED('addresspools'));
    expect(cidr.output).toContain(
      `spec.addresses[0]: "${net}0/29" overlaps "${net}0/28" of AddressPool ${name('ap-held')} (AP-2)`,
    );
    const range = await apply(addressPool(name('ap-bad2'), [`${net}200-${net}210`, `${net}10-${net}12`], L));
    expect(range.output).toContain(
      `spec.addresses[1]: "${net}10-${net}12" overlaps "${net}0/28" of AddressPool ${name('ap-held')} (AP-2)`,
    );
    expect(range.output).toMatch(/Error from server \(Forbidden\)/);
  });
});

describe('ExternalNetwork (EN-3, EN-4)', () => {
  beforeAll(async () => {
    await applyOk(addressPool(track('addresspools', name('en-p1')), [`${net}32/28`], L));
    await applyOk(addressPool(track('addresspools', name('en-p2')), [`${net}48/28`], L));
    await applyOk(addressPool(track('addresspools', name('en-bgp')), [`${net}64/28`], L, 'bgp'));
    await applyOk(externalNetwork(track('externalnetworks', name('en-holder')), [name('en-p1')], L));
  });

  test('EN-4: a network listing pools nobody else lists is allowed, and can be updated', async () => {
    const n = track('externalnetworks', name('en-own'));
    await applyOk(externalNetwork(n, [name('en-p2')], L));
    await applyOk({ ...externalNetwork(n, [name('en-p2')], L), metadata: { name: n, labels: { ...L, team: 'net' } } });
  });

  test('EN-4: a pool listed by another ExternalNetwork is refused on create and on update, naming the holder', async () => {
    const create = await apply(externalNetwork(name('en-thief'), [name('en-p1')], L));
    expect(create.ok).toBe(false);
    expect(create.output).toContain(DENIED('externalnetworks'));
    expect(create.output).toContain(
      `spec.addressPools[0]: "${name('en-p1')}" is already listed by ExternalNetwork ${name('en-holder')}`,
    );
    const update = await apply(externalNetwork(name('en-own'), [name('en-p2'), name('en-p1')], L));
    expect(update.ok).toBe(false);
    expect(update.output).toContain(
      `spec.addressPools[1]: "${name('en-p1')}" is already listed by ExternalNetwork ${name('en-holder')}`,
    );
  });

  test('EN-4: an ExternalNetwork being deleted still holds its pools until it is gone', async () => {
    const pool = track('addresspools', name('en-p3'));
    await applyOk(addressPool(pool, [`${net}80/28`], L));
    const leaving = track('externalnetworks', name('en-leaving'));
    await applyOk({
      ...externalNetwork(leaving, [pool], L),
      metadata: { name: leaving, labels: L, finalizers: ['juneau.test/hold'] },
    });
    await rest.delete(JuneauResources.externalNetworks, undefined, leaving);
    const refused = await apply(externalNetwork(name('en-next'), [pool], L));
    expect(refused.output).toContain(
      `is already listed by ExternalNetwork ${leaving} (it is being deleted, and holds its pools until it is gone)`,
    );
    // Removing the finalizer (an update of the deleting network) is allowed; then the pool is free.
    await rest.patch(JuneauResources.externalNetworks, undefined, leaving, 'merge', { metadata: { finalizers: null } });
    expect((await apply(externalNetwork(track('externalnetworks', name('en-next')), [pool], L))).ok).toBe(true);
  });

  test('EN-3: a pool whose advertiseMode differs from the network type is refused, naming the pool', async () => {
    const r = await apply(externalNetwork(name('en-mixed'), [name('en-bgp')], L));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(
      `spec.addressPools[0]: "${name('en-bgp')}" is an AddressPool with advertiseMode bgp, but ExternalNetwork ${name('en-mixed')} has type arp (EN-3)`,
    );
    expect(r.output).toMatch(/Error from server \(Invalid\)|is invalid/);
    const r2 = await apply(externalNetwork(name('en-mixed2'), [name('en-p2')], L, 'bgp'));
    expect(r2.output).toContain(
      `"${name('en-p2')}" is an AddressPool with advertiseMode arp, but ExternalNetwork ${name('en-mixed2')} has type bgp (EN-3)`,
    );
  });
});

describe('ARPAdvertisement (ARP-2, ARP-4, ARP-5)', () => {
  const lan = name('arp-lan');
  beforeAll(async () => {
    await applyOk(addressPool(track('addresspools', name('arp-pool')), [`${net}128/26`], L));
    await applyOk(addressPool(track('addresspools', name('arp-bgp-pool')), [`${net}192/28`], L, 'bgp'));
    await applyOk(externalNetwork(track('externalnetworks', lan), [name('arp-pool')], L));
    await applyOk(externalNetwork(track('externalnetworks', name('arp-wan')), [name('arp-bgp-pool')], L, 'bgp'));
    await ensureNode(name('node-x'), { internalIP: `${net}130` });
    await applyOk(arpAdvertisement(track('arpadvertisements', name('ad-held')), `${net}140`, lan, L, name('node-x')));
  });
  afterAll(async () => {
    await rest.delete(Resources.nodes, undefined, name('node-x')).catch(ignoreNotFound);
  });

  test('ARP-2/ARP-4: a free address inside a pool of the arp network is allowed; moving nodeName is allowed', async () => {
    const n = track('arpadvertisements', name('ad-ok'));
    await applyOk(arpAdvertisement(n, `${net}141`, lan, L));
    await applyOk(arpAdvertisement(n, `${net}141`, lan, L, 'node-b'));
  });

  test('ARP-4: an address already advertised is refused with Forbidden, naming the holder', async () => {
    for (const other of [name('ad-dup1'), name('ad-dup2')]) {
      const r = await apply(arpAdvertisement(other, `${net}140`, lan, L, 'node-z'));
      expect(r.ok).toBe(false);
      expect(r.output).toContain('Error from server (Forbidden)');
      expect(r.output).toContain(
        `spec.address: "${net}140" is already advertised by ARPAdvertisement ${name('ad-held')} (node ${name('node-x')}): exactly one node answers for an address (ARP-4)`,
      );
    }
  });

  test('ARP-5: a Node InternalIP is refused, naming the Node', async () => {
    const r = await apply(arpAdvertisement(name('ad-node'), `${net}130`, lan, L));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(`spec.address: "${net}130" is the InternalIP of Node ${name('node-x')}`);
  });

  test('ARP-2: an address outside the pools, a bgp network and a missing network are refused', async () => {
    const outside = await apply(arpAdvertisement(name('ad-out'), `${net}10`, lan, L));
    expect(outside.output).toContain(
      `spec.address: "${net}10" is not inside any arp AddressPool of ExternalNetwork ${lan}`,
    );
    const bgp = await apply(arpAdvertisement(name('ad-bgp'), `${net}193`, name('arp-wan'), L));
    expect(bgp.output).toContain(
      `spec.externalNetwork: "${name('arp-wan')}" is an ExternalNetwork of type bgp; an ARPAdvertisement needs type arp (ARP-2)`,
    );
    const missing = await apply(arpAdvertisement(name('ad-none'), `${net}150`, name('nope'), L));
    expect(missing.output).toContain(`"${name('nope')}" names no existing ExternalNetwork (ARP-2)`);
  });
});

describe('EIP-5: an ElasticIP through an attachment or directly on a NIC, never both', () => {
  let ns: string;
  beforeAll(async () => {
    ns = await createNamespace('webhook-eip5');
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  test('EIP-5: a Pod naming an ElasticIP that an ElasticIPAttachment uses is refused at creation, naming the attachment', async () => {
    await applyOk(elasticIPAttachment(ns, 'nat-a', 'eip-a', L));
    const shorthand = await apply(pod(ns, 'web-1', { [ANNOTATIONS.elasticIP]: 'eip-a' }, L));
    expect(shorthand.ok).toBe(false);
    expect(shorthand.output).toContain(DENIED('pods'));
    expect(shorthand.output).toContain(`"eip-a" is used through NAT by ElasticIPAttachment nat-a`);
    const networks = await apply(
      pod(ns, 'web-2', { [ANNOTATIONS.networks]: JSON.stringify([{ interface: 'eth1', elasticIP: 'eip-a' }]) }, L),
    );
    expect(networks.output).toContain(`[0].elasticIP: "eip-a" is used through NAT by ElasticIPAttachment nat-a`);
    expect((await apply(pod(ns, 'web-3', { [ANNOTATIONS.elasticIP]: 'eip-other' }, L))).ok).toBe(true);
  });

  test('EIP-5: an ElasticIPAttachment whose ElasticIP a NetworkInterface holds, or a Pod names, is refused, naming it', async () => {
    await applyOk(networkInterface(ns, 'db.eth0', 'db', 'eip-b', L));
    const byNic = await apply(elasticIPAttachment(ns, 'nat-b', 'eip-b', L));
    expect(byNic.ok).toBe(false);
    expect(byNic.output).toContain(DENIED('elasticipattachments'));
    expect(byNic.output).toContain('spec.elasticIP: "eip-b" is held directly by NetworkInterface db.eth0 of Pod db');
    await applyOk(
      pod(ns, 'cache', { [ANNOTATIONS.networks]: JSON.stringify([{ interface: 'eth0', elasticIP: 'eip-c' }]) }, L),
    );
    const byPod = await apply(elasticIPAttachment(ns, 'nat-c', 'eip-c', L));
    expect(byPod.output).toContain('spec.elasticIP: "eip-c" is named directly by Pod cache');
    expect((await apply(elasticIPAttachment(ns, 'nat-d', 'eip-d', L))).ok).toBe(true);
  });

  test('EIP-5: ordinary Pods (no Juneau annotation) never reach the webhook (matchConditions)', async () => {
    expect((await apply(pod(ns, 'plain', {}, L))).ok).toBe(true);
    // Positive control, after it: a Pod that names an ElasticIP is reviewed (the line is written
    // before the answer, so before kubectl returns).
    expect((await apply(pod(ns, 'named', { [ANNOTATIONS.elasticIP]: 'eip-free' }, L))).ok).toBe(true);
    const pods = reviewed.filter((r) => r.startsWith(`${WEBHOOK_PATHS.pod} `));
    console.log(`webhook-rules: Pod reviews answered by the webhook: ${JSON.stringify(pods)}`);
    expect(pods.filter((r) => r === `${WEBHOOK_PATHS.pod} named`)).toHaveLength(1);
    expect(pods.filter((r) => r === `${WEBHOOK_PATHS.pod} plain`)).toEqual([]);
  });
});
