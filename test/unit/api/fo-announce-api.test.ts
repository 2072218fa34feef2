// FO-1: spec.arp.announceOnMove of an ExternalNetwork, as the constructs render and check it at
// synth time (the CRD's CEL rule is proven on a real API server in test/cluster/fo-announce-cel).
import { App, Chart } from 'cdk8s';
import * as YAML from 'yaml';
import { externalNetworkKind } from '../../../api';
import { checkNetworkSpec, formatIssue } from '../../../api/validation';
import { AddressPool, ExternalNetwork } from '../../../constructs/cdk8s';
import { testApp } from '../temp-dir';

type Obj = { kind: string; spec?: Record<string, unknown> };
const synth = (app: App): Obj[] =>
  YAML.parseAllDocuments(app.synthYaml())
    .map((d) => d.toJSON() as Obj)
    .filter(Boolean);

describe('FO-1 announceOnMove in the API and the cdk8s constructs', () => {
  test('FO-1: absent unless set (the seed default, ARP-8); true and false render as spec.arp.announceOnMove', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const pool = new AddressPool(chart, 'p1', { advertiseMode: 'arp', addresses: ['10.9.1.0/24'] });
    const pool2 = new AddressPool(chart, 'p2', { advertiseMode: 'arp', addresses: ['10.9.2.0/24'] });
    const pool3 = new AddressPool(chart, 'p3', { advertiseMode: 'arp', addresses: ['10.9.3.0/24'] });
    new ExternalNetwork(chart, 'plain', { type: 'arp', addressPools: [pool] });
    new ExternalNetwork(chart, 'on', { type: 'arp', addressPools: [pool2], announceOnMove: true });
    new ExternalNetwork(chart, 'off', { type: 'arp', addressPools: [pool3], announceOnMove: false });
    const specs = synth(app)
      .filter((o) => o.kind === 'ExternalNetwork')
      .map((o) => o.spec);
    expect(specs[0]).not.toHaveProperty('arp');
    expect(specs[1]).toMatchObject({ arp: { announceOnMove: true } });
    expect(specs[2]).toMatchObject({ arp: { announceOnMove: false } });
  });

  test('FO-1: announceOnMove on a bgp network fails synth naming the field and the network', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const pool = new AddressPool(chart, 'bp', { advertiseMode: 'bgp', addresses: ['10.9.4.0/24'] });
    new ExternalNetwork(chart, 'bgp-net', { type: 'bgp', addressPools: [pool], announceOnMove: true });
    expect(() => app.synthYaml()).toThrow(
      /spec\.arp: \{"announceOnMove":true\} of ExternalNetwork bgp-net is for type arp networks only.*FO-1/,
    );
  });

  test('FO-1: the shared check refuses spec.arp on bgp and accepts it on arp', () => {
    expect(checkNetworkSpec({ name: 'n', type: 'arp', addressPools: ['a'], arp: { announceOnMove: true } })).toEqual(
      [],
    );
    expect(checkNetworkSpec({ name: 'n', type: 'bgp', addressPools: ['a'], arp: {} }).map(formatIssue)).toEqual([
      'spec.arp: {} of ExternalNetwork n is for type arp networks only, and this one has type bgp (FO-1)',
    ]);
  });

  test('FO-1: the CRD schema has the boolean and the CEL rule tying spec.arp to type arp', () => {
    const spec = externalNetworkKind.spec.toOpenAPI();
    expect(spec.properties?.arp?.properties?.announceOnMove?.type).toBe('boolean');
    expect(spec['x-kubernetes-validations']).toContainEqual(
      expect.objectContaining({ rule: "self.type == 'arp' || !has(self.arp)" }),
    );
  });
});
