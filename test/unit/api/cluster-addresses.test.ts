// SEC-5 (H5), SEC-2 (H2): the cluster's own addresses, each named by the object it comes from.
import { clusterOverlaps, clusterOwnerOf, clusterRanges, parseIPv4 } from '../../../api/validation';

const ranges = clusterRanges({
  nodes: [
    {
      metadata: { name: 'n1' },
      spec: { podCIDRs: ['10.244.1.0/24', 'fd00::/64'] },
      status: {
        addresses: [
          { type: 'InternalIP', address: '192.0.2.11' },
          { type: 'ExternalIP', address: '203.0.113.11' },
          { type: 'Hostname', address: 'n1' },
          { type: 'InternalIP', address: 'fd00::11' },
        ],
      },
    },
  ],
  serviceCIDRs: [{ name: 'kubernetes', cidrs: ['10.96.0.0/12'] }],
  apiServers: ['192.0.2.1'],
});
const owner = (a: string) => clusterOwnerOf(ranges, parseIPv4(a)!)?.owner;

describe('SEC-5: clusterRanges', () => {
  it('SEC-5: Node InternalIP and ExternalIP, pod CIDRs, ServiceCIDRs and API servers, each named; IPv6 and Hostname left out', () => {
    expect(owner('192.0.2.11')).toBe('the InternalIP of Node n1');
    expect(owner('203.0.113.11')).toBe('the ExternalIP of Node n1');
    expect(owner('10.244.1.200')).toBe('pod CIDR 10.244.1.0/24 of Node n1');
    expect(owner('10.100.0.1')).toBe('Service range 10.96.0.0/12 (ServiceCIDR kubernetes)');
    expect(owner('192.0.2.1')).toBe('an API server address (Service default/kubernetes)');
    expect(owner('192.0.2.12')).toBeUndefined();
    expect(ranges).toHaveLength(5);
    expect(ranges.filter((r) => r.nodeAddress).map((r) => r.owner)).toEqual([
      'the InternalIP of Node n1',
      'the ExternalIP of Node n1',
    ]);
  });

  it('SEC-5: a pool range overlapping a Node address finds it; one beside it does not', () => {
    expect(clusterOverlaps(ranges, { first: parseIPv4('192.0.2.8')!, last: parseIPv4('192.0.2.15')! })).toHaveLength(1);
    expect(clusterOverlaps(ranges, { first: parseIPv4('192.0.2.16')!, last: parseIPv4('192.0.2.31')! })).toEqual([]);
  });
});
