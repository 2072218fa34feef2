// Pure admission rules of the webhooks (no server): EN-3, EN-4, EN-5, AP-2, ARP-2, ARP-4, ARP-5, EIP-5.
import { ANNOTATIONS, WEBHOOK_PATHS } from '../../../api';
import {
  toAdmissionResponse,
  type AdmissionRequest,
  type Verdict,
} from '../../../runtime/controller/webhook/admission';
import { admissionHandlers } from '../../../runtime/controller/webhook/handlers';
import { hashedAdvertisementName, ownerMetadata } from '../../../runtime/controller/arp/names';
import { checkARPAdvertisementAdmission } from '../../../runtime/controller/webhook/rules/arp-advertisement';
import {
  checkElasticIPAttachmentAdmission,
  checkPodAdmission,
  podElasticIPReferences,
} from '../../../runtime/controller/webhook/rules/elastic-ip';
import {
  checkAddressPoolAdmission,
  checkExternalNetworkAdmission,
} from '../../../runtime/controller/webhook/rules/networks';
import type {
  AddressPoolObject,
  ARPAdvertisementObject,
  ElasticIPAttachmentObject,
  ExternalNetworkObject,
  NetworkInterfaceObject,
  NodeObject,
  PodObject,
  WebhookCaches,
} from '../../../runtime/controller/webhook/views';

const DELETED_AT = '2025-01-01T00:00:00Z';
const pool = (name: string, advertiseMode: string, addresses: string[], deleting = false): AddressPoolObject => ({
  metadata: { name, ...(deleting ? { deletionTimestamp: DELETED_AT } : {}) },
  spec: { advertiseMode, addresses },
});
const network = (name: string, type: string, addressPools: string[], deleting = false): ExternalNetworkObject => ({
  metadata: { name, ...(deleting ? { deletionTimestamp: DELETED_AT } : {}) },
  spec: { type, addressPools },
});
const arpAd = (name: string, address: string, externalNetwork = 'lan', nodeName = 'n1'): ARPAdvertisementObject => ({
  metadata: { name },
  spec: { address, externalNetwork, nodeName },
});
const node = (name: string, internalIP: string): NodeObject => ({
  metadata: { name },
  status: {
    addresses: [
      { type: 'InternalIP', address: internalIP },
      { type: 'Hostname', address: name },
    ],
  },
});
const attachment = (
  name: string,
  elasticIP: string,
  namespace = 'ns',
  deleting = false,
): ElasticIPAttachmentObject => ({
  metadata: { name, namespace, ...(deleting ? { deletionTimestamp: DELETED_AT } : {}) },
  spec: { elasticIP, networkInterface: 'web.eth0' },
});
const nic = (name: string, podName: string, elasticIP?: string, namespace = 'ns'): NetworkInterfaceObject => ({
  metadata: { name, namespace },
  spec: { podName, interface: 'eth0', ...(elasticIP ? { elasticIP } : {}) },
});
const pod = (name: string, annotations: Record<string, string> = {}, namespace = 'ns'): PodObject => ({
  metadata: { name, namespace, annotations },
});

function req<T>(operation: 'CREATE' | 'UPDATE', object: T, oldObject?: T, namespace?: string): AdmissionRequest<T> {
  return { uid: 'u1', operation, object, oldObject, namespace };
}

function denial(v: Verdict): { reason: string; message: string } {
  if (v.allowed) throw new Error('expected a denial, got allowed');
  return { reason: v.reason, message: toAdmissionResponse('u', v).status!.message };
}

describe('ExternalNetwork admission (EN-3, EN-4, EN-5)', () => {
  const pools = [
    pool('p1', 'arp', ['10.0.0.0/24']),
    pool('p2', 'arp', ['10.0.1.0/24']),
    pool('b1', 'bgp', ['10.0.2.0/24']),
  ];
  // Every case reads these pools; what varies is the request and the other networks.
  const admit = (request: AdmissionRequest<ExternalNetworkObject>, externalNetworks: ExternalNetworkObject[]) =>
    checkExternalNetworkAdmission(request, { externalNetworks, addressPools: pools });

  it('EN-4: allows a network whose pools no other network lists', () => {
    expect(admit(req('CREATE', network('a', 'arp', ['p1'])), [network('b', 'arp', ['p2'])]).allowed).toBe(true);
  });

  it('EN-4: refuses a pool listed by another network, naming that network and the field', () => {
    const d = denial(admit(req('CREATE', network('a', 'arp', ['p2', 'p1'])), [network('b', 'arp', ['p1'])]));
    expect(d.reason).toBe('Forbidden');
    expect(d.message).toContain('spec.addressPools[1]: "p1" is already listed by ExternalNetwork b');
    expect(d.message).toContain('(EN-4)');
  });

  it('EN-4: a network being deleted still holds its pools', () => {
    const d = denial(admit(req('CREATE', network('a', 'arp', ['p1'])), [network('old', 'arp', ['p1'], true)]));
    expect(d.message).toContain('ExternalNetwork old (it is being deleted');
  });

  it('EN-4: the network itself (an update of its own spec) is not a conflict', () => {
    const a = network('a', 'arp', ['p1']);
    const updated = network('a', 'arp', ['p1', 'p2']);
    expect(admit(req('UPDATE', updated, a), [a]).allowed).toBe(true);
  });

  it('EN-5: any update of a network that shares a pool from before the rule is refused, even one not touching addressPools', () => {
    const a = network('a', 'arp', ['p1']);
    const relabelled: ExternalNetworkObject = { ...a, metadata: { ...a.metadata, labels: { team: 'x' } } };
    const d = denial(admit(req('UPDATE', relabelled, a), [a, network('b', 'arp', ['p1'])]));
    expect(d.message).toContain('ExternalNetwork b');
    expect(d.message).toContain('(EN-5)');
  });

  it('EN-5: an update while the network is being deleted (finalizer removal) is allowed', () => {
    const a = network('a', 'arp', ['p1'], true);
    expect(admit(req('UPDATE', a, a), [a, network('b', 'arp', ['p1'])]).allowed).toBe(true);
  });

  it('EN-3: refuses a pool whose advertiseMode differs from the type, naming the pool; missing pools are not an error', () => {
    const d = denial(admit(req('CREATE', network('a', 'arp', ['p1', 'b1', 'missing'])), []));
    expect(d.reason).toBe('Invalid');
    expect(d.message).toBe(
      'spec.addressPools[1]: "b1" is an AddressPool with advertiseMode bgp, but ExternalNetwork a has type arp (EN-3)',
    );
  });

  it('EN-4 and EN-3 together: Forbidden, both named', () => {
    const d = denial(admit(req('CREATE', network('a', 'arp', ['p1', 'b1'])), [network('b', 'arp', ['p1'])]));
    expect(d.reason).toBe('Forbidden');
    expect(d.message).toMatch(/ExternalNetwork b.*EN-4.*b1.*EN-3/);
  });
});

describe('AddressPool admission (AP-2 across pools)', () => {
  const others = [pool('lan', 'arp', ['10.0.0.0/24']), pool('old', 'arp', ['10.9.0.10-10.9.0.20'], true)];
  const admit = (request: AdmissionRequest<AddressPoolObject>, addressPools = others) =>
    checkAddressPoolAdmission(request, { addressPools });

  it('AP-2: allows a pool overlapping no other', () => {
    expect(admit(req('CREATE', pool('new', 'arp', ['10.0.1.0/24']))).allowed).toBe(true);
  });

  it('AP-2: refuses an overlap, naming the other pool and its item', () => {
    const d = denial(admit(req('CREATE', pool('new', 'arp', ['10.1.0.0/24', '10.0.0.128-10.0.0.130']))));
    expect(d.reason).toBe('Forbidden');
    expect(d.message).toBe(
      'spec.addresses[1]: "10.0.0.128-10.0.0.130" overlaps "10.0.0.0/24" of AddressPool lan (AP-2)',
    );
  });

  it('AP-2: a pool being deleted still holds its addresses', () => {
    expect(denial(admit(req('CREATE', pool('new', 'arp', ['10.9.0.0/24'])))).message).toContain('AddressPool old');
  });

  it('AP-2: an update of the pool itself does not overlap itself', () => {
    const lan = others[0];
    expect(admit(req('UPDATE', pool('lan', 'arp', ['10.0.0.0/24', '10.0.5.0/24']), lan)).allowed).toBe(true);
  });

  it('AP-2: items overlapping each other are Invalid', () => {
    const d = denial(admit(req('CREATE', pool('new', 'arp', ['10.5.0.0/24', '10.5.0.7-10.5.0.9'])), []));
    expect(d.reason).toBe('Invalid');
    expect(d.message).toContain('overlaps spec.addresses[0]');
  });

  it('AP-2: an update that leaves spec.addresses alone passes with a warning when an old overlap exists', () => {
    const legacy = pool('legacy', 'arp', ['10.0.0.0/25']);
    const v = admit(req('UPDATE', { ...legacy, metadata: { name: 'legacy', labels: { a: 'b' } } }, legacy), [
      ...others,
      legacy,
    ]);
    expect(v.allowed).toBe(true);
    expect(v.allowed && v.warnings?.[0]).toContain('AddressPool lan');
  });
});

describe('ARPAdvertisement admission (ARP-2, ARP-4, ARP-5)', () => {
  const snapshot = {
    arpAdvertisements: [arpAd('eip-ns-web', '10.0.0.10', 'lan', 'n2')],
    externalNetworks: [network('lan', 'arp', ['p1']), network('wan', 'bgp', ['b1'])],
    addressPools: [pool('p1', 'arp', ['10.0.0.0/24']), pool('b1', 'bgp', ['10.0.2.0/24'])],
    nodes: [node('n1', '10.0.0.5'), node('n2', '10.0.0.6')],
  };

  it('allows a free address inside a pool of the arp network', () => {
    expect(checkARPAdvertisementAdmission(req('CREATE', arpAd('slb-ns-a', '10.0.0.11')), snapshot).allowed).toBe(true);
  });

  it('ARP-4: refuses an address another ARPAdvertisement has, Forbidden, naming it', () => {
    const d = denial(checkARPAdvertisementAdmission(req('CREATE', arpAd('slb-ns-a', '10.0.0.10')), snapshot));
    expect(d.reason).toBe('Forbidden');
    expect(d.message).toContain(
      'spec.address: "10.0.0.10" is already advertised by ARPAdvertisement eip-ns-web (node n2)',
    );
  });

  it('ARP-5: refuses a Node InternalIP, naming the node', () => {
    const d = denial(checkARPAdvertisementAdmission(req('CREATE', arpAd('x', '10.0.0.5')), snapshot));
    expect(d.message).toContain('is the InternalIP of Node n1');
    expect(d.message).toContain('ARP-5');
  });

  it('ARP-2: refuses a missing network, a bgp network, and an address outside the pools', () => {
    expect(
      denial(checkARPAdvertisementAdmission(req('CREATE', arpAd('x', '10.0.0.12', 'nope')), snapshot)).message,
    ).toBe('spec.externalNetwork: "nope" names no existing ExternalNetwork (ARP-2)');
    expect(
      denial(checkARPAdvertisementAdmission(req('CREATE', arpAd('x', '10.0.2.12', 'wan')), snapshot)).message,
    ).toContain('type bgp; an ARPAdvertisement needs type arp (ARP-2)');
    const outside = denial(checkARPAdvertisementAdmission(req('CREATE', arpAd('x', '10.7.0.1')), snapshot));
    expect(outside.reason).toBe('Invalid');
    expect(outside.message).toContain(
      'is not inside any arp AddressPool of ExternalNetwork lan: p1 (10.0.0.0/24) (ARP-2)',
    );
  });

  it("ARP-4, NAME-1: the controller's copy of its own object under its other name is admitted only beside that object, same owner, same node", () => {
    const owner = { kind: 'ElasticIP' as const, namespace: 'ns', name: 'web' };
    const marked = (name: string, nodeName: string, who = owner): ARPAdvertisementObject => ({
      ...arpAd(name, '10.0.0.10', 'lan', nodeName),
      metadata: { name, ...ownerMetadata(who) },
    });
    const oldName = hashedAdvertisementName(owner);
    const old = marked(oldName, 'n2');
    const snap = { ...snapshot, arpAdvertisements: [old] };
    const copy = marked('eip-ns-web', 'n2');
    const check = (ad: ARPAdvertisementObject, replacing?: string, s = snap) =>
      checkARPAdvertisementAdmission(req('CREATE', ad), s, replacing).allowed;
    expect(check(copy, oldName)).toBe(true);
    // Not without `replacing` (the webhook never passes it), nor replacing another name.
    expect(check(copy)).toBe(false);
    expect(check(copy, 'eip-ns-other')).toBe(false);
    // Not on another node, not for another owner's marks, not when the old object is not the owner's.
    expect(check(marked('eip-ns-web', 'n1'), oldName)).toBe(false);
    expect(check(marked('eip-ns-web', 'n2', { ...owner, name: 'other' }), oldName)).toBe(false);
    const unmarked = arpAd(oldName, '10.0.0.10', 'lan', 'n2');
    expect(check(copy, oldName, { ...snapshot, arpAdvertisements: [unmarked] })).toBe(false);
    // A third object of the address is still refused.
    const third = arpAd('third', '10.0.0.10', 'lan', 'n2');
    expect(check(copy, oldName, { ...snapshot, arpAdvertisements: [old, third] })).toBe(false);
  });

  it('ARP-3: an update that moves nodeName is allowed, even for an address that is now doubly held', () => {
    const held = arpAd('eip-ns-web', '10.0.0.10', 'lan', 'n2');
    const dup = arpAd('dup', '10.0.0.10', 'lan', 'n1');
    expect(
      checkARPAdvertisementAdmission(req('UPDATE', { ...dup, spec: { ...dup.spec, nodeName: 'n2' } }, dup), {
        ...snapshot,
        arpAdvertisements: [held, dup],
      }).allowed,
    ).toBe(true);
  });
});

describe('EIP-5: an ElasticIP through an attachment or directly on a NIC, never both', () => {
  it("reads the annotations with the pod controller's parser (EIP-4, NIC-1): the same Pods are accepted and refused", () => {
    const shorthand = podElasticIPReferences({ [ANNOTATIONS.elasticIP]: 'a' });
    expect(shorthand.references).toEqual([
      { interface: 'eth0', elasticIP: 'a', field: `metadata.annotations["${ANNOTATIONS.elasticIP}"]` },
    ]);
    const list = podElasticIPReferences({
      [ANNOTATIONS.networks]: '[{"interface":"eth1","elasticIP":"b"},{"interface":"eth2"}]',
    });
    expect(list.issues).toEqual([]);
    expect(list.references.map((r) => `${r.interface}=${r.elasticIP} ${r.field}`)).toEqual([
      `eth1=b metadata.annotations["${ANNOTATIONS.networks}"][0].elasticIP`,
    ]);
    const both = podElasticIPReferences({
      [ANNOTATIONS.elasticIP]: 'a',
      [ANNOTATIONS.networks]: '[{"interface":"eth1","elasticIP":"b"}]',
    });
    expect(both.issues[0].message).toContain('use one');
    expect(podElasticIPReferences({ [ANNOTATIONS.networks]: '{"interface":"eth1"}' }).issues[0].message).toContain(
      'must be a JSON list',
    );
    expect(podElasticIPReferences({ [ANNOTATIONS.networks]: 'nope' }).issues[0].message).toContain('is not valid JSON');
    expect(
      podElasticIPReferences({ [ANNOTATIONS.networks]: '[{"interface":"eth0","elasticIP":3}]' }).issues[0].field,
    ).toBe(`metadata.annotations["${ANNOTATIONS.networks}"]`);
  });

  it('Pod: refused when an attachment in its namespace uses the ElasticIP (even one being deleted), naming it', () => {
    const snapshot = {
      elasticIPAttachments: [attachment('nat-a', 'eip-a', 'ns', true), attachment('other-ns', 'eip-b', 'elsewhere')],
    };
    const d = denial(
      checkPodAdmission(req('CREATE', pod('web', { [ANNOTATIONS.elasticIP]: 'eip-a' }), undefined, 'ns'), snapshot),
    );
    expect(d.reason).toBe('Forbidden');
    expect(d.message).toContain(
      `metadata.annotations["${ANNOTATIONS.elasticIP}"]: "eip-a" is used through NAT by ElasticIPAttachment nat-a`,
    );
    expect(
      checkPodAdmission(
        req(
          'CREATE',
          pod('web', { [ANNOTATIONS.networks]: '[{"interface":"eth0","elasticIP":"eip-b"}]' }),
          undefined,
          'ns',
        ),
        snapshot,
      ).allowed,
    ).toBe(true);
  });

  it('Pod: a networks annotation that cannot be read is Invalid', () => {
    expect(
      denial(
        checkPodAdmission(req('CREATE', pod('web', { [ANNOTATIONS.networks]: 'x' }), undefined, 'ns'), {
          elasticIPAttachments: [],
        }),
      ).reason,
    ).toBe('Invalid');
  });

  it('ElasticIPAttachment: refused when a NetworkInterface holds the ElasticIP, naming the NIC and its Pod', () => {
    const d = denial(
      checkElasticIPAttachmentAdmission(req('CREATE', attachment('nat', 'eip-a'), undefined, 'ns'), {
        networkInterfaces: [nic('web.eth0', 'web', 'eip-a')],
        pods: [pod('web', { [ANNOTATIONS.elasticIP]: 'eip-a' })],
        elasticIPAttachments: [],
      }),
    );
    expect(d.message).toBe(
      'spec.elasticIP: "eip-a" is held directly by NetworkInterface web.eth0 of Pod web: an ElasticIP is used by an attachment or directly by a NIC, never both (EIP-5)',
    );
  });

  it('ElasticIPAttachment: refused when a Pod names the ElasticIP before its NIC exists; other namespaces and NAT NICs do not count', () => {
    const snapshot = {
      networkInterfaces: [nic('db.eth0', 'db'), nic('x.eth0', 'x', 'eip-a', 'elsewhere')],
      pods: [pod('web', { [ANNOTATIONS.networks]: '[{"interface":"eth1","elasticIP":"eip-a"}]' })],
      elasticIPAttachments: [],
    };
    expect(
      denial(checkElasticIPAttachmentAdmission(req('CREATE', attachment('nat', 'eip-a'), undefined, 'ns'), snapshot))
        .message,
    ).toContain('is named directly by Pod web');
    expect(
      checkElasticIPAttachmentAdmission(req('CREATE', attachment('nat', 'eip-b'), undefined, 'ns'), snapshot).allowed,
    ).toBe(true);
  });
});

describe('SEC-12, SEC-19: one attachment per NIC; the Pod rule on UPDATE', () => {
  const onNic = (name: string, elasticIP: string, networkInterface: string): ElasticIPAttachmentObject => ({
    metadata: { name, namespace: 'ns' },
    spec: { elasticIP, networkInterface },
  });

  it('SEC-12: an attachment of a NIC another attachment uses is refused, naming it; another namespace does not count', () => {
    const snapshot = {
      networkInterfaces: [],
      pods: [],
      elasticIPAttachments: [onNic('first', 'eip-a', 'web.eth0'), { ...onNic('far', 'eip-c', 'db.eth0') }],
    };
    const d = denial(
      checkElasticIPAttachmentAdmission(req('CREATE', onNic('second', 'eip-b', 'web.eth0'), undefined, 'ns'), snapshot),
    );
    expect(d.message).toBe(
      'spec.networkInterface: "web.eth0" is already used by ElasticIPAttachment first (ElasticIP eip-a): a NetworkInterface has one attachment at most (M7)',
    );
    const elsewhere = {
      ...snapshot,
      elasticIPAttachments: [
        { ...onNic('first', 'eip-a', 'web.eth0'), metadata: { name: 'first', namespace: 'other' } },
      ],
    };
    expect(
      checkElasticIPAttachmentAdmission(req('CREATE', onNic('second', 'eip-b', 'web.eth0'), undefined, 'ns'), elsewhere)
        .allowed,
    ).toBe(true);
  });

  it('SEC-12: an attachment of a NIC that holds another ElasticIP directly is refused, naming that ElasticIP', () => {
    const d = denial(
      checkElasticIPAttachmentAdmission(req('CREATE', onNic('nat', 'eip-b', 'web.eth0'), undefined, 'ns'), {
        networkInterfaces: [nic('web.eth0', 'web', 'eip-a')],
        pods: [],
        elasticIPAttachments: [],
      }),
    );
    expect(d.message).toContain('spec.networkInterface: "web.eth0" holds ElasticIP eip-a directly');
  });

  it('SEC-19: a Pod UPDATE that adds an ElasticIP an attachment uses is refused; one that leaves the annotations alone passes', () => {
    const snapshot = { elasticIPAttachments: [attachment('nat-a', 'eip-a')] };
    const before = pod('web', {});
    const after = pod('web', { [ANNOTATIONS.elasticIP]: 'eip-a' });
    expect(denial(checkPodAdmission(req('UPDATE', after, before, 'ns'), snapshot)).message).toContain(
      'is used through NAT by ElasticIPAttachment nat-a',
    );
    const relabelled = { metadata: { ...after.metadata, labels: { a: 'b' } } };
    expect(checkPodAdmission(req('UPDATE', relabelled, after, 'ns'), snapshot).allowed).toBe(true);
  });
});

describe('admission handlers read the caches and call the rules', () => {
  const list = <T>(items: T[]) => ({ list: () => items });
  const caches: WebhookCaches = {
    addressPools: list([pool('p1', 'arp', ['10.0.0.0/24'])]),
    externalNetworks: list([network('lan', 'arp', ['p1'])]),
    arpAdvertisements: list([]),
    nodes: list([]),
    elasticIPAttachments: list([attachment('nat', 'eip-a')]),
    networkInterfaces: list([]),
    pods: { list: async (ns?: string) => (ns === 'ns' ? [pod('web', { [ANNOTATIONS.elasticIP]: 'eip-b' })] : []) },
  };

  it('has one handler per webhook path', () => {
    expect(Object.keys(admissionHandlers).sort()).toEqual(Object.values(WEBHOOK_PATHS).sort());
  });

  it('routes each path to its rule (EN-4, EIP-5)', async () => {
    const en = await admissionHandlers[WEBHOOK_PATHS.externalNetwork](
      { uid: 'u', operation: 'CREATE', object: network('x', 'arp', ['p1']) },
      caches,
    );
    expect(en.allowed).toBe(false);
    const eipa = await admissionHandlers[WEBHOOK_PATHS.elasticIPAttachment](
      { uid: 'u', operation: 'CREATE', namespace: 'ns', object: attachment('n2', 'eip-b') },
      caches,
    );
    expect(denial(eipa).message).toContain('Pod web');
  });
});

describe('AdmissionResponse', () => {
  it('a denial carries code, reason, message and causes', () => {
    const r = toAdmissionResponse('abc', {
      allowed: false,
      reason: 'Forbidden',
      issues: [{ field: 'spec.address', value: '1.2.3.4', message: 'is taken (ARP-4)' }],
    });
    expect(r).toEqual({
      uid: 'abc',
      allowed: false,
      status: {
        code: 403,
        reason: 'Forbidden',
        message: 'spec.address: "1.2.3.4" is taken (ARP-4)',
        details: {
          causes: [
            {
              field: 'spec.address',
              message: 'spec.address: "1.2.3.4" is taken (ARP-4)',
              reason: 'FieldValueForbidden',
            },
          ],
        },
      },
    });
    expect(toAdmissionResponse('abc', { allowed: true })).toEqual({ uid: 'abc', allowed: true });
  });
});
