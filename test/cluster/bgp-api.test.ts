// BGPPeer, BGPAdvertisement and BGPNodeState on the real API server: the CRDs' OpenAPI and CEL
// refuse each bad field by itself, naming it (BGP-1, BGP-2, BGP-9), and the Juneau webhook refuses
// what needs other objects, naming the field and the conflicting object (BGP-9): a peer address
// inside an AddressPool, an advertisement of an arp network, localPref with only eBGP peers.
import { API_VERSION } from '../../api';
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import { JuneauResources } from '../../runtime/kube/resources';
import type { ResourceType } from '../../runtime/kube/resources';
import { rejection, testRest } from './fixture';
import {
  addressPool,
  apply,
  applyOk,
  deleteClusterObjects,
  externalNetwork,
  randomId,
  randomSubnet,
  startTestWebhook,
  type Manifest,
  type TestWebhook,
} from './webhook-fixture';

const rest = testRest();
const u = randomId();
const name = (s: string) => `${s}-${u}`;
const created: Array<[ResourceType, string]> = [];
const create = (type: ResourceType, kind: string, n: string, spec: object) => {
  created.push([type, n]);
  return rest.create(type, { apiVersion: API_VERSION, kind, metadata: { name: n }, spec });
};
const peerSpec = (over: object = {}) => ({ peerAddress: '192.0.2.1', peerASN: 65001, myASN: 65000, ...over });
const createPeer = (n: string, over: object = {}) => create(JuneauResources.bgpPeers, 'BGPPeer', n, peerSpec(over));
const createAd = (n: string, spec: object) =>
  create(JuneauResources.bgpAdvertisements, 'BGPAdvertisement', n, { externalNetworks: ['wan'], ...spec });

afterAll(async () => {
  for (const [type, n] of created) await deleteClusterObjects(type, [n]);
});

describe('BGPPeer CEL and OpenAPI (BGP-1, BGP-9)', () => {
  test('BGP-1: a peer with defaults and one with every field are accepted', async () => {
    await createPeer(name('plain'));
    await createPeer(name('full'), {
      holdTime: 9,
      keepaliveTime: 3,
      ebgpMultiHop: true,
      passwordSecretRef: { name: 'tor-password' },
      bfd: { receiveInterval: 100, transmitInterval: 100, detectMultiplier: 3 },
      nodeSelector: { matchLabels: { rack: 'a' } },
    });
  });

  test.each([
    ['a peerAddress that is not IPv4', { peerAddress: '192.0.2' }, 'spec.peerAddress'],
    [
      'peerASN 0',
      { peerASN: 0 },
      'spec.peerASN: Invalid value: 0: spec.peerASN in body should be greater than or equal to 1',
    ],
    [
      'myASN above 4294967295',
      { myASN: 4294967296 },
      'spec.myASN: Invalid value: 4294967296: spec.myASN in body should be less than or equal to 4294967295',
    ],
    ['holdTime 2', { holdTime: 2 }, 'spec.holdTime must be 0 or 3-65535 seconds (BGP-1)'],
    [
      'keepaliveTime not below holdTime',
      { holdTime: 9, keepaliveTime: 9 },
      'spec.keepaliveTime must be less than spec.holdTime',
    ],
    [
      'keepaliveTime at the default hold time',
      { keepaliveTime: 90 },
      'spec.keepaliveTime must be less than spec.holdTime',
    ],
    ['ebgpMultiHop on iBGP', { myASN: 65001, ebgpMultiHop: true }, 'spec.ebgpMultiHop is for eBGP sessions only'],
    ['a BFD multiplier of 1', { bfd: { detectMultiplier: 1 } }, 'spec.bfd.detectMultiplier'],
  ])('BGP-9: %s is refused, naming the field', async (_what, over, message) => {
    const err = await rejection(createPeer(name(`bad-${randomId()}`), over));
    expect(err.code).toBe(422);
    expect(err.message).toContain(message);
  });

  test('BGP-1: peerAddress, peerASN and myASN are required', async () => {
    const err = await rejection(create(JuneauResources.bgpPeers, 'BGPPeer', name('empty'), {}));
    for (const f of ['spec.peerAddress', 'spec.peerASN', 'spec.myASN'])
      expect(err.message).toContain(`${f}: Required value`);
  });
});

describe('BGPAdvertisement CEL and OpenAPI (BGP-2, BGP-9)', () => {
  test('BGP-2: communities, well-known names, large communities, localPref and aggregation are accepted', async () => {
    await createAd(name('ok'), {
      communities: ['65000:100', 'no-export'],
      largeCommunities: ['4294967295:1:2'],
      localPref: 200,
      aggregationLength: 24,
    });
  });

  test.each([
    [
      'a community number above 65535',
      { communities: ['65536:1'] },
      'spec.communities[]: each number of a community is 0-65535',
    ],
    ['an unknown community name', { communities: ['no-such'] }, 'spec.communities[0]'],
    ['a large community of two numbers', { largeCommunities: ['1:2'] }, 'spec.largeCommunities[0]'],
    [
      'a large community number above 32 bits',
      { largeCommunities: ['4294967296:0:0'] },
      'spec.largeCommunities[]: each number of a large community is 0-4294967295',
    ],
    ['aggregationLength 33', { aggregationLength: 33 }, 'spec.aggregationLength'],
    ['no network', { externalNetworks: [] }, 'spec.externalNetworks'],
  ])('BGP-9: %s is refused, naming the field', async (_what, spec, message) => {
    const err = await rejection(createAd(name(`bad-${randomId()}`), spec));
    expect(err.code).toBe(422);
    expect(err.message).toContain(message);
  });
});

describe('BGPNodeState (BGP-7)', () => {
  test('BGP-7: spec.nodeName is immutable and selectable; status takes per-peer session state', async () => {
    const n = name('node');
    await create(JuneauResources.bgpNodeStates, 'BGPNodeState', n, { nodeName: n });
    const err = await rejection(
      rest.patch(JuneauResources.bgpNodeStates, undefined, n, 'merge', { spec: { nodeName: 'x' } }),
    );
    expect(err.message).toContain('spec is immutable: spec.nodeName names the node (BGP-7)');
    await rest.patch(
      JuneauResources.bgpNodeStates,
      undefined,
      n,
      'merge',
      {
        status: {
          peers: [{ peer: 'tor', state: 'Established', prefixesSent: 3 }],
          announced: { count: 3, addresses: ['198.18.0.1-198.18.0.3'] },
        },
      },
      { subresource: 'status' },
    );
    const bad = await rejection(
      rest.patch(
        JuneauResources.bgpNodeStates,
        undefined,
        n,
        'merge',
        { status: { peers: [{ peer: 'tor', state: 'Up' }] } },
        { subresource: 'status' },
      ),
    );
    expect(bad.message).toContain('status.peers[0].state: Unsupported value: "Up"');
    const listed = await rest.list(JuneauResources.bgpNodeStates, { fieldSelector: `spec.nodeName=${n}` });
    expect(listed.items.map((o) => o.metadata?.name)).toEqual([n]);
  });
});

describe('the BGP webhooks (BGP-9)', () => {
  let webhook: TestWebhook;
  let L: Record<string, string>;
  const net = randomSubnet();
  const objects = (kind: string, n: string, spec: object): Manifest => ({
    apiVersion: API_VERSION,
    kind,
    metadata: { name: n, labels: L },
    spec,
  });
  const DENIED = (w: string) => `admission webhook "${w}.juneau.loutres.me" denied the request`;

  beforeAll(async () => {
    webhook = await startTestWebhook('bgp', { caches: liveWebhookCaches(rest) });
    L = webhook.labels;
    created.push([JuneauResources.addressPools, name('pool')], [JuneauResources.externalNetworks, name('arp-net')]);
    await applyOk(addressPool(name('pool'), [`${net}0/28`], L, 'bgp'));
    await applyOk(addressPool(name('arp-pool'), [`${net}64/28`], L, 'arp'));
    created.push([JuneauResources.addressPools, name('arp-pool')]);
    await applyOk(externalNetwork(name('arp-net'), [name('arp-pool')], L, 'arp'));
  });
  afterAll(async () => {
    await webhook?.stop();
  });

  test('BGP-9: a peer address inside an AddressPool is refused, naming the pool; outside, accepted', async () => {
    const bad = await apply(objects('BGPPeer', name('in-pool'), peerSpec({ peerAddress: `${net}5` })));
    expect(bad.ok).toBe(false);
    expect(bad.output).toContain(DENIED('bgppeers'));
    expect(bad.output).toContain(
      `spec.peerAddress: "${net}5" is inside AddressPool ${name('pool')} (${net}0/28), which hands out its addresses; a BGP neighbour must be outside every pool (BGP-9)`,
    );
    expect(bad.output).toMatch(/Error from server \(Forbidden\)/);
    created.push([JuneauResources.bgpPeers, name('ebgp')]);
    await applyOk(objects('BGPPeer', name('ebgp'), peerSpec({ peerAddress: `${net}200` })));
  });

  test('BGP-9: an advertisement of an arp network is refused, naming the network and its type', async () => {
    const bad = await apply(objects('BGPAdvertisement', name('adv-arp'), { externalNetworks: [name('arp-net')] }));
    expect(bad.ok).toBe(false);
    expect(bad.output).toContain('The request is invalid');
    expect(bad.output).toContain(
      `spec.externalNetworks[0]: "${name('arp-net')}" is an ExternalNetwork of type arp; a BGPAdvertisement announces type bgp networks only (BGP-9)`,
    );
  });

  test('BGP-9: localPref with only eBGP peers is refused, naming the peer; with an iBGP peer it is accepted', async () => {
    const spec = { externalNetworks: ['not-yet'], peers: [name('ebgp')], localPref: 150 };
    const bad = await apply(objects('BGPAdvertisement', name('adv-lp'), spec));
    expect(bad.ok).toBe(false);
    expect(bad.output).toContain(
      `spec.localPref: 150 is sent to iBGP peers only, and every BGPPeer of BGPAdvertisement ${name('adv-lp')} is eBGP: ${name('ebgp')} (peerASN 65001, myASN 65000)`,
    );
    created.push([JuneauResources.bgpPeers, name('ibgp')], [JuneauResources.bgpAdvertisements, name('adv-lp')]);
    await applyOk(objects('BGPPeer', name('ibgp'), peerSpec({ peerAddress: `${net}201`, peerASN: 65000 })));
    await applyOk(objects('BGPAdvertisement', name('adv-lp'), { ...spec, peers: [name('ebgp'), name('ibgp')] }));
  });
});
