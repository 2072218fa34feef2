// A network reference is an IExternalNetwork in both front-ends: the construct/component itself or
// `ExternalNetwork.fromName()`. Anything else (a plain name, as JavaScript or a cast can still pass)
// fails the synth, or the component's construction, naming the field and the call that fixes it.
// And the Pulumi components' one validate-then-register path (JuneauComponent): nothing invalid is
// registered or recorded for later cross-object checks.
import { Chart } from 'cdk8s';
import { ANNOTATIONS } from '../../../api';
import * as cdk8s from '../../../constructs/cdk8s';
import type * as Juneau from '../../../constructs/pulumi';
import type * as Declarations from '../../../constructs/pulumi/declarations';
import { mockCluster } from '../pulumi-rpcs';
import { testApp } from '../temp-dir';
import { webService } from '../web-service';
import { synthErrors, thrownMessage } from '../thrown';

const registered = mockCluster({}, 'juneau-test', 'unit');
const { AddressPool, ElasticIP, ExternalNetwork, LoadBalancerService } =
  require('../../../constructs/pulumi') as typeof Juneau;
const { declarations, resetDeclarations } = require('../../../constructs/pulumi/declarations') as typeof Declarations;

describe('cdk8s: IExternalNetwork', () => {
  const build = (reference: (chart: Chart) => cdk8s.IExternalNetwork) => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const network = reference(chart);
    new cdk8s.ElasticIP(chart, 'eip', { externalNetwork: network, requestedIP: '10.9.9.9' });
    new cdk8s.LoadBalancerService(chart, 'web', { externalNetwork: network, ...webService() });
    return app;
  };

  test('fromName writes the name on its users and synthesizes nothing itself (EIP-1, SLB-2)', () => {
    const byName = build((c) => cdk8s.ExternalNetwork.fromName(c, 'net', 'ext-net')).synthYaml();
    expect(byName).toContain('externalNetwork: ext-net');
    expect(byName).toContain(`${ANNOTATIONS.loadBalancerExternalNetwork}: ext-net`);
    expect(byName.match(/^kind: \w+/gm)).toEqual(['kind: ElasticIP', 'kind: Service']);
  });

  test('a plain name where a reference belongs fails the synth, naming the field, the construct and the fix', () => {
    const errors = synthErrors(build(() => 'ext-net' as unknown as cdk8s.IExternalNetwork));
    const fix =
      'externalNetwork: "ext-net" is not an ExternalNetwork reference: give ExternalNetwork.fromName(scope, id, "ext-net") for a network declared elsewhere, or the ExternalNetwork itself';
    expect(errors).toContain(`[c/eip] ${fix}\n`);
    expect(errors).toContain(`[c/web] ${fix}`);
  });

  test('fromName with a name that is no object name fails the synth on its users (EIP-1, SLB-2)', () => {
    const errors = synthErrors(build((c) => cdk8s.ExternalNetwork.fromName(c, 'net', 'Ext_Net')));
    expect(errors).toContain('spec.externalNetwork: "Ext_Net"');
    expect(errors).toContain('[ElasticIP default/eip]');
  });

  test('an ExternalNetwork construct is one and keeps the synth-time EIP-3 check; a reference by name leaves it to the cluster', () => {
    const declared = (c: Chart) =>
      new cdk8s.ExternalNetwork(c, 'ext-net', {
        type: 'arp',
        addressPools: [new cdk8s.AddressPool(c, 'p', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'] })],
      });
    expect(synthErrors(build(declared))).toContain(
      'spec.requestedIP: "10.9.9.9" is not inside any arp AddressPool of ExternalNetwork ext-net',
    );
    expect(synthErrors(build((c) => cdk8s.ExternalNetwork.fromName(c, 'net', 'ext-net')))).toBe('');
  });
});

describe('Pulumi: IExternalNetwork and the shared validate-then-register path', () => {
  beforeEach(() => resetDeclarations());

  test('fromName finds the network the program declares when the reference is used (EIP-3, SLB-2)', () => {
    const reference = ExternalNetwork.fromName('net-a');
    expect(reference.definition()).toBeUndefined();
    new ElasticIP('before', { externalNetwork: reference, requestedIP: '10.9.9.9' });
    const pool = new AddressPool('pool-a', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'] });
    new ExternalNetwork('net-a', { type: 'arp', addressPools: [pool] });
    expect(reference.definition()?.spec.addressPools).toEqual(['pool-a']);
    expect(
      thrownMessage(() => new ElasticIP('after', { externalNetwork: reference, requestedIP: '10.9.9.9' })),
    ).toContain('ElasticIP after is invalid');
    expect(
      thrownMessage(
        () =>
          new LoadBalancerService('web', {
            externalNetwork: ExternalNetwork.fromName('net-a'),
            requestedIP: '10.9.9.9',
            ports: [{ port: 80 }],
            selector: { a: 'b' },
          }),
      ),
    ).toContain('not inside any arp AddressPool of ExternalNetwork net-a');
  });

  test('a plain name where a reference belongs throws at construction, naming the field and the fix; nothing is registered', () => {
    const before = registered.length;
    const plain = 'net-a' as unknown as Juneau.IExternalNetwork;
    expect(thrownMessage(() => new ElasticIP('plain', { externalNetwork: plain }))).toContain(
      'ElasticIP plain is invalid (1 problem):\n  - externalNetwork: "net-a" is not an ExternalNetwork reference: give ExternalNetwork.fromName("net-a") for a network declared elsewhere, or the ExternalNetwork itself',
    );
    expect(
      thrownMessage(
        () =>
          new LoadBalancerService('plain-web', { externalNetwork: plain, ports: [{ port: 80 }], selector: { a: 'b' } }),
      ),
    ).toContain('externalNetwork: "net-a" is not an ExternalNetwork reference');
    expect(registered.slice(before)).toEqual([]);
    expect(declarations().objects).toEqual([]);
  });

  test('an invalid component throws naming its kind, and is neither registered nor recorded (AP-2 against it does not fire)', () => {
    const before = registered.length;
    expect(
      thrownMessage(() => new AddressPool('bad', { advertiseMode: 'arp', addresses: ['10.1.0.0/24', '10.1.0.0/33'] })),
    ).toContain('AddressPool bad is invalid');
    expect(declarations().addressPools).toEqual([]);
    expect(registered.slice(before).filter((r) => r.name === 'bad')).toEqual([]);
    const good = new AddressPool('good', { advertiseMode: 'arp', addresses: ['10.1.0.0/24'] });
    expect(declarations().addressPools.map((p) => p.metadata.name)).toEqual(['good']);
    expect(good.name).toBe('good');
    expect(good.toObject().spec.addresses).toEqual(['10.1.0.0/24']);
  });
});
