// Checks across one program, the same in cdk8s and Pulumi (api/validation/program.ts): two
// objects that would overwrite each other on apply, one address requested twice (EIP-3, SLB-2), a
// network given by name resolved against the program, and a warning when the program does not
// declare it. The Pulumi registry is per stack and reset through the public resetDeclarations().
import * as pulumi from '@pulumi/pulumi';
import { ApiObject, Chart } from 'cdk8s';
import {
  checkDuplicateDeclaration,
  checkRequestedAddressClash,
  undeclaredNetworkWarning,
} from '../../../api/validation';
import * as cdk8s from '../../../constructs/cdk8s';
import { WARNING_METADATA } from '../../../constructs/cdk8s/base';
import type * as Juneau from '../../../constructs/pulumi';
import { mockCluster } from '../pulumi-rpcs';
import { testApp } from '../temp-dir';
import { webService } from '../web-service';
import { synthErrors, thrownMessage } from '../thrown';

// Mocks: no Pulumi engine runs in unit tests (set before the components are loaded).
mockCluster({}, 'juneau-test', 'unit');
const juneau = require('../../../constructs/pulumi') as typeof Juneau;

const DUPLICATE = 'one would overwrite the other on apply, so give them different names';

describe('the shared checks (api/validation/program.ts)', () => {
  const pool = (path: string, name = 'pool', namespace = '') => ({
    group: 'juneau.loutres.me',
    kind: 'AddressPool',
    namespace,
    name,
    path,
  });

  test('a second declaration of one kind, namespace and name names both paths; the first and other identities pass', () => {
    const all = [pool('a/pool'), pool('b/other', 'other')];
    expect(checkDuplicateDeclaration(pool('a/pool'), all)).toEqual([]);
    expect(checkDuplicateDeclaration(pool('c/x', 'pool', 'team-a'), all)).toEqual([]);
    expect(checkDuplicateDeclaration({ ...pool('c/x'), kind: 'ExternalNetwork' }, all)).toEqual([]);
    expect(checkDuplicateDeclaration({ ...pool('c/x'), group: 'example.com' }, all)).toEqual([]);
    expect(checkDuplicateDeclaration(pool('b/pool'), all)).toEqual([
      {
        field: 'metadata.name',
        value: 'pool',
        message: `is declared twice: AddressPool pool at b/pool and at a/pool; ${DUPLICATE}`,
      },
    ]);
  });

  test('EIP-3, SLB-2: one address requested twice names both requesters', () => {
    const eip = { field: 'spec.requestedIP', address: '10.0.0.5', owner: 'ElasticIP default/a', path: 'c/a' };
    const svc = { field: 'metadata.annotations[x]', address: '10.0.0.5', owner: 'Service default/web', path: 'c/web' };
    expect(checkRequestedAddressClash(eip, [eip, { ...svc, address: '10.0.0.6' }])).toEqual([]);
    expect(checkRequestedAddressClash(svc, [eip, svc])[0].message).toBe(
      'is also requested by ElasticIP default/a (c/a); an address is held by one ElasticIP or Service at a time, so Service default/web (c/web) would stay Pending (EIP-3, SLB-2)',
    );
  });
});

describe('cdk8s', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockRestore());

  const network = (chart: Chart, addresses = ['10.0.0.0/24']) =>
    new cdk8s.ExternalNetwork(chart, 'ext-net', {
      type: 'arp',
      addressPools: [new cdk8s.AddressPool(chart, 'pool', { advertiseMode: 'arp', addresses })],
    });

  test('two charts each with AddressPool "pool": synth fails naming both construct paths', () => {
    const app = testApp();
    new cdk8s.AddressPool(new Chart(app, 'one'), 'pool', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'] });
    new cdk8s.AddressPool(new Chart(app, 'two'), 'pool', { advertiseMode: 'arp', addresses: ['10.1.0.0/24'] });
    expect(synthErrors(app)).toContain(
      `metadata.name: "pool" is declared twice: AddressPool pool at two/pool and at one/pool; ${DUPLICATE}`,
    );
  });

  test('namespaced kinds collide only within one namespace (the chart namespace counts)', () => {
    const app = testApp();
    const net = network(new Chart(app, 'net'));
    new cdk8s.ElasticIP(new Chart(app, 'a', { namespace: 'team-a' }), 'eip', { externalNetwork: net });
    new cdk8s.ElasticIP(new Chart(app, 'b', { namespace: 'team-b' }), 'eip', { externalNetwork: net });
    expect(synthErrors(app)).toBe('');
    new cdk8s.ElasticIP(new Chart(app, 'c'), 'eip', { externalNetwork: net, metadata: { namespace: 'team-a' } });
    expect(synthErrors(app)).toContain(
      'metadata.name: "eip" is declared twice: ElasticIP team-a/eip at c/eip and at a/eip',
    );
  });

  test("a LoadBalancerService collides with another core Service of its name in the app, not with another group's Service", () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    new cdk8s.LoadBalancerService(chart, 'web', { externalNetwork: network(chart), ...webService() });
    new ApiObject(chart, 'knative', {
      apiVersion: 'serving.knative.dev/v1',
      kind: 'Service',
      metadata: { name: 'web' },
    });
    expect(synthErrors(app)).toBe('');
    new ApiObject(chart, 'plain', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' } });
    expect(synthErrors(app)).toContain('metadata.name: "web" is declared twice: Service web at');
  });

  test('EIP-3: the same requestedIP on two ElasticIPs fails naming both', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const net = network(chart);
    new cdk8s.ElasticIP(chart, 'a', { externalNetwork: net, requestedIP: '10.0.0.5' });
    new cdk8s.ElasticIP(chart, 'b', { externalNetwork: net, requestedIP: '10.0.0.5' });
    const errors = synthErrors(app);
    expect(errors).toContain('spec.requestedIP: "10.0.0.5" is also requested by ElasticIP default/b (c/b)');
    expect(errors).toContain('spec.requestedIP: "10.0.0.5" is also requested by ElasticIP default/a (c/a)');
  });

  test('EIP-3, SLB-2: an ElasticIP and a Service asking for one address fail naming both', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const net = network(chart);
    new cdk8s.ElasticIP(chart, 'a', { externalNetwork: net, requestedIP: '10.0.0.5' });
    new cdk8s.LoadBalancerService(chart, 'web', { externalNetwork: net, requestedIP: '10.0.0.5', ...webService() });
    expect(synthErrors(app)).toContain(
      'requestedIP (metadata.annotations[juneau.loutres.me/load-balancer-requested-ip]): "10.0.0.5" is also requested by ElasticIP default/a (c/a); an address is held by one ElasticIP or Service at a time, so Service default/web (c/web) would stay Pending (EIP-3, SLB-2)',
    );
  });

  test('EIP-3: a network referenced by name that the app declares (even later) is resolved and checked', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    new cdk8s.ElasticIP(chart, 'eip', {
      externalNetwork: cdk8s.ExternalNetwork.fromName(chart, 'ref', 'ext-net'),
      requestedIP: '10.9.9.9',
    });
    network(chart);
    expect(synthErrors(app)).toContain(
      'spec.requestedIP: "10.9.9.9" is not inside any arp AddressPool of ExternalNetwork ext-net',
    );
    expect(warn).not.toHaveBeenCalled();
  });

  test('a network name the app does not declare synthesizes with a warning that the cluster will decide', () => {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const elsewhere = cdk8s.ExternalNetwork.fromName(chart, 'ref', 'elsewhere');
    const eip = new cdk8s.ElasticIP(chart, 'eip', { externalNetwork: elsewhere, requestedIP: '10.9.9.9' });
    new cdk8s.LoadBalancerService(chart, 'web', { externalNetwork: elsewhere, ...webService() });
    expect(synthErrors(app)).toBe('');
    expect(warn.mock.calls).toEqual([
      [`[warning] c/eip: ${undeclaredNetworkWarning('ElasticIP eip', 'elsewhere')}`],
      [`[warning] c/web: ${undeclaredNetworkWarning('Service web', 'elsewhere')}`],
    ]);
    expect(eip.node.metadata.filter((m) => m.type === WARNING_METADATA).map((m) => m.data)).toEqual([
      undeclaredNetworkWarning('ElasticIP eip', 'elsewhere'),
    ]);
  });
});

describe('Pulumi', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    juneau.resetDeclarations();
    warn = jest.spyOn(pulumi.log, 'warn').mockResolvedValue(undefined);
  });
  afterEach(() => warn.mockRestore());

  const network = () =>
    new juneau.ExternalNetwork('ext-net', {
      type: 'arp',
      addressPools: [new juneau.AddressPool('pool', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'] })],
    });

  test('two components with one AddressPool name: the second throws naming both', () => {
    new juneau.AddressPool('first', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'], metadata: { name: 'pool' } });
    expect(
      thrownMessage(
        () =>
          new juneau.AddressPool('second', {
            advertiseMode: 'arp',
            addresses: ['10.1.0.0/24'],
            metadata: { name: 'pool' },
          }),
      ),
    ).toContain(
      `metadata.name: "pool" is declared twice: AddressPool pool at juneau:index:AddressPool::second and at juneau:index:AddressPool::first; ${DUPLICATE}`,
    );
  });

  test('namespaced kinds collide only within one namespace; Services too', () => {
    const net = network();
    new juneau.ElasticIP('a', { externalNetwork: net, metadata: { name: 'eip', namespace: 'team-a' } });
    new juneau.ElasticIP('b', { externalNetwork: net, metadata: { name: 'eip', namespace: 'team-b' } });
    expect(
      thrownMessage(
        () => new juneau.ElasticIP('c', { externalNetwork: net, metadata: { name: 'eip', namespace: 'team-a' } }),
      ),
    ).toContain(
      '"eip" is declared twice: ElasticIP team-a/eip at juneau:index:ElasticIP::c and at juneau:index:ElasticIP::a',
    );
    new juneau.LoadBalancerService('web', { externalNetwork: net, ...webService() });
    expect(
      thrownMessage(
        () =>
          new juneau.LoadBalancerService('web2', {
            externalNetwork: net,
            ...webService(),
            metadata: { name: 'web' },
          }),
      ),
    ).toContain('"web" is declared twice: Service web');
  });

  test('EIP-3, SLB-2: one address requested by two ElasticIPs, or an ElasticIP and a Service, throws naming both', () => {
    const net = network();
    new juneau.ElasticIP('a', { externalNetwork: net, requestedIP: '10.0.0.5' });
    expect(thrownMessage(() => new juneau.ElasticIP('b', { externalNetwork: net, requestedIP: '10.0.0.5' }))).toContain(
      'spec.requestedIP: "10.0.0.5" is also requested by ElasticIP default/a (juneau:index:ElasticIP::a)',
    );
    expect(
      thrownMessage(
        () => new juneau.LoadBalancerService('web', { externalNetwork: net, requestedIP: '10.0.0.5', ...webService() }),
      ),
    ).toContain(
      'is also requested by ElasticIP default/a (juneau:index:ElasticIP::a); an address is held by one ElasticIP or Service at a time, so Service default/web (juneau:index:LoadBalancerService::web) would stay Pending (EIP-3, SLB-2)',
    );
  });

  test('a network name the program does not declare logs the same warning on the component', () => {
    const eip = new juneau.ElasticIP('eip', { externalNetwork: juneau.ExternalNetwork.fromName('elsewhere') });
    expect(warn.mock.calls).toEqual([[undeclaredNetworkWarning('ElasticIP eip', 'elsewhere'), eip]]);
  });

  test("resetDeclarations() (exported from juneau/pulumi) forgets the stack's declarations", () => {
    new juneau.AddressPool('first', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'], metadata: { name: 'pool' } });
    juneau.resetDeclarations();
    expect(
      new juneau.AddressPool('again', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'], metadata: { name: 'pool' } })
        .name,
    ).toBe('pool');
  });
});
