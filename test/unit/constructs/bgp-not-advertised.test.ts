// AP-1, EN-1 `bgp`: accepted and allocated, but Juneau has no BGP speaker yet, so nothing
// advertises the addresses. That is said where a user meets the choice: the CRDs (kubectl
// explain), and a warning from both front-ends when a bgp pool or network is declared; arp
// declarations stay quiet.
import { App, Chart } from 'cdk8s';
import * as pulumi from '@pulumi/pulumi';
import {
  addressPoolKind,
  BGP_NOT_ADVERTISED,
  customResourceDefinition,
  externalNetworkKind,
  OpenAPISchema,
} from '../../../api';
import * as cdk8s from '../../../constructs/cdk8s';
import { WARNING_METADATA } from '../../../constructs/cdk8s/base';
import type * as Juneau from '../../../constructs/pulumi';
import type * as Declarations from '../../../constructs/pulumi/declarations';
import { testApp } from '../temp-dir';

// Mocks: no engine runs here (set before the Pulumi components are loaded).
void pulumi.runtime.setMocks(
  { newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }), call: (args) => args.inputs },
  'juneau-test',
  'unit',
  false,
);
const juneauPulumi = require('../../../constructs/pulumi') as typeof Juneau;
const { resetDeclarations } = require('../../../constructs/pulumi/declarations') as typeof Declarations;

type Crd = { spec: { versions: Array<{ schema: { openAPIV3Schema: OpenAPISchema } }> } };
const specOf = (kind: Parameters<typeof customResourceDefinition>[0]) =>
  (customResourceDefinition(kind) as unknown as Crd).spec.versions[0].schema.openAPIV3Schema.properties!.spec
    .properties!;

describe('the CRDs say bgp is allocated but not advertised', () => {
  test('AP-1: AddressPool spec.advertiseMode', () => {
    expect(specOf(addressPoolKind).advertiseMode.description).toContain(BGP_NOT_ADVERTISED);
  });
  test('EN-1: ExternalNetwork spec.type', () => {
    expect(specOf(externalNetworkKind).type.description).toContain(BGP_NOT_ADVERTISED);
  });
});

describe('cdk8s: a bgp AddressPool or ExternalNetwork warns at synth', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockRestore());

  function declare(mode: 'arp' | 'bgp'): { app: App; pool: cdk8s.AddressPool; net: cdk8s.ExternalNetwork } {
    const app = testApp();
    const chart = new Chart(app, 'c');
    const pool = new cdk8s.AddressPool(chart, 'pool', { advertiseMode: mode, addresses: ['10.0.0.0/24'] });
    const net = new cdk8s.ExternalNetwork(chart, 'net', { type: mode, addressPools: [pool] });
    return { app, pool, net };
  }

  test('AP-1, EN-1: each is named on stderr with the reason, the synth succeeds, and the warning is in the construct metadata', () => {
    const { app, pool, net } = declare('bgp');
    expect(warn).not.toHaveBeenCalled(); // printed with the validations, when the app synthesizes
    expect(app.synthYaml()).toContain('advertiseMode: bgp');
    expect(warn.mock.calls).toEqual([
      [`[warning] c/pool: AddressPool pool: ${BGP_NOT_ADVERTISED}`],
      [`[warning] c/net: ExternalNetwork net: ${BGP_NOT_ADVERTISED}`],
    ]);
    expect(pool.node.metadata.filter((m) => m.type === WARNING_METADATA).map((m) => m.data)).toEqual([
      `AddressPool pool: ${BGP_NOT_ADVERTISED}`,
    ]);
    expect(net.node.metadata.filter((m) => m.type === WARNING_METADATA).map((m) => m.data)).toEqual([
      `ExternalNetwork net: ${BGP_NOT_ADVERTISED}`,
    ]);
  });

  test('arp declarations synthesize without a warning', () => {
    declare('arp').app.synthYaml();
    expect(warn).not.toHaveBeenCalled();
  });
});

describe('Pulumi: a bgp AddressPool or ExternalNetwork logs a warning on its component', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    resetDeclarations();
    warn = jest.spyOn(pulumi.log, 'warn').mockResolvedValue(undefined);
  });
  afterEach(() => warn.mockRestore());

  test('AP-1, EN-1: pulumi.log.warn names each object, says why, and is attached to the component', () => {
    const pool = new juneauPulumi.AddressPool('pool', { advertiseMode: 'bgp', addresses: ['10.0.0.0/24'] });
    const net = new juneauPulumi.ExternalNetwork('net', { type: 'bgp', addressPools: [pool] });
    expect(warn.mock.calls).toEqual([
      [`AddressPool pool: ${BGP_NOT_ADVERTISED}`, pool],
      [`ExternalNetwork net: ${BGP_NOT_ADVERTISED}`, net],
    ]);
  });

  test('arp components log no warning', () => {
    const pool = new juneauPulumi.AddressPool('arp-pool', { advertiseMode: 'arp', addresses: ['10.0.0.0/24'] });
    new juneauPulumi.ExternalNetwork('arp-net', { type: 'arp', addressPools: [pool] });
    expect(warn).not.toHaveBeenCalled();
  });
});
