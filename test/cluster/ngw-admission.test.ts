// NATGateway bad input on the real API server (issue 29, proof 9): what the CRD's schema and CEL
// refuse, and what the Juneau webhook (in this process, registered by URL) refuses because CEL
// cannot see it — every refusal naming the field, and the holder when an address is taken.
import { API_VERSION } from '../../api';
import { ownerMetadata } from '../../runtime/controller/arp/names';
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import { JuneauResources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import { createNamespace, deleteNamespace, testKubeConfig } from './fixture';
import {
  addressPool,
  apply,
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

const rest = new RestClient(testKubeConfig());
// An Invalid verdict comes back as a 422 with the webhook's causes (runtime/controller/webhook/admission.ts).
const INVALID = 'The request is invalid: ';
const net = randomSubnet();
const u = randomId();
const name = (s: string) => `${s}-${u}`;
let webhook: TestWebhook;
let ns: string;

const gateway = (n: string, spec: Record<string, unknown>): Manifest => ({
  apiVersion: API_VERSION,
  kind: 'NATGateway',
  metadata: { name: n, namespace: ns, labels: webhook.labels },
  spec: { externalNetwork: name('lan'), podSelector: {}, ...spec },
});

beforeAll(async () => {
  webhook = await startTestWebhook('ngw', {
    caches: { ...liveWebhookCaches(rest), arpAdvertisementWriters: () => ['admin'] },
  });
  ns = await createNamespace('ngw-admission');
  await applyOk(addressPool(name('pool'), [`${net}0/26`], webhook.labels));
  await applyOk(externalNetwork(name('lan'), [name('pool')], webhook.labels));
  // An ElasticIP's ARPAdvertisement for .10, as the controller writes it (owner marks, NAME-1).
  const held = arpAdvertisement(name('held'), `${net}10`, name('lan'), webhook.labels);
  const owner = ownerMetadata({ kind: 'ElasticIP', namespace: 'team-a', name: 'web' });
  await applyOk({
    ...held,
    metadata: { ...held.metadata, labels: { ...webhook.labels, ...owner.labels }, annotations: owner.annotations },
  });
});

afterAll(async () => {
  if (ns) await deleteNamespace(ns);
  await deleteClusterObjects(JuneauResources.arpAdvertisements, [name('held')]);
  await deleteClusterObjects(JuneauResources.externalNetworks, [name('lan')]);
  await deleteClusterObjects(JuneauResources.addressPools, [name('pool')]);
  await webhook?.stop();
});

describe('NGW-1, NGW-2: refused by the CRD (schema and CEL)', () => {
  test.each([
    ['no podSelector', { podSelector: undefined }, 'spec.podSelector: Required value'],
    [
      'an operator that is not one',
      { podSelector: { matchExpressions: [{ key: 'app', operator: 'Equals', values: ['a'] }] } },
      'spec.podSelector.matchExpressions[0].operator: Unsupported value: "Equals"',
    ],
    [
      'In without values',
      { podSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] } },
      'spec.podSelector.matchExpressions[].values: In and NotIn need at least one value, Exists and DoesNotExist take none (NGW-1)',
    ],
    ['a requestedIP that is not IPv4', { requestedIP: '10.0.0.300' }, 'spec.requestedIP: Invalid value: "10.0.0.300"'],
  ])('NGW-1 NGW-2: %s', async (_what, spec, message) => {
    const r = await apply(gateway(name('bad'), spec));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(message);
  });

  test('NGW-2: spec.externalNetwork and spec.requestedIP are immutable', async () => {
    await applyOk(gateway(name('fixed'), { requestedIP: `${net}20` }));
    const moved = await apply(gateway(name('fixed'), { requestedIP: `${net}21` }));
    expect(moved.output).toContain(
      'spec.requestedIP is immutable: recreate the NATGateway to reserve another address (NGW-2)',
    );
    const renamed = await apply(gateway(name('fixed'), { requestedIP: `${net}20`, externalNetwork: name('other') }));
    expect(renamed.output).toContain('spec.externalNetwork is immutable (NGW-2)');
  });
});

describe('NGW-1, NGW-2: refused by the webhook, naming the field and the holder', () => {
  test('NGW-1: a podSelector with a label key that is not one; a nodeSelector with a bad value', async () => {
    const key = await apply(gateway(name('badkey'), { podSelector: { matchLabels: { 'not a key': 'x' } } }));
    expect(key.ok).toBe(false);
    expect(key.output).toContain(INVALID);
    expect(key.output).toContain('spec.podSelector.matchLabels: "not a key" must be a label name');
    const value = await apply(gateway(name('badvalue'), { nodeSelector: { matchLabels: { zone: 'a b' } } }));
    expect(value.output).toContain('spec.nodeSelector.matchLabels["zone"]: "a b" must be a label value');
  });

  test('NGW-1: a network that does not exist', async () => {
    const r = await apply(gateway(name('nonet'), { externalNetwork: name('nope') }));
    expect(r.ok).toBe(false);
    expect(r.output).toContain(INVALID);
    expect(r.output).toContain(`spec.externalNetwork: "${name('nope')}" names no ExternalNetwork`);
  });

  test('NGW-2: a requested address held by an ElasticIP, and one outside the pools', async () => {
    const held = await apply(gateway(name('held'), { requestedIP: `${net}10` }));
    expect(held.ok).toBe(false);
    expect(held.output).toContain('Error from server (Forbidden)');
    expect(held.output).toContain(
      `spec.requestedIP: "${net}10" is held by ElasticIP team-a/web (ARPAdvertisement ${name('held')}`,
    );
    const outside = await apply(gateway(name('outside'), { requestedIP: `${net}200` }));
    expect(outside.ok).toBe(false);
    expect(outside.output).toContain(`spec.requestedIP: "${net}200"`);
    expect(outside.output).toContain('(NGW-2)');
  });

  test('NGW-1: a valid NATGateway is allowed (positive control)', async () => {
    await applyOk(
      gateway(name('ok'), {
        requestedIP: `${net}30`,
        podSelector: {
          matchLabels: { 'app.kubernetes.io/name': 'crawler' },
          matchExpressions: [{ key: 'tier', operator: 'Exists' }],
        },
        nodeSelector: {
          matchExpressions: [{ key: 'node-role.kubernetes.io/egress', operator: 'In', values: ['true'] }],
        },
      }),
    );
  });
});
