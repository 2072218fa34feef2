// Pulumi components take metadata namespace, labels and annotations as Inputs:
// what resolves later is written to the object as it resolves, Juneau's own annotations (SLB-2,
// the waitFor annotation) win over a user's of the same key, and the checks that compare
// namespaces leave an unknown one to the cluster instead of guessing.
import * as pulumi from '@pulumi/pulumi';
import { ANNOTATIONS } from '../../../api';
import type * as Juneau from '../../../constructs/pulumi';

// Mocks: no Pulumi engine runs in unit tests; the mock records what each resource is registered with.
const inputs = new Map<string, Record<string, unknown>>();
void pulumi.runtime.setMocks(
  {
    newResource: (args) => {
      inputs.set(`${args.type}::${args.name}`, args.inputs as Record<string, unknown>);
      return { id: `${args.name}-id`, state: args.inputs };
    },
    call: (args) => args.inputs,
  },
  'juneau-test',
  'unit',
  false,
);
const juneau = require('../../../constructs/pulumi') as typeof Juneau;

const settled = <T>(o: pulumi.Output<T>): Promise<T> => new Promise((resolve) => o.apply(resolve));
const later = <T>(value: T) => pulumi.output(new Promise<T>((resolve) => setTimeout(() => resolve(value), 5)));
type Meta = { namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
const metadataOf = (type: string, name: string) => inputs.get(`${type}::${name}`)?.metadata as Meta;

beforeEach(() => juneau.resetDeclarations());

const network = () =>
  new juneau.ExternalNetwork('ext-net', {
    type: 'arp',
    addressPools: [new juneau.AddressPool('pool', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'] })],
  });

test('an ElasticIP with an Output namespace and Output annotations: written as they resolve, waitFor wins, and an attachment follows the namespace', async () => {
  const net = network();
  const eip = new juneau.ElasticIP('eip', {
    externalNetwork: net,
    waitForAddress: true,
    metadata: {
      namespace: later('team-a'),
      labels: { team: later('net') },
      annotations: later({ note: 'x', 'pulumi.com/waitFor': 'mine' }),
    },
  });
  expect(eip.namespace).toBeUndefined();
  const attachment = new juneau.ElasticIPAttachment('attach', { elasticIP: eip, networkInterface: 'web.eth0' });
  await settled(pulumi.all([eip.resource.id, attachment.resource.id]));
  expect(metadataOf('kubernetes:juneau.loutres.me/v1alpha1:ElasticIP', 'eip')).toEqual({
    name: 'eip',
    namespace: 'team-a',
    labels: { team: 'net' },
    annotations: { note: 'x', 'pulumi.com/waitFor': 'jsonpath={.status.address}' },
  });
  expect(metadataOf('kubernetes:juneau.loutres.me/v1alpha1:ElasticIPAttachment', 'attach')).toEqual({
    name: 'attach',
    namespace: 'team-a',
  });
});

test("a Service with Output annotations keeps Juneau's SLB-2 annotation over a user's of the same key", async () => {
  const net = network();
  const web = new juneau.LoadBalancerService('web', {
    externalNetwork: net,
    ports: [{ port: 80 }],
    selector: { app: 'web' },
    metadata: { annotations: later({ [ANNOTATIONS.loadBalancerExternalNetwork]: 'other', owner: 'me' }) },
  });
  await settled(web.service.id);
  expect(metadataOf('kubernetes:core/v1:Service', 'web').annotations).toEqual({
    [ANNOTATIONS.loadBalancerExternalNetwork]: 'ext-net',
    owner: 'me',
  });
});

test('plain metadata is checked and written as before; an Output namespace leaves the duplicate-name check to the cluster', async () => {
  const net = network();
  new juneau.ElasticIP('a', { externalNetwork: net, metadata: { name: 'eip', namespace: 'team-a' } });
  expect(
    () => new juneau.ElasticIP('b', { externalNetwork: net, metadata: { name: 'eip', namespace: 'team-a' } }),
  ).toThrow('is declared twice');
  const c = new juneau.ElasticIP('c', { externalNetwork: net, metadata: { name: 'eip', namespace: later('team-a') } });
  await settled(c.resource.id);
  expect(metadataOf('kubernetes:juneau.loutres.me/v1alpha1:ElasticIP', 'c')).toEqual({
    name: 'eip',
    namespace: 'team-a',
  });
});

test('EIPA-1 still compares namespaces known at construction', () => {
  const eip = new juneau.ElasticIP('eip', { externalNetwork: network(), metadata: { namespace: 'team-a' } });
  expect(
    () =>
      new juneau.ElasticIPAttachment('attach', {
        elasticIP: eip,
        networkInterface: 'web.eth0',
        metadata: { namespace: 'team-b' },
      }),
  ).toThrow('is in namespace team-a, but the attachment is in team-b; both must be in one namespace (EIPA-1)');
  expect(
    () =>
      new juneau.ElasticIPAttachment('attach2', {
        elasticIP: eip,
        networkInterface: 'web.eth0',
        metadata: { namespace: later('team-b') },
      }),
  ).not.toThrow();
});
