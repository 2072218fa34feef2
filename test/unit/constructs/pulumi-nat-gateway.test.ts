// The NATGateway Pulumi component under `pulumi.runtime.setMocks`: its child, its outputs from the
// status the mocked cluster reports, and bad arguments in one error (NGW-1, NGW-2).
import type * as Juneau from '../../../constructs/pulumi';
import type * as Declarations from '../../../constructs/pulumi/declarations';
import type * as Example from '../../../examples/pulumi/nat-gateway';
import { mockCluster, valueOf } from '../pulumi-rpcs';
import { thrown } from '../thrown';

const registered = mockCluster(
  {
    'kubernetes:juneau.loutres.me/v1alpha1:NATGateway': {
      phase: 'Ready',
      address: '10.225.32.250',
      nodeName: 'node-b',
    },
  },
  'juneau-test',
  'unit',
);
const { AddressPool, ExternalNetwork, JuneauValidationError, NATGateway } =
  require('../../../constructs/pulumi') as typeof Juneau;
const { resetDeclarations } = require('../../../constructs/pulumi/declarations') as typeof Declarations;
const { declareNatGatewayExample } = require('../../../examples/pulumi/nat-gateway') as typeof Example;

beforeEach(() => resetDeclarations());

const network = () => {
  const pool = new AddressPool('arp-pool', { advertiseMode: 'arp', addresses: ['10.225.32.240-10.225.32.250'] });
  return new ExternalNetwork('ext-net-arp', { type: 'arp', addressPools: [pool] });
};

describe('NATGateway (Pulumi)', () => {
  it('NGW-1 NGW-3: registers juneau:index:NATGateway with its NATGateway child; address, node and phase from the status', async () => {
    const gw = declareNatGatewayExample(network());
    expect(await valueOf(gw.urn)).toBe('urn:pulumi:unit::juneau-test::juneau:index:NATGateway::crawlers');
    expect(await valueOf(gw.address)).toBe('10.225.32.250');
    expect(await valueOf(gw.nodeName)).toBe('node-b');
    expect(await valueOf(gw.phase)).toBe('Ready');
    const child = registered.find((r) => r.type === 'kubernetes:juneau.loutres.me/v1alpha1:NATGateway');
    const spec = child?.inputs.spec as Record<string, { matchExpressions?: object }>;
    expect(spec).toMatchObject({
      externalNetwork: 'ext-net-arp',
      podSelector: { matchLabels: { app: 'crawler' } },
      requestedIP: '10.225.32.250',
    });
    // The mocks hand nested lists back index-keyed; the entries are what matters.
    expect(Object.values(spec.nodeSelector.matchExpressions ?? {})).toEqual([
      { key: 'node-role.example.com/egress', operator: 'Exists' },
    ]);
  });

  it('NGW-1 NGW-2: every problem in one error, naming the field and the value', () => {
    const net = network();
    const err = thrown<Error & { problems: readonly string[] }>(
      () =>
        new NATGateway('bad', {
          externalNetwork: net,
          podSelector: { matchLabels: { app: 'a b' } },
          requestedIP: '10.0.0.1',
        }),
    );
    expect(err).toBeInstanceOf(JuneauValidationError);
    expect(err.message).toContain('spec.podSelector.matchLabels["app"]: "a b" must be a label value');
    expect(err.message).toContain('spec.requestedIP: "10.0.0.1"');
  });
});
