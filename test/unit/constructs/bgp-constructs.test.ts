// BGP-1, BGP-2, BGP-9 at synth time: the cdk8s constructs and the Pulumi components render
// BGPPeer and BGPAdvertisement as the CRDs take them, and refuse, naming the field and the
// conflicting object, what the API server or the webhook would refuse.
import { App, Chart } from 'cdk8s';
import * as pulumi from '@pulumi/pulumi';
import * as cdk8s from '../../../constructs/cdk8s';
import type * as Juneau from '../../../constructs/pulumi';
import type * as Declarations from '../../../constructs/pulumi/declarations';
import { testApp } from '../temp-dir';
import { synthErrors, thrownMessage } from '../thrown';

void pulumi.runtime.setMocks(
  { newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }), call: (args) => args.inputs },
  'juneau-test',
  'unit',
  false,
);
const juneauPulumi = require('../../../constructs/pulumi') as typeof Juneau;
const { resetDeclarations } = require('../../../constructs/pulumi/declarations') as typeof Declarations;

function cdk8sApp(build: (chart: Chart) => void): App {
  const app = testApp();
  build(new Chart(app, 'c'));
  return app;
}
/** A bgp pool and network, an arp network, as most tests need. */
function networks(chart: Chart) {
  const pool = new cdk8s.AddressPool(chart, 'bgp-pool', { advertiseMode: 'bgp', addresses: ['198.51.100.0/24'] });
  const wan = new cdk8s.ExternalNetwork(chart, 'wan', { type: 'bgp', addressPools: [pool] });
  const arpPool = new cdk8s.AddressPool(chart, 'arp-pool', { advertiseMode: 'arp', addresses: ['203.0.113.0/24'] });
  const lan = new cdk8s.ExternalNetwork(chart, 'lan', { type: 'arp', addressPools: [arpPool] });
  return { wan, lan };
}

describe('cdk8s BGPPeer and BGPAdvertisement', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => (warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined)));
  afterEach(() => warn.mockRestore());

  test('BGP-1, BGP-2: render the spec as written, absent defaults left absent', () => {
    const app = cdk8sApp((chart) => {
      const { wan } = networks(chart);
      const tor = new cdk8s.BGPPeer(chart, 'tor', {
        peerAddress: '192.0.2.1',
        peerASN: 65001,
        myASN: 65000,
        holdTime: 9,
      });
      new cdk8s.BGPAdvertisement(chart, 'wan-adv', {
        externalNetworks: [wan],
        peers: [tor],
        communities: ['no-export'],
      });
    });
    expect(synthErrors(app)).toBe('');
    const objects = app.charts[0].toJson() as Array<{ kind: string; spec: object; metadata: { name: string } }>;
    expect(objects.find((o) => o.kind === 'BGPPeer')).toMatchObject({
      metadata: { name: 'tor' },
      spec: { peerAddress: '192.0.2.1', peerASN: 65001, myASN: 65000, holdTime: 9 },
    });
    expect(objects.find((o) => o.kind === 'BGPAdvertisement')?.spec).toEqual({
      externalNetworks: ['wan'],
      peers: ['tor'],
      communities: ['no-export'],
    });
  });

  test('BGP-9: every problem is reported at synth, each naming the field and the object it conflicts with', () => {
    const message = synthErrors(
      cdk8sApp((chart) => {
        const { lan } = networks(chart);
        const tor = new cdk8s.BGPPeer(chart, 'tor', { peerAddress: '198.51.100.7', peerASN: 0, myASN: 65000 });
        new cdk8s.BGPAdvertisement(chart, 'adv', {
          externalNetworks: [lan],
          peers: [tor],
          communities: ['65536:1'],
          largeCommunities: ['1:2'],
          localPref: 120,
        });
      }),
    );
    for (const part of [
      'spec.peerASN: 0 is not an AS number 1-4294967295 (BGP-9) [BGPPeer tor]',
      'spec.peerAddress: "198.51.100.7" is inside AddressPool bgp-pool (198.51.100.0/24)',
      'spec.externalNetworks[0]: "lan" is an ExternalNetwork of type arp; a BGPAdvertisement announces type bgp networks only (BGP-9) [BGPAdvertisement adv]',
      'spec.communities[0]: "65536:1" is not a community',
      'spec.largeCommunities[0]: "1:2" is not a large community',
      'spec.localPref: 120 is sent to iBGP peers only, and every BGPPeer of BGPAdvertisement adv is eBGP: tor',
    ])
      expect(message).toContain(part);
  });

  test('BGP-9: localPref is left to the cluster when a named peer is not declared here', () => {
    const app = cdk8sApp((chart) => {
      const { wan } = networks(chart);
      new cdk8s.BGPAdvertisement(chart, 'adv', { externalNetworks: [wan], peers: ['elsewhere'], localPref: 120 });
    });
    expect(synthErrors(app)).toBe('');
  });
});

describe('Pulumi BGPPeer and BGPAdvertisement', () => {
  beforeEach(() => resetDeclarations());

  test('BGP-1, BGP-2: valid arguments construct', () => {
    const pool = new juneauPulumi.AddressPool('bgp-pool', { advertiseMode: 'bgp', addresses: ['198.51.100.0/24'] });
    const net = new juneauPulumi.ExternalNetwork('wan', { type: 'bgp', addressPools: [pool] });
    const tor = new juneauPulumi.BGPPeer('tor', { peerAddress: '192.0.2.1', peerASN: 65000, myASN: 65000 });
    const adv = new juneauPulumi.BGPAdvertisement('adv', { externalNetworks: [net], peers: [tor], localPref: 150 });
    expect(adv.toObject().spec).toEqual({ externalNetworks: ['wan'], peers: ['tor'], localPref: 150 });
  });

  test('BGP-9: a peer inside a declared pool and localPref to eBGP peers only throw, naming the field and the object', () => {
    new juneauPulumi.AddressPool('bgp-pool', { advertiseMode: 'bgp', addresses: ['198.51.100.0/24'] });
    expect(
      thrownMessage(
        () =>
          new juneauPulumi.BGPPeer('bad', { peerAddress: '198.51.100.9', peerASN: 65001, myASN: 65000, holdTime: 2 }),
      ),
    ).toMatch(
      /spec\.holdTime: 2 must be 0 or 3-65535 seconds[\s\S]*spec\.peerAddress: "198\.51\.100\.9" is inside AddressPool bgp-pool/,
    );
    new juneauPulumi.BGPPeer('tor', { peerAddress: '192.0.2.1', peerASN: 65001, myASN: 65000 });
    expect(
      thrownMessage(
        () => new juneauPulumi.BGPAdvertisement('adv', { externalNetworks: ['wan'], peers: ['tor'], localPref: 1 }),
      ),
    ).toContain('spec.localPref: 1 is sent to iBGP peers only, and every BGPPeer of BGPAdvertisement adv is eBGP: tor');
  });
});

describe('the BGP example (examples/)', () => {
  test('BGP-1..3: the cdk8s example synthesizes a bgp network, a BGPPeer, a BGPAdvertisement and a Service', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const { BGPExample } =
      require('../../../examples/cdk8s/bgp-example') as typeof import('../../../examples/cdk8s/bgp-example');
    const app = testApp();
    new BGPExample(app, 'bgp-example');
    expect(synthErrors(app)).toBe('');
    warn.mockRestore();
    const kinds = (app.charts[0].toJson() as Array<{ kind: string }>).map((o) => o.kind).sort();
    expect(kinds).toEqual(['AddressPool', 'BGPAdvertisement', 'BGPPeer', 'ExternalNetwork', 'Service']);
  });

  test('BGP-1..3: the Pulumi example constructs the same objects', () => {
    resetDeclarations();
    const { declareBGPExample } =
      require('../../../examples/pulumi/bgp-example') as typeof import('../../../examples/pulumi/bgp-example');
    const objects = declareBGPExample();
    expect(objects.advertisement.toObject().spec).toEqual({
      externalNetworks: ['ext-net-bgp'],
      peers: ['tor'],
      communities: ['64512:100'],
    });
    expect(objects.peer.toObject().spec.bfd).toEqual({
      receiveInterval: 100,
      transmitInterval: 100,
      detectMultiplier: 3,
    });
  });
});
