// desiredNat for EN-9: a direct ElasticIP held by a NIC on another node is carried there by VXLAN
// with its ExternalNetwork's status.networkID; this node's direct ElasticIPs carry that VNI so the
// VXLAN device accepts it. Pure; the agent writes the result to the maps.
import { desiredNat as desiredNatOf, type NatInputs, type NodeObject } from '../../../runtime/agent/nat/desired';
import { podOwner, runningPodsOf } from '../../shared/nat-pods';

/** desiredNat with a Running Pod behind every NIC of the node. */
const desiredNat = (input: Omit<NatInputs, 'pods'>) =>
  desiredNatOf({ ...input, pods: runningPodsOf(input.networkInterfaces, input.nodeName) });

const eip = (name: string, address: string, holder: string, externalNetwork = 'ext') =>
  ({
    metadata: { namespace: 'ns', name },
    spec: { externalNetwork },
    status: { address, attachment: { kind: 'NetworkInterface', name: holder } },
  }) as NatInputs['elasticIPs'][number];
const nic = (name: string, address: string, nodeName: string, elasticIP: string, phase = 'Ready') =>
  ({
    metadata: { namespace: 'ns', name, ownerReferences: [podOwner('ns', name)] },
    spec: { podName: name, interface: 'eth0', nodeName, address, elasticIP },
    status: { phase },
  }) as NatInputs['networkInterfaces'][number];
const network = (name: string, networkID?: number) =>
  ({ metadata: { name }, spec: { type: 'arp', addressPools: ['p'] }, status: { networkID } }) as NonNullable<
    NatInputs['externalNetworks']
  >[number];
const node = (name: string, ...addresses: Array<{ type: string; address: string }>): NodeObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name },
  status: { addresses },
});

const nodes = [
  node('n1', { type: 'InternalIP', address: '192.0.2.1' }),
  node('n2', { type: 'Hostname', address: 'n2' }, { type: 'InternalIP', address: '192.0.2.2' }),
  node('n3', { type: 'Hostname', address: 'n3' }),
];

describe('desiredNat, direct ElasticIPs of other nodes (EN-9)', () => {
  test('EN-9: a Ready NIC on another node holding the ElasticIP: carried to that node with the network VNI', () => {
    const inputs = {
      elasticIPs: [eip('a', '198.51.100.7', 'a.eth0')],
      networkInterfaces: [nic('a.eth0', '10.0.1.2', 'n2', 'a')],
      attachments: [],
      externalNetworks: [network('ext', 4242)],
      nodes,
    };
    expect(desiredNat({ nodeName: 'n1', ...inputs })).toEqual({
      nat: [],
      direct: [],
      remote: [{ elasticIP: '198.51.100.7', node: '192.0.2.2', vni: 4242 }],
      // BGP-4: the node that carries it does not serve it, so does not announce it.
      served: [],
      waiting: [],
    });
    // On the pod's node the same objects give the direct binding, with the VNI its device accepts.
    expect(desiredNat({ nodeName: 'n2', ...inputs })).toEqual({
      nat: [],
      direct: [{ elasticIP: '198.51.100.7', address: '10.0.1.2', vni: 4242 }],
      remote: [],
      served: [
        { address: '198.51.100.7', externalNetwork: expect.any(String), owner: expect.stringMatching(/^ElasticIP /) },
      ],
      waiting: [],
    });
  });

  test('EN-9, EN-8: networkID 0, a Node without InternalIP, or a NIC not Ready: nothing carried, each with its reason', () => {
    const out = desiredNat({
      nodeName: 'n1',
      elasticIPs: [
        eip('zero', '198.51.100.1', 'zero.eth0', 'fresh'),
        eip('noip', '198.51.100.2', 'noip.eth0'),
        eip('pending', '198.51.100.3', 'pending.eth0'),
        eip('unknown-net', '198.51.100.4', 'unknown-net.eth0', 'gone'),
      ],
      networkInterfaces: [
        nic('zero.eth0', '10.0.1.2', 'n2', 'zero'),
        nic('noip.eth0', '10.0.3.2', 'n3', 'noip'),
        nic('pending.eth0', '10.0.1.3', 'n2', 'pending', 'Pending'),
        nic('unknown-net.eth0', '10.0.1.4', 'n2', 'unknown-net'),
      ],
      attachments: [],
      externalNetworks: [network('fresh', 0), network('ext', 7)],
      nodes,
    });
    expect(out.remote).toEqual([]);
    expect(out.waiting).toEqual([
      expect.stringMatching(/noip\.eth0 .*node n3.*the Node has no IPv4 InternalIP/),
      expect.stringMatching(/unknown-net\.eth0 .*status\.networkID is 0 \(EN-8\)/),
      expect.stringMatching(/zero\.eth0 .*198\.51\.100\.1.*status\.networkID is 0 \(EN-8\)/),
    ]);
  });

  test('EN-9: an ElasticIP held here is never also carried away; the same address on two other nodes is carried to one', () => {
    const out = desiredNat({
      nodeName: 'n1',
      elasticIPs: [
        eip('a', '198.51.100.7', 'a.eth0'),
        eip('b', '198.51.100.7', 'b.eth0'),
        eip('c', '198.51.100.9', 'c.eth0'),
      ],
      networkInterfaces: [
        nic('a.eth0', '10.0.0.2', 'n1', 'a'),
        nic('b.eth0', '10.0.1.2', 'n2', 'b'),
        nic('c.eth0', '10.0.1.3', 'n2', 'c'),
        nic('d.eth0', '10.0.1.4', 'n2', 'c'),
      ],
      attachments: [],
      externalNetworks: [network('ext', 9)],
      nodes,
    });
    expect(out.direct).toEqual([{ elasticIP: '198.51.100.7', address: '10.0.0.2', vni: 9 }]);
    // d.eth0 is not named by ElasticIP c's status: only c.eth0 holds it.
    expect(out.remote).toEqual([{ elasticIP: '198.51.100.9', node: '192.0.2.2', vni: 9 }]);
    expect(out.waiting).toEqual([expect.stringMatching(/b\.eth0 .*also held by NetworkInterface ns\/a\.eth0/)]);
  });
});
