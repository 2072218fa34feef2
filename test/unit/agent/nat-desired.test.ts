// desiredNat: which ElasticIPs this node translates (NAT-1) or forwards directly (DIR-1), from the
// objects' status as the controller writes it. Pure; the agent writes the result to the maps.
import { desiredNat, type NatInputs } from '../../../runtime/agent/nat/desired';

const eip = (
  name: string,
  address: string | undefined,
  attachment?: { kind: 'ElasticIPAttachment' | 'NetworkInterface'; name: string },
) =>
  ({
    metadata: { namespace: 'ns', name },
    spec: { externalNetwork: 'ext' },
    status: { address, attachment },
  }) as NatInputs['elasticIPs'][number];
const nic = (
  name: string,
  address: string | undefined,
  nodeName: string,
  extra: { elasticIP?: string; phase?: 'Ready' | 'Pending' } = {},
) =>
  ({
    metadata: { namespace: 'ns', name },
    spec: { podName: name, interface: 'eth0', nodeName, address, elasticIP: extra.elasticIP },
    status: { phase: extra.phase },
  }) as NatInputs['networkInterfaces'][number];
const eipa = (
  name: string,
  elasticIP: string,
  networkInterface: string,
  status: { phase?: 'Attached' | 'Pending'; nodeName?: string },
) =>
  ({
    metadata: { namespace: 'ns', name },
    spec: { elasticIP, networkInterface },
    status,
  }) as NatInputs['attachments'][number];

describe('desiredNat (NAT-1, NAT-4, DIR-1)', () => {
  test('an Attached attachment of this node, named by its ElasticIP, binds the ElasticIP to the NIC address', () => {
    const out = desiredNat({
      nodeName: 'n1',
      elasticIPs: [eip('a', '192.0.2.50', { kind: 'ElasticIPAttachment', name: 'a' })],
      networkInterfaces: [nic('a.eth0', '10.0.0.2', 'n1')],
      attachments: [eipa('a', 'a', 'a.eth0', { phase: 'Attached', nodeName: 'n1' })],
    });
    expect(out).toEqual({
      nat: [{ elasticIP: '192.0.2.50', address: '10.0.0.2' }],
      direct: [],
      remote: [],
      waiting: [],
    });
  });

  test("another node's, a Pending one, or one the ElasticIP does not name is not translated here", () => {
    // The ElasticIP names another attachment; the attachment's status varies.
    const withAttachment = (status: { phase: 'Attached' | 'Pending'; nodeName: string }) =>
      desiredNat({
        nodeName: 'n1',
        elasticIPs: [eip('a', '192.0.2.50', { kind: 'ElasticIPAttachment', name: 'other' })],
        networkInterfaces: [nic('a.eth0', '10.0.0.2', 'n1')],
        attachments: [eipa('a', 'a', 'a.eth0', status)],
      });
    const nothing = { nat: [], direct: [], remote: [], waiting: [] };
    expect(withAttachment({ phase: 'Attached', nodeName: 'n2' })).toEqual(nothing);
    expect(withAttachment({ phase: 'Pending', nodeName: 'n1' })).toEqual(nothing);
    const named = withAttachment({ phase: 'Attached', nodeName: 'n1' });
    expect(named.nat).toEqual([]);
    expect(named.waiting).toEqual([
      'ElasticIPAttachment ns/a: ElasticIP a has no address or does not name this attachment in status.attachment',
    ]);
  });

  test('a Ready NIC of this node holding an ElasticIP the ElasticIP names is direct; one NIC address is never bound twice', () => {
    const out = desiredNat({
      nodeName: 'n1',
      elasticIPs: [
        eip('d', '192.0.2.51', { kind: 'NetworkInterface', name: 'd.eth0' }),
        eip('a', '192.0.2.50', { kind: 'ElasticIPAttachment', name: 'a' }),
      ],
      networkInterfaces: [
        nic('d.eth0', '10.0.0.2', 'n1', { elasticIP: 'd', phase: 'Ready' }),
        nic('a.eth0', '10.0.0.2', 'n1'),
      ],
      attachments: [eipa('a', 'a', 'a.eth0', { phase: 'Attached', nodeName: 'n1' })],
    });
    expect(out.nat).toEqual([{ elasticIP: '192.0.2.50', address: '10.0.0.2' }]);
    expect(out.direct).toEqual([]);
    expect(out.waiting).toEqual([
      'NetworkInterface ns/d.eth0: address 10.0.0.2 or ElasticIP 192.0.2.51 already used by ElasticIPAttachment ns/a',
    ]);
  });
});
