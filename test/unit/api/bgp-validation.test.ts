// BGP-1, BGP-2, BGP-3, BGP-9: the pure rules of BGPPeers and BGPAdvertisements, shared by the
// constructs (synth time) and the webhooks, and the node selection both sides read.
import {
  announcingPeers,
  checkAdvertisedNetworks,
  checkAdvertisementSpec,
  checkLocalPref,
  checkPeerAddressOutsidePools,
  checkPeerSpec,
  formatIssue,
  type AdvertisementView,
  type PeerView,
} from '../../../api/validation';
import { sessionTimers } from '../../../api';

const peer = (over: Partial<PeerView> = {}): PeerView => ({
  name: 'tor',
  peerAddress: '192.0.2.1',
  peerASN: 65001,
  myASN: 65000,
  ...over,
});
const ad = (over: Partial<AdvertisementView> = {}): AdvertisementView => ({
  name: 'adv',
  externalNetworks: ['wan'],
  ...over,
});
const messages = (issues: ReturnType<typeof checkPeerSpec>) => issues.map(formatIssue);

describe("BGP-1, BGP-9: a BGPPeer's own fields", () => {
  test('a plain eBGP peer is valid; timers default to 90 s and a third of it', () => {
    expect(checkPeerSpec(peer())).toEqual([]);
    expect(sessionTimers({ peerAddress: '192.0.2.1', peerASN: 1, myASN: 2 })).toEqual({
      holdTime: 90,
      keepaliveTime: 30,
    });
    expect(sessionTimers({ peerAddress: '192.0.2.1', peerASN: 1, myASN: 2, holdTime: 9 })).toEqual({
      holdTime: 9,
      keepaliveTime: 3,
    });
  });

  test.each([
    [{ peerAddress: '192.0.2' }, 'spec.peerAddress: "192.0.2" is not an IPv4 address (BGP-1, BGP-9)'],
    [{ peerASN: 0 }, 'spec.peerASN: 0 is not an AS number 1-4294967295 (BGP-9)'],
    [{ myASN: 4294967296 }, 'spec.myASN: 4294967296 is not an AS number 1-4294967295 (BGP-9)'],
    [{ holdTime: 2 }, 'spec.holdTime: 2 must be 0 or 3-65535 seconds (BGP-1)'],
    [
      { holdTime: 9, keepaliveTime: 9 },
      'spec.keepaliveTime: 9 must be at least 1 and less than spec.holdTime (9) (BGP-1)',
    ],
    [{ keepaliveTime: 90 }, 'spec.keepaliveTime: 90 must be at least 1 and less than spec.holdTime (90) (BGP-1)'],
    [{ holdTime: 0, keepaliveTime: 1 }, 'spec.keepaliveTime: 1 must be 0 when spec.holdTime is 0 (BGP-1)'],
    [
      { myASN: 65001, ebgpMultiHop: true },
      'spec.ebgpMultiHop: true is for eBGP sessions only, and peerASN equals myASN (65001) (BGP-1)',
    ],
    [{ bfd: { receiveInterval: 5 } }, 'spec.bfd.receiveInterval: 5 must be 10-60000 ms (BGP-1)'],
    [{ bfd: { detectMultiplier: 1 } }, 'spec.bfd.detectMultiplier: 1 must be 2-255 (BGP-1)'],
  ])('BGP-9: %j is refused, naming the field', (over, message) => {
    expect(messages(checkPeerSpec(peer(over as Partial<PeerView>)))).toEqual([message]);
  });

  test('BGP-9: a peer address inside an AddressPool is refused, naming the pool', () => {
    const pools = [
      { name: 'lan', advertiseMode: 'bgp', addresses: ['192.0.2.0/28'] },
      { name: 'other', advertiseMode: 'arp', addresses: ['198.51.100.0/24'] },
    ];
    expect(messages(checkPeerAddressOutsidePools(peer(), pools))).toEqual([
      'spec.peerAddress: "192.0.2.1" is inside AddressPool lan (192.0.2.0/28), which hands out its addresses; a BGP neighbour must be outside every pool (BGP-9)',
    ]);
    expect(checkPeerAddressOutsidePools(peer({ peerAddress: '192.0.2.16' }), pools)).toEqual([]);
  });
});

describe("BGP-2, BGP-9: a BGPAdvertisement's own fields", () => {
  test('communities, large communities, localPref and aggregation in range are valid', () => {
    expect(
      checkAdvertisementSpec(
        ad({
          communities: ['65000:100', 'no-export'],
          largeCommunities: ['4294967295:1:2'],
          localPref: 200,
          aggregationLength: 24,
        }),
      ),
    ).toEqual([]);
  });
  test.each([
    [{ communities: ['65536:1'] }, 'spec.communities[0]: "65536:1" is not a community'],
    [{ communities: ['no-such'] }, 'spec.communities[0]: "no-such" is not a community'],
    [{ largeCommunities: ['1:2'] }, 'spec.largeCommunities[0]: "1:2" is not a large community'],
    [{ largeCommunities: ['4294967296:0:0'] }, 'spec.largeCommunities[0]: "4294967296:0:0" is not a large community'],
    [{ aggregationLength: 33 }, 'spec.aggregationLength: 33 must be 0-32 (BGP-2)'],
    [
      { externalNetworks: [] },
      'spec.externalNetworks: of BGPAdvertisement adv must name at least one bgp ExternalNetwork (BGP-2)',
    ],
  ])('BGP-9: %j is refused, naming the field', (over, message) => {
    const found = checkAdvertisementSpec(ad(over as Partial<AdvertisementView>)).map(formatIssue);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(message);
  });

  test('BGP-9: a network of type arp is refused, naming it; a bgp or unknown one is not judged', () => {
    const networks = new Map([
      ['wan', { name: 'wan', type: 'bgp' }],
      ['lan', { name: 'lan', type: 'arp' }],
    ]);
    expect(checkAdvertisedNetworks(ad({ externalNetworks: ['wan', 'later'] }), networks)).toEqual([]);
    expect(checkAdvertisedNetworks(ad({ externalNetworks: ['wan', 'lan'] }), networks).map(formatIssue)).toEqual([
      'spec.externalNetworks[1]: "lan" is an ExternalNetwork of type arp; a BGPAdvertisement announces type bgp networks only (BGP-9)',
    ]);
  });

  test('BGP-9: localPref with only eBGP peers is refused, naming the peers; one iBGP peer, or no peer yet, allows it', () => {
    const ebgp = peer();
    const ibgp = peer({ name: 'rr', peerASN: 65000 });
    expect(checkLocalPref(ad({ localPref: 150 }), [ebgp]).map(formatIssue)).toEqual([
      'spec.localPref: 150 is sent to iBGP peers only, and every BGPPeer of BGPAdvertisement adv is eBGP: tor (peerASN 65001, myASN 65000); remove localPref or add an iBGP peer (BGP-2, BGP-9)',
    ]);
    expect(checkLocalPref(ad({ localPref: 150 }), [ebgp, ibgp])).toEqual([]);
    expect(checkLocalPref(ad({ localPref: 150, peers: ['tor'] }), [ebgp, ibgp])).toHaveLength(1);
    expect(checkLocalPref(ad({ localPref: 150 }), [])).toEqual([]);
  });
});

describe('BGP-1..3: which node announces a network to which peer', () => {
  const rack = { name: 'n1', labels: { rack: 'a' } };
  const other = { name: 'n2', labels: { rack: 'b' } };
  const torA = peer({ name: 'tor-a', nodeSelector: { matchLabels: { rack: 'a' } } });
  const core = peer({ name: 'core', peerAddress: '192.0.2.9' });

  test('an advertisement without peers or selector: every peer that selects the node', () => {
    expect(announcingPeers('wan', rack, [ad()], [torA, core]).map((p) => p.name)).toEqual(['core', 'tor-a']);
    expect(announcingPeers('wan', other, [ad()], [torA, core]).map((p) => p.name)).toEqual(['core']);
  });
  test("the advertisement's nodeSelector and peers narrow it; another network is not announced", () => {
    const narrow = ad({
      peers: ['tor-a'],
      nodeSelector: { matchExpressions: [{ key: 'rack', operator: 'In', values: ['a'] }] },
    });
    expect(announcingPeers('wan', rack, [narrow], [torA, core]).map((p) => p.name)).toEqual(['tor-a']);
    expect(announcingPeers('wan', other, [narrow], [torA, core])).toEqual([]);
    expect(announcingPeers('lan', rack, [ad()], [torA, core])).toEqual([]);
  });
});
