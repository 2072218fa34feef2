// `kubectl juneau status` rows, pure: ServiceLoadBalancers beside ElasticIPs, the answering node
// from the ARPAdvertisements (several when ARP-4 is broken, so status shows it), sorted by address.
import { renderStatus, statusRows } from '../../../runtime/cli/status';

const eip = (ns: string, name: string, status: Record<string, unknown> | undefined) =>
  ({
    apiVersion: 'juneau.loutres.me/v1alpha1',
    kind: 'ElasticIP',
    metadata: { namespace: ns, name },
    spec: { externalNetwork: 'lan' },
    status,
  }) as never;
const slb = (ns: string, name: string, status: Record<string, unknown>) =>
  ({
    apiVersion: 'juneau.loutres.me/v1alpha1',
    kind: 'ServiceLoadBalancer',
    metadata: { namespace: ns, name, ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name, uid: 'u' }] },
    spec: { externalNetwork: 'dmz' },
    status,
  }) as never;
const ad = (name: string, address: string, nodeName: string) =>
  ({
    apiVersion: 'juneau.loutres.me/v1alpha1',
    kind: 'ARPAdvertisement',
    metadata: { name },
    spec: { externalNetwork: 'lan', address, nodeName },
  }) as never;

describe('kubectl juneau status rows', () => {
  const rows = statusRows(
    [
      eip('a', 'web', {
        phase: 'Attached',
        address: '192.0.2.10',
        attachment: { kind: 'ElasticIPAttachment', name: 'web-nat' },
      }),
      eip('a', 'new', undefined),
    ],
    [slb('b', 'api', { phase: 'Ready', vip: '192.0.2.9' }), slb('a', 'db', { phase: 'Degraded', vip: '192.0.2.100' })],
    [ad('x', '192.0.2.10', 'node-2'), ad('y', '192.0.2.9', 'node-1'), ad('z', '192.0.2.9', 'node-3')],
  );

  it('one row per address owner, by address (numerically), unallocated last', () => {
    expect(rows.map((r) => [r.address, r.kind, r.name, r.network, r.owner, r.phase, r.nodes.join(',')])).toEqual([
      ['192.0.2.9', 'ServiceLoadBalancer', 'api', 'dmz', 'Service/api', 'Ready', 'node-1,node-3'],
      ['192.0.2.10', 'ElasticIP', 'web', 'lan', 'ElasticIPAttachment/web-nat', 'Attached', 'node-2'],
      ['192.0.2.100', 'ServiceLoadBalancer', 'db', 'dmz', 'Service/db', 'Degraded', ''],
      ['', 'ElasticIP', 'new', 'lan', '', '', ''],
    ]);
  });

  it('renders kubectl-style, with NAMESPACE first under -A', () => {
    expect(renderStatus(rows.slice(0, 1), false)).toBe(
      'ADDRESS     KIND                  NAME   NETWORK   OWNER         PHASE   NODE\n192.0.2.9   ServiceLoadBalancer   api    dmz       Service/api   Ready   node-1,node-3\n',
    );
    expect(
      renderStatus(rows.slice(3), true)
        .split('\n')[1]
        .split(/\s{3,}/),
    ).toEqual(['a', '-', 'ElasticIP', 'new', 'lan', '-', '-', '-']);
  });
});
