// NAT-2: the API servers behind the `default/kubernetes` Service, from its EndpointSlices, are
// in-cluster destinations (runtime/agent/nat/prefixes.ts): on a managed or external control
// plane they are not Nodes, and kube-proxy DNATs `kubernetes.default` to them.
import { clusterPrefixes, prefixesKey } from '../../../runtime/agent/nat/prefixes';

const slice = (name: string, addressType: string, addresses: string[][]) => ({
  metadata: { name },
  addressType,
  endpoints: addresses.map((a) => ({ addresses: a })),
});

describe('NAT-2: the API server endpoints keep an ElasticIP pod address', () => {
  test("every IPv4 endpoint address of the kubernetes Service's slices is a /32; IPv6 slices are not the NAT's business; a bad address is named and left out", () => {
    const r = clusterPrefixes({
      nodes: [],
      serviceCIDRs: [],
      extra: [],
      apiServerSlices: [
        slice('kubernetes', 'IPv4', [['172.31.0.10'], ['172.31.0.11', 'not-an-ip']]),
        slice('kubernetes-v6', 'IPv6', [['fd00::10']]),
      ],
    });
    expect({ prefixes: prefixesKey(r.prefixes), skipped: r.skipped }).toEqual({
      prefixes: '172.31.0.10/31',
      skipped: ["EndpointSlice default/kubernetes endpoints: 'not-an-ip' is not an IPv4 address"],
    });
  });
});
