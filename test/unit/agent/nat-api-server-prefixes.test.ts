// NAT-2: the API servers behind the `default/kubernetes` Service, from its EndpointSlices, are
// in-cluster destinations (runtime/agent/nat/prefixes.ts): on a managed or external control
// plane they are not Nodes, and kube-proxy DNATs `kubernetes.default` to them.
import { clusterPrefixes, prefixesKey } from '../../../runtime/agent/nat/prefixes';

const slice = (name: string, addressType: string, addresses: string[][], labels?: Record<string, string>) => ({
  metadata: { name, ...(labels ? { labels } : {}) },
  addressType,
  endpoints: addresses.map((a) => ({ addresses: a })),
});

/** The prefixes learned from `slices` alone. */
const fromSlices = (...apiServerSlices: Array<ReturnType<typeof slice>>) =>
  clusterPrefixes({ nodes: [], serviceCIDRs: [], extra: [], apiServerSlices });

describe('NAT-2: the API server endpoints keep an ElasticIP pod address', () => {
  test("every IPv4 endpoint address of the kubernetes Service's slices is a /32; IPv6 slices are not the NAT's business; a bad address is named and left out", () => {
    const r = fromSlices(slice('kubernetes', 'IPv4', [['172.31.0.10'], ['172.31.0.11', 'not-an-ip']]));
    const v6 = fromSlices(slice('kubernetes', 'IPv6', [['fd00::10']]));
    expect({ prefixes: prefixesKey(v6.prefixes), skipped: v6.skipped }).toEqual({ prefixes: '', skipped: [] });
    expect({ prefixes: prefixesKey(r.prefixes), skipped: r.skipped }).toEqual({
      prefixes: '172.31.0.10/31',
      skipped: ["EndpointSlice default/kubernetes endpoints: 'not-an-ip' is not an IPv4 address"],
    });
  });
});

describe('SEC-17 (L5): only the slice kube-apiserver writes names the API servers', () => {
  test('a slice of another name, or one a controller manages, is ignored and named', () => {
    const r = fromSlices(
      slice('kubernetes', 'IPv4', [['172.31.0.10']]),
      slice('kubernetes-extra', 'IPv4', [['203.0.113.7']]),
    );
    expect({ prefixes: prefixesKey(r.prefixes), skipped: r.skipped }).toEqual({
      prefixes: '172.31.0.10/32',
      skipped: ["EndpointSlice default/kubernetes-extra: not the API server's slice (named kubernetes); ignored"],
    });
    const managed = fromSlices(
      slice('kubernetes', 'IPv4', [['203.0.113.7']], {
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      }),
    );
    expect({ prefixes: prefixesKey(managed.prefixes), skipped: managed.skipped }).toEqual({
      prefixes: '',
      skipped: [
        'EndpointSlice default/kubernetes: labelled endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io, which kube-apiserver does not set; ignored',
      ],
    });
  });
});
