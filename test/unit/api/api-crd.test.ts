// Schema generation from api/: the CRDs carry the rules the API server must enforce without a
// webhook. The same rules are proven against a real API server in test/cluster/crd-cel.test.ts.
import {
  allCustomResourceDefinitions,
  ALL_KINDS,
  customResourceDefinition,
  elasticIPKind,
  arpAdvertisementKind,
  externalNetworkKind,
  addressPoolKind,
  serviceLoadBalancerKind,
  natGatewayKind,
  OpenAPISchema,
  ADDRESS_ITEM_PATTERN,
} from '../../../api';
import { EIP_8_COLUMNS } from '../../printer-columns';

type Crd = {
  metadata: { name: string };
  spec: {
    scope: string;
    names: { kind: string };
    versions: Array<{
      name: string;
      subresources: object;
      additionalPrinterColumns: Array<{ name: string; jsonPath: string }>;
      selectableFields?: Array<{ jsonPath: string }>;
      schema: { openAPIV3Schema: OpenAPISchema };
    }>;
  };
};
const crd = (k: (typeof ALL_KINDS)[number]) => customResourceDefinition(k) as unknown as Crd;
const schemaOf = (k: (typeof ALL_KINDS)[number]) => crd(k).spec.versions[0].schema.openAPIV3Schema;
const columns = (k: (typeof ALL_KINDS)[number]) =>
  crd(k).spec.versions[0].additionalPrinterColumns.map((c) => c.name.toUpperCase());
const rules = (s: OpenAPISchema | undefined) => (s?.['x-kubernetes-validations'] ?? []).map((r) => r.rule);

/** Every string and list in the schema is bounded, so the API server can estimate CEL cost. */
function unbounded(s: OpenAPISchema, path: string): string[] {
  const out: string[] = [];
  if (s.type === 'string' && s.maxLength === undefined && !s.enum && s.format !== 'date-time') out.push(path);
  if (s.type === 'array' && s.maxItems === undefined) out.push(path);
  for (const [k, v] of Object.entries(s.properties ?? {})) out.push(...unbounded(v, `${path}.${k}`));
  if (s.items) out.push(...unbounded(s.items, `${path}[]`));
  return out;
}

describe('CRDs generated from api/', () => {
  test('one CRD per kind in group juneau.loutres.me, version v1alpha1, with the status subresource', () => {
    const crds = allCustomResourceDefinitions() as unknown as Crd[];
    expect(crds.map((c) => c.spec.names.kind)).toEqual([
      'AddressPool',
      'ExternalNetwork',
      'ElasticIP',
      'ElasticIPAttachment',
      'NetworkInterface',
      'ServiceLoadBalancer',
      'ARPAdvertisement',
      'AllocationPool',
      'AllocationClaim',
      'BGPPeer',
      'BGPAdvertisement',
      'BGPNodeState',
      'NATGateway',
    ]);
    for (const c of crds) {
      expect(c.metadata.name).toMatch(/\.juneau\.loutres\.me$/);
      expect(c.spec.versions[0].name).toBe('v1alpha1');
      expect(c.spec.versions[0].subresources).toEqual({ status: {} });
    }
  });

  test('scopes: pools, networks, advertisements and claims are cluster-scoped; the rest namespaced', () => {
    const scope = Object.fromEntries(ALL_KINDS.map((k) => [k.kind, crd(k).spec.scope]));
    expect(scope).toEqual({
      AddressPool: 'Cluster',
      ExternalNetwork: 'Cluster',
      ARPAdvertisement: 'Cluster',
      AllocationPool: 'Cluster',
      AllocationClaim: 'Cluster',
      BGPPeer: 'Cluster',
      BGPAdvertisement: 'Cluster',
      BGPNodeState: 'Cluster',
      ElasticIP: 'Namespaced',
      ElasticIPAttachment: 'Namespaced',
      NetworkInterface: 'Namespaced',
      ServiceLoadBalancer: 'Namespaced',
      NATGateway: 'Namespaced',
    });
  });

  test('EIP-8: kubectl get elasticip shows NAME, EXTERNALNETWORK, ADDRESS, ATTACHMENTKIND, ATTACHMENT, PHASE, ALLOCATED, ATTACHED', () => {
    expect(['NAME', ...columns(elasticIPKind)]).toEqual(EIP_8_COLUMNS);
    const byName = Object.fromEntries(
      crd(elasticIPKind).spec.versions[0].additionalPrinterColumns.map((c) => [c.name.toUpperCase(), c.jsonPath]),
    );
    expect(byName.ALLOCATED).toBe('.status.conditions[?(@.type=="Allocated")].status');
    expect(byName.ATTACHED).toBe('.status.conditions[?(@.type=="Attached")].status');
  });

  test('NGW-8: kubectl get natgateway shows NAME, EXTERNALNETWORK, ADDRESS, NODE, PODS, PHASE', () => {
    expect(['NAME', ...columns(natGatewayKind)]).toEqual([
      'NAME',
      'EXTERNALNETWORK',
      'ADDRESS',
      'NODE',
      'PODS',
      'PHASE',
    ]);
  });

  test('ARP-9: kubectl get arpadvertisement shows NAME, EXTERNALNETWORK, ADDRESS, NODE, AGE', () => {
    expect(['NAME', ...columns(arpAdvertisementKind)]).toEqual(['NAME', 'EXTERNALNETWORK', 'ADDRESS', 'NODE', 'AGE']);
  });

  test('other kinds: ExternalNetwork TYPE/NETWORKID, AddressPool MODE/SIZE/USED (AP-3), ServiceLoadBalancer VIP/PHASE/NODE', () => {
    expect(columns(externalNetworkKind)).toEqual(expect.arrayContaining(['TYPE', 'NETWORKID']));
    expect(columns(addressPoolKind).slice(0, 3)).toEqual(['MODE', 'SIZE', 'USED']);
    expect(columns(serviceLoadBalancerKind).slice(0, 3)).toEqual(['VIP', 'PHASE', 'NODE']);
  });

  test('ARPAdvertisement declares selectableFields [.spec.nodeName] so agents list only their node', () => {
    expect(crd(arpAdvertisementKind).spec.versions[0].selectableFields).toEqual([{ jsonPath: '.spec.nodeName' }]);
  });

  test('EN-1: ExternalNetwork spec.type is required, an enum of bgp/arp, and immutable', () => {
    const spec = schemaOf(externalNetworkKind).properties!.spec;
    expect(spec.required).toEqual(expect.arrayContaining(['type', 'addressPools']));
    expect(spec.properties!.type.enum).toEqual(['bgp', 'arp']);
    expect(rules(spec.properties!.type)).toEqual(['self == oldSelf']);
  });

  test('EN-2 and EN-6: addressPools is a set with at least one item, and append-only', () => {
    const pools = schemaOf(externalNetworkKind).properties!.spec.properties!.addressPools;
    expect(pools['x-kubernetes-list-type']).toBe('set');
    expect(pools.minItems).toBe(1);
    expect(rules(pools)).toEqual(['oldSelf.all(p, p in self)']);
  });

  test('EN-7: status.networkID is a VNI that never changes once written, guarded on the object (has() on the parents)', () => {
    const schema = schemaOf(externalNetworkKind);
    const id = schema.properties!.status.properties!.networkID;
    expect(id).toMatchObject({ type: 'integer', minimum: 0, maximum: 16777215 });
    expect(rules(id)).toEqual([]);
    expect(rules(schema)).toEqual([
      '!has(oldSelf.status) || !has(oldSelf.status.networkID) || oldSelf.status.networkID == 0 || ' +
        '(has(self.status) && has(self.status.networkID) && self.status.networkID == oldSelf.status.networkID)',
    ]);
  });

  test('ARP-3: ARPAdvertisement externalNetwork and address are immutable, nodeName is not', () => {
    const spec = schemaOf(arpAdvertisementKind).properties!.spec;
    expect(rules(spec.properties!.externalNetwork)).toEqual(['self == oldSelf']);
    expect(rules(spec.properties!.address)).toEqual(['self == oldSelf']);
    expect(rules(spec.properties!.nodeName)).toEqual([]);
    expect(spec.properties!.address.format).toBe('ipv4');
  });

  test('AP-1 and AP-2: advertiseMode is a required enum; addresses a non-empty bounded set of CIDRs or ranges', () => {
    const spec = schemaOf(addressPoolKind).properties!.spec;
    expect(spec.required).toEqual(['advertiseMode', 'addresses']);
    expect(spec.properties!.advertiseMode.enum).toEqual(['bgp', 'arp']);
    expect(spec.properties!.addresses).toMatchObject({ minItems: 1, maxItems: 64, 'x-kubernetes-list-type': 'set' });
    const re = new RegExp(ADDRESS_ITEM_PATTERN);
    for (const ok of ['10.225.51.0/24', '10.225.51.10-10.225.51.20', '0.0.0.0/0', '255.255.255.255/32'])
      expect(re.test(ok)).toBe(true);
    for (const bad of ['10.225.51.0/33', '10.225.51', '256.1.1.1/32', '10.0.0.1-', 'fd00::/64', ' 10.0.0.0/8'])
      expect(re.test(bad)).toBe(false);
  });

  test('EIP-3: ElasticIP requestedIP is an ipv4 and, like externalNetwork, immutable', () => {
    const spec = schemaOf(elasticIPKind).properties!.spec;
    expect(spec.properties!.requestedIP.format).toBe('ipv4');
    expect(rules(spec).join(' ')).toContain('self.requestedIP == oldSelf.requestedIP');
    expect(rules(spec).join(' ')).toContain('self.externalNetwork == oldSelf.externalNetwork');
  });

  test.each(ALL_KINDS.map((k) => [k.kind, k] as const))(
    '%s: every string and list is bounded (CEL cost estimates)',
    (_name, kind) => {
      const { spec, status } = schemaOf(kind).properties!;
      expect([...unbounded(spec, 'spec'), ...unbounded(status, 'status')]).toEqual([]);
    },
  );

  test('every CEL rule carries a message that names a field', () => {
    const walk = (s: OpenAPISchema): Array<{ message: string }> => [
      ...(s['x-kubernetes-validations'] ?? []),
      ...Object.values(s.properties ?? {}).flatMap(walk),
      ...(s.items ? walk(s.items) : []),
    ];
    for (const kind of ALL_KINDS)
      for (const r of walk(schemaOf(kind))) expect(r.message).toMatch(/\b(spec|status)\b|CIDR/);
  });
});
