// The NATGateway construct (cdk8s) and its example: what it synthesizes, and every problem of its
// props at synth naming the field and the value (NGW-1, NGW-2).
import { App, Chart, Testing } from 'cdk8s';
import { AddressPool, ExternalNetwork, NATGateway } from '../../../constructs/cdk8s';
import { NatGatewayExample } from '../../../examples/cdk8s/nat-gateway';

const synth = (build: (chart: Chart) => void) => {
  const app = Testing.app();
  const chart = new Chart(app, 'c');
  build(chart);
  return () => app.synthYaml();
};

describe('NATGateway (cdk8s)', () => {
  it('NGW-1: renders the spec as given, in its namespace', () => {
    const chart = Testing.chart();
    const pool = new AddressPool(chart, 'pool', { advertiseMode: 'arp', addresses: ['10.225.32.0/28'] });
    const net = new ExternalNetwork(chart, 'net', { type: 'arp', addressPools: [pool] });
    const gw = new NATGateway(chart, 'crawlers', {
      metadata: { namespace: 'team-a' },
      externalNetwork: net,
      podSelector: { matchLabels: { app: 'crawler' } },
      requestedIP: '10.225.32.5',
    });
    expect(gw.toObject()).toEqual({
      apiVersion: 'juneau.loutres.me/v1alpha1',
      kind: 'NATGateway',
      metadata: { name: 'crawlers', namespace: 'team-a' },
      spec: { externalNetwork: 'net', podSelector: { matchLabels: { app: 'crawler' } }, requestedIP: '10.225.32.5' },
    });
    expect(Testing.synth(chart).find((o) => o.kind === 'NATGateway')).toEqual(gw.toObject());
  });

  it('NGW-1 NGW-2: a bad selector and an address outside the pools fail the synth, each named', () => {
    const run = synth((chart) => {
      const pool = new AddressPool(chart, 'pool', { advertiseMode: 'arp', addresses: ['10.225.32.0/28'] });
      const net = new ExternalNetwork(chart, 'net', { type: 'arp', addressPools: [pool] });
      new NATGateway(chart, 'bad', {
        externalNetwork: net,
        podSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] },
        nodeSelector: { matchLabels: { 'bad key': 'x' } },
        requestedIP: '10.9.9.9',
      });
    });
    expect(run).toThrow(
      /spec\.podSelector\.matchExpressions\[0\]\.values: .*must hold at least one value for operator In \(NGW-1\)/,
    );
    expect(run).toThrow(/spec\.nodeSelector\.matchLabels: "bad key" must be a label name/);
    expect(run).toThrow(/spec\.requestedIP: "10\.9\.9\.9"/);
  });

  it('NGW-2: an address requested by two NATGateways of one app is refused, naming the other', () => {
    const run = synth((chart) => {
      const pool = new AddressPool(chart, 'pool', { advertiseMode: 'arp', addresses: ['10.225.32.0/28'] });
      const net = new ExternalNetwork(chart, 'net', { type: 'arp', addressPools: [pool] });
      new NATGateway(chart, 'one', { externalNetwork: net, podSelector: {}, requestedIP: '10.225.32.5' });
      new NATGateway(chart, 'two', { externalNetwork: net, podSelector: {}, requestedIP: '10.225.32.5' });
    });
    expect(run).toThrow(/spec\.requestedIP: "10\.225\.32\.5" is also requested by NATGateway default\/one/);
  });

  it('the example synthesizes one NATGateway', () => {
    const app = new App({ outdir: Testing.app().outdir });
    const example = new NatGatewayExample(app, 'nat-gateway');
    expect(example.gateway.toObject().spec).toMatchObject({
      externalNetwork: 'ext-net-arp',
      requestedIP: '10.225.32.250',
    });
    expect(Testing.synth(example).map((o) => o.kind)).toEqual(['NATGateway']);
  });
});
