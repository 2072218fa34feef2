// desiredNat: which ElasticIPs this node translates (NAT-1) or forwards directly (DIR-1), from the
// objects' status as the controller writes it. Pure; the agent writes the result to the maps.
import { desiredNat as desiredNatOf, type NatInputs } from '../../../runtime/agent/nat/desired';
import { pod, podOwner, runningPodsOf } from '../../shared/nat-pods';

/** desiredNat with a Running Pod behind every NIC of the node unless `pods` says otherwise. */
const desiredNat = (input: Omit<NatInputs, 'pods'> & { pods?: NatInputs['pods'] }) =>
  desiredNatOf({ ...input, pods: input.pods ?? runningPodsOf(input.networkInterfaces, input.nodeName) });

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
  extra: { elasticIP?: string; phase?: 'Ready' | 'Pending'; creationTimestamp?: string } = {},
) =>
  ({
    metadata: {
      namespace: 'ns',
      name,
      ownerReferences: [podOwner('ns', name)],
      ...(extra.creationTimestamp ? { creationTimestamp: extra.creationTimestamp } : {}),
    },
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
      served: [{ address: '192.0.2.50', externalNetwork: 'ext', owner: 'ElasticIP ns/a' }],
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
    const nothing = { nat: [], direct: [], remote: [], served: [], waiting: [] };
    expect(withAttachment({ phase: 'Attached', nodeName: 'n2' })).toEqual(nothing);
    expect(withAttachment({ phase: 'Pending', nodeName: 'n1' })).toEqual(nothing);
    const named = withAttachment({ phase: 'Attached', nodeName: 'n1' });
    expect(named.nat).toEqual([]);
    expect(named.waiting).toEqual([
      'ElasticIPAttachment ns/a: ElasticIP a has no address or does not name this attachment in status.attachment',
    ]);
  });

  test('BGP-5: an ElasticIP being deleted is still translated but no longer served for BGP (withdrawn before its release)', () => {
    const deleting = { ...eip('a', '192.0.2.50', { kind: 'ElasticIPAttachment', name: 'a' }) };
    deleting.metadata = { ...deleting.metadata, deletionTimestamp: '2026-12-03T10:00:00Z' };
    const out = desiredNat({
      nodeName: 'n1',
      elasticIPs: [deleting],
      networkInterfaces: [nic('a.eth0', '10.0.0.2', 'n1')],
      attachments: [eipa('a', 'a', 'a.eth0', { phase: 'Attached', nodeName: 'n1' })],
    });
    expect(out.nat).toEqual([{ elasticIP: '192.0.2.50', address: '10.0.0.2' }]);
    expect(out.served).toEqual([]);
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
    // BGP-4: what the BGP loop announces is what the maps get: the refused one is not served.
    expect(out.served.map((e) => e.owner)).toEqual(['ElasticIP ns/a']);
    expect(out.waiting).toEqual([
      'NetworkInterface ns/d.eth0: address 10.0.0.2 or ElasticIP 192.0.2.51 already used by ElasticIPAttachment ns/a, which is older',
    ]);
  });
});

describe('desiredNat trusts only Pods that hold the address, and no reserved address (SEC-1, SEC-2, SEC-5)', () => {
  const attached = () => ({
    nodeName: 'n1',
    elasticIPs: [eip('a', '192.0.2.50', { kind: 'ElasticIPAttachment', name: 'a' })],
    networkInterfaces: [nic('a.eth0', '10.0.0.2', 'n1')],
    attachments: [eipa('a', 'a', 'a.eth0', { phase: 'Attached', nodeName: 'n1' })],
  });

  test('SEC-1 (H1): a NIC whose Pod is missing, completed, deleting, another instance, or without that IP is not translated, each with its reason', () => {
    const cases: Array<[NatInputs['pods'], RegExp]> = [
      [[], /its Pod ns\/a\.eth0 is not on this node/],
      [[pod('ns', 'a.eth0', 'n1', '10.0.0.2', { phase: 'Succeeded' })], /is Succeeded, not Running/],
      [[pod('ns', 'a.eth0', 'n1', '10.0.0.2', { phase: 'Failed' })], /is Failed, not Running/],
      [[pod('ns', 'a.eth0', 'n1', '10.0.0.2', { deletionTimestamp: '2026-01-01T00:00:00Z' })], /is being deleted/],
      [[pod('ns', 'a.eth0', 'n1', '10.0.0.2', { uid: 'other' })], /another Pod of that name \(uid other/],
      [[pod('ns', 'a.eth0', 'n1', '10.0.0.9')], /has address 10\.0\.0\.9, not 10\.0\.0\.2/],
      [[pod('ns', 'a.eth0', 'n1', '10.0.0.2', { hostNetwork: true })], /on the host network/],
    ];
    for (const [pods, reason] of cases) {
      const out = desiredNat({ ...attached(), pods });
      expect(out.nat).toEqual([]);
      expect(out.waiting).toEqual([expect.stringMatching(reason)]);
    }
    // The positive control: the Pod Running with that address binds.
    expect(desiredNat(attached()).nat).toEqual([{ elasticIP: '192.0.2.50', address: '10.0.0.2' }]);
  });

  test('SEC-2, SEC-5 (H2, H5): a NIC address or an ElasticIP that is a reserved or local address is refused with the reason', () => {
    const reserved = {
      notPodAddress: (a: string) =>
        a === '10.0.0.2' ? 'the address of Node n1 status.addresses InternalIP' : undefined,
      notElasticIP: (a: string) =>
        a === '192.0.2.50' ? 'the address of Node n2 status.addresses InternalIP' : undefined,
    };
    const pods = [pod('ns', 'a.eth0', 'n1', '10.0.0.2')];
    expect(
      desiredNat({ ...attached(), pods, reserved: { ...reserved, notElasticIP: () => undefined } }).waiting,
    ).toEqual([expect.stringMatching(/not translated: NetworkInterface ns\/a\.eth0 address the address of Node n1/)]);
    expect(
      desiredNat({ ...attached(), pods, reserved: { ...reserved, notPodAddress: () => undefined } }).waiting,
    ).toEqual([expect.stringMatching(/not translated: ElasticIP the address of Node n2/)]);
    expect(desiredNat({ ...attached(), pods, localAddresses: ['192.0.2.50'] }).waiting).toEqual([
      expect.stringMatching(/ElasticIP 192\.0\.2\.50 is an address of this node's own interfaces/),
    ]);
  });

  test('SEC-2 (H2): of two claims on one address the older object wins, whatever the names', () => {
    const out = desiredNat({
      nodeName: 'n1',
      elasticIPs: [
        eip('aaa', '192.0.2.60', { kind: 'ElasticIPAttachment', name: 'aaa' }),
        eip('victim', '192.0.2.61', { kind: 'ElasticIPAttachment', name: 'victim' }),
      ],
      networkInterfaces: [nic('x.eth0', '10.0.0.5', 'n1'), nic('v.eth0', '10.0.0.5', 'n1')],
      attachments: [
        {
          ...eipa('aaa', 'aaa', 'x.eth0', { phase: 'Attached', nodeName: 'n1' }),
          metadata: { namespace: 'ns', name: 'aaa', creationTimestamp: '2026-02-01T00:00:00Z' },
        },
        {
          ...eipa('victim', 'victim', 'v.eth0', { phase: 'Attached', nodeName: 'n1' }),
          metadata: { namespace: 'ns', name: 'victim', creationTimestamp: '2026-01-01T00:00:00Z' },
        },
      ],
    });
    expect(out.nat).toEqual([{ elasticIP: '192.0.2.61', address: '10.0.0.5' }]);
    expect(out.served.map((e) => e.address)).toEqual(['192.0.2.61']);
    expect(out.waiting).toEqual([
      expect.stringMatching(/ns\/aaa: .*already used by ElasticIPAttachment ns\/victim, which is older/),
    ]);
  });
});
