// NAT-2: the in-cluster destinations an agent learns from the Nodes and ServiceCIDRs, plus
// --nat-cluster-cidrs, merged into the fewest LPM prefixes (runtime/agent/nat/prefixes.ts).
import { clusterPrefixes, parseClusterCidrs, prefixesKey } from '../../../runtime/agent/nat/prefixes';
import { parseAgentFlags } from '../../../runtime/agent/flags';

const node = (name: string, podCIDRs: string[], addresses: Array<[string, string]>, podCIDR?: string) => ({
  metadata: { name },
  spec: { podCIDRs, podCIDR },
  status: { addresses: addresses.map(([type, address]) => ({ type, address })) },
});
const learned = (input: Partial<Parameters<typeof clusterPrefixes>[0]>) => {
  const r = clusterPrefixes({ nodes: [], serviceCIDRs: [], extra: [], ...input });
  return { prefixes: prefixesKey(r.prefixes), skipped: r.skipped };
};

describe('NAT-2: in-cluster prefixes learned from the cluster', () => {
  test('every Node contributes its pod ranges and its InternalIP/ExternalIP as /32; Hostname and DNS names are not addresses', () => {
    expect(
      learned({
        nodes: [
          node(
            'a',
            ['10.244.0.0/24'],
            [
              ['InternalIP', '192.168.1.11'],
              ['Hostname', 'a'],
              ['InternalDNS', 'a.lan'],
            ],
          ),
          node(
            'b',
            ['10.244.5.0/24'],
            [
              ['InternalIP', '192.168.1.40'],
              ['ExternalIP', '203.0.113.7'],
            ],
          ),
        ],
      }),
    ).toEqual({
      prefixes: '10.244.0.0/24,10.244.5.0/24,192.168.1.11/32,192.168.1.40/32,203.0.113.7/32',
      skipped: [],
    });
  });

  test("adjacent pod ranges and node addresses merge into the fewest prefixes (a /21 of eight nodes' /24s)", () => {
    const nodes = Array.from({ length: 8 }, (_, i) =>
      node(`n${i}`, [`10.227.${8 + i}.0/24`], [['InternalIP', `10.226.1.${12 + i}`]]),
    );
    expect(learned({ nodes }).prefixes).toBe('10.226.1.12/30,10.226.1.16/30,10.227.8.0/21');
  });

  test('ServiceCIDRs add their IPv4 ranges; IPv6 ranges and addresses of a dual-stack cluster are left out silently', () => {
    expect(
      learned({
        nodes: [
          node(
            'a',
            ['10.244.0.0/24', 'fd00:10:244::/64'],
            [
              ['InternalIP', 'fd00::11'],
              ['InternalIP', '10.0.0.11'],
            ],
          ),
        ],
        serviceCIDRs: [
          { metadata: { name: 'kubernetes' }, spec: { cidrs: ['10.96.0.0/16', 'fd00:10:96::/112'] } },
          { metadata: { name: 'extra' }, spec: { cidrs: ['10.97.0.0/16'] } },
        ],
      }),
    ).toEqual({ prefixes: '10.0.0.11/32,10.96.0.0/15,10.244.0.0/24', skipped: [] });
  });

  test('spec.podCIDR alone (an older writer) counts when spec.podCIDRs is empty', () => {
    expect(learned({ nodes: [node('old', [], [], '10.244.3.0/24')] }).prefixes).toBe('10.244.3.0/24');
  });

  test('--nat-cluster-cidrs adds to what is learned, overlaps merged (a /16 swallows the nodes’ /24s)', () => {
    expect(
      learned({
        nodes: [node('a', ['10.244.0.0/24'], [['InternalIP', '192.168.1.11']])],
        extra: parseClusterCidrs('10.244.0.0/16, 192.168.1.10'),
      }).prefixes,
    ).toBe('10.244.0.0/16,192.168.1.10/31');
  });

  test('a malformed value is left out naming its object, and the rest is still learned', () => {
    expect(
      learned({
        nodes: [node('bad', ['10.244.0.1/24'], [['InternalIP', 'not-an-ip']]), node('good', ['10.244.1.0/24'], [])],
        serviceCIDRs: [{ metadata: { name: 'odd' }, spec: { cidrs: ['10.96.0.0/99'] } }],
      }),
    ).toEqual({
      prefixes: '10.244.1.0/24',
      skipped: [
        "Node bad spec.podCIDRs: address pool item '10.244.0.1/24' has host bits set (network is 10.244.0.0/24)",
        "Node bad status.addresses InternalIP: 'not-an-ip' is not an IPv4 address",
        "ServiceCIDR odd spec.cidrs: address pool item '10.96.0.0/99' has an invalid prefix length '99'",
      ],
    });
  });

  test('nothing learned and nothing configured: no prefix (every destination is translated, as before)', () => {
    expect(learned({})).toEqual({ prefixes: '', skipped: [] });
  });
});

describe('--nat-cluster-cidrs', () => {
  test('CIDRs and single addresses (as /32), spaces and empty items ignored', () => {
    expect(parseClusterCidrs(' 10.244.0.0/16,,10.0.0.1 ')).toEqual(['10.244.0.0/16', '10.0.0.1/32']);
    expect(parseClusterCidrs(undefined)).toEqual([]);
  });

  test('a bad value is refused when the flags are parsed, naming the flag and the value', () => {
    expect(() => parseAgentFlags(['--nat-cluster-cidrs=10.244.0.1/16'], { NODE_NAME: 'n' })).toThrow(
      "--nat-cluster-cidrs: address pool item '10.244.0.1/16' has host bits set",
    );
    expect(() => parseAgentFlags(['--nat-cluster-cidrs', '10.244.0.0/40'], { NODE_NAME: 'n' })).toThrow(
      '--nat-cluster-cidrs: ',
    );
  });
});
