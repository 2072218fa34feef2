// EIP-7..18 as a table: observed state of one ElasticIP -> phase, conditions (type, status,
// reason, message), status.attachment, ARPAdvertisement, finalizer, Events.
import type { PoolView } from '../../../api/validation';
import {
  eipAdvertisementName,
  planElasticIP,
  type Allocation,
  type ElasticIPObservation,
  type ElasticIPStatus,
  type Resolution,
} from '../../../runtime/controller/eip/plan';
import { decideAddressRequest } from '../../../runtime/controller/allocator/address-request';
import type { AttachmentView, NicView } from '../../../runtime/controller/eip/usage';

const now = new Date('2025-01-01T00:00:00Z');
const t = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s)).toISOString();
const ARP: Resolution = { ok: true, network: 'ext-net', type: 'arp' };
const BGP: Resolution = { ok: true, network: 'ext-bgp', type: 'bgp' };
const ALLOCATED: Allocation = { allocated: true, address: '10.225.51.8', pool: 'pool-a' };
const nic = (name: string, created: number, over: Partial<NicView> = {}): NicView => ({
  name,
  creationTimestamp: t(created),
  deleting: false,
  nodeName: `node-of-${name}`,
  ...over,
});
const att = (name: string, nodeName?: string): AttachmentView => ({
  name,
  networkInterface: `${name}-target.eth0`,
  nodeName,
});

function observe(over: Partial<ElasticIPObservation> = {}): ElasticIPObservation {
  return {
    namespace: 'shop',
    name: 'web-eip',
    generation: 3,
    deleting: false,
    previous: undefined,
    resolution: ARP,
    allocation: ALLOCATED,
    attachments: [],
    nics: [],
    ...over,
  };
}
const cond = (status: ElasticIPStatus | undefined, type: string) => status?.conditions?.find((c) => c.type === type);

interface Row {
  readonly title: string;
  readonly o: Partial<ElasticIPObservation>;
  readonly phase: string;
  /** @default ['True', 'AddressAllocated']: observe() allocates unless the row says otherwise */
  readonly allocated?: [string, string];
  readonly attached: [string, string];
  readonly attachment?: { kind: string; name: string };
  readonly advertisedOn?: string;
  /** Substrings the Attached (or, for Allocated rows, the Allocated) message must contain. */
  readonly says?: { readonly allocated?: string[]; readonly attached?: string[] };
}

const rows: Row[] = [
  {
    title: 'EIP-9 Error: the ExternalNetwork does not exist',
    o: {
      resolution: { ok: false, reason: 'ExternalNetworkNotFound', message: 'ExternalNetwork "x" does not exist' },
      allocation: {
        allocated: false,
        reason: 'ExternalNetworkNotFound',
        message: 'ExternalNetwork "x" does not exist',
      },
    },
    phase: 'Error',
    allocated: ['False', 'ExternalNetworkNotFound'],
    attached: ['False', 'NotAllocated'],
    says: { allocated: ['"x" does not exist'], attached: ['"x" does not exist'] },
  },
  // Pending: the network and its pools resolved, but the allocator found no address for this one.
  ...[
    ['EIP-9 Pending: no free address', 'NoFreeAddress', 'no free address in AddressPool(s) pool-a (16/16 used)'],
    [
      'EIP-3 Pending: the requested address is held by someone else (no steal)',
      'RequestedIPInUse',
      'requested address 10.225.51.8 is held by ServiceLoadBalancer shop/web',
    ],
  ].map(([title, reason, message]): Row => ({
    title,
    o: { allocation: { allocated: false, reason, message } },
    phase: 'Pending',
    allocated: ['False', reason],
    attached: ['False', 'NotAllocated'],
    says: { allocated: [message] },
  })),
  {
    title: 'EIP-9 Available / EIP-18: an address, no user, no ARPAdvertisement',
    o: {},
    phase: 'Available',
    attached: ['False', 'NotInUse'],
    says: { allocated: ['10.225.51.8', 'pool-a', 'ext-net'], attached: ['EIP-18'] },
  },
  {
    title: 'EIP-9 Attached through NAT; ARPAdvertisement on the attachment node (EIP-17)',
    o: { attachments: [att('nginx-attach', 'node-b')] },
    phase: 'Attached',
    attached: ['True', 'AttachedThroughNAT'],
    attachment: { kind: 'ElasticIPAttachment', name: 'nginx-attach' },
    advertisedOn: 'node-b',
    says: { attached: ['nginx-attach', 'node-b'] },
  },
  {
    title: 'Attached through NAT, but the attachment has no node yet: no ARPAdvertisement',
    o: { attachments: [att('nginx-attach')] },
    phase: 'Attached',
    attached: ['True', 'AttachedThroughNAT'],
    attachment: { kind: 'ElasticIPAttachment', name: 'nginx-attach' },
    says: { attached: ['no node'] },
  },
  {
    title: 'EIP-9 Attached directly (EIP-11 rule 3); ARPAdvertisement on the holder node',
    o: { nics: [nic('web-2.eth0', 5), nic('web-1.eth0', 1)] },
    phase: 'Attached',
    attached: ['True', 'AttachedDirectly'],
    attachment: { kind: 'NetworkInterface', name: 'web-1.eth0' },
    advertisedOn: 'node-of-web-1.eth0',
    says: { attached: ['web-1.eth0', 'web-2.eth0 wait'] },
  },
  {
    title: 'Attached directly, the Pod not scheduled yet: no ARPAdvertisement',
    o: { nics: [nic('web.eth0', 1, { nodeName: undefined })] },
    phase: 'Attached',
    attached: ['True', 'AttachedDirectly'],
    attachment: { kind: 'NetworkInterface', name: 'web.eth0' },
    says: { attached: ['not scheduled'] },
  },
  {
    title: 'EIP-11 rule 1: the recorded holder keeps it while deleting; ARPAdvertisement stays on its node',
    o: {
      nics: [nic('old.eth0', 1, { deleting: true, nodeName: 'node-a' }), nic('new.eth0', 0, { nodeName: 'node-b' })],
      previous: { phase: 'Attached', attachment: { kind: 'NetworkInterface', name: 'old.eth0' } },
    },
    phase: 'Attached',
    attached: ['True', 'AttachedDirectly'],
    attachment: { kind: 'NetworkInterface', name: 'old.eth0' },
    advertisedOn: 'node-a',
  },
  {
    title:
      'EIP-12: rule 2 keeps the phase Available, Attached False WaitingForHandover naming the NICs; no ARPAdvertisement (EIP-18)',
    o: { nics: [nic('old.eth0', 1, { deleting: true }), nic('new.eth0', 5)] },
    phase: 'Available',
    attached: ['False', 'WaitingForHandover'],
    says: { attached: ['old.eth0', 'EIP-12'] },
  },
  {
    title: 'EIP-10: an attachment and a NIC at once: Error Conflict naming both; no user, no ARPAdvertisement',
    o: {
      attachments: [att('nat-attach', 'node-b')],
      nics: [nic('web.eth0', 1)],
      previous: { phase: 'Attached', attachment: { kind: 'NetworkInterface', name: 'web.eth0' } },
    },
    phase: 'Error',
    attached: ['False', 'Conflict'],
    says: { attached: ['ElasticIPAttachment(s) nat-attach', 'NetworkInterface(s) web.eth0'] },
  },
  {
    title: 'EIPA-2: two attachments: Error MultipleAttachments naming them; none uses it',
    o: { attachments: [att('b', 'n1'), att('a', 'n2')] },
    phase: 'Error',
    attached: ['False', 'MultipleAttachments'],
    says: { attached: ['a and b', 'EIPA-2'] },
  },
  {
    title:
      'EIP-15: deleting with the holder NIC left: Allocated WaitingForNetworkInterfaces listing the NICs; ARPAdvertisement kept',
    o: {
      deleting: true,
      nics: [nic('web.eth0', 1, { nodeName: 'node-a' }), nic('late.eth0', 9)],
      previous: { phase: 'Attached', attachment: { kind: 'NetworkInterface', name: 'web.eth0' } },
    },
    phase: 'Attached',
    allocated: ['True', 'WaitingForNetworkInterfaces'],
    attached: ['True', 'AttachedDirectly'],
    attachment: { kind: 'NetworkInterface', name: 'web.eth0' },
    advertisedOn: 'node-a',
    says: { allocated: ['late.eth0 and web.eth0', 'EIP-15', '10.225.51.8'] },
  },
  {
    title: 'EIP-16: deleting, no recorded holder: the new NIC gets nothing',
    o: { deleting: true, nics: [nic('new.eth0', 1)] },
    phase: 'Available',
    allocated: ['True', 'WaitingForNetworkInterfaces'],
    attached: ['False', 'ElasticIPDeleting'],
    says: { attached: ['EIP-16', 'new.eth0'] },
  },
  {
    title: 'type bgp: Attached, but never an ARPAdvertisement (EIP-17 is for arp)',
    o: { resolution: BGP, nics: [nic('web.eth0', 1)] },
    phase: 'Attached',
    attached: ['True', 'AttachedDirectly'],
    attachment: { kind: 'NetworkInterface', name: 'web.eth0' },
  },
];

describe('EIP-9..18: ElasticIP status from observed state', () => {
  it.each(rows.map((r) => [r.title, r] as const))('%s', (_title, row) => {
    const plan = planElasticIP(observe(row.o), now);
    const s = plan.status!;
    expect(plan.finalize).toBe(false);
    expect(s.phase).toBe(row.phase);
    expect(s.observedGeneration).toBe(3);
    const allocated = cond(s, 'Allocated')!;
    const attached = cond(s, 'Attached')!;
    expect([allocated.status, allocated.reason]).toEqual(row.allocated ?? ['True', 'AddressAllocated']);
    expect([attached.status, attached.reason]).toEqual(row.attached);
    expect(allocated.observedGeneration).toBe(3);
    expect(attached.observedGeneration).toBe(3);
    expect(s.attachment).toEqual(row.attachment);
    expect(plan.advertisement?.nodeName).toBe(row.advertisedOn);
    if (row.advertisedOn)
      expect(plan.advertisement).toEqual({
        name: 'eip-shop-web-eip',
        externalNetwork: 'ext-net',
        address: '10.225.51.8',
        nodeName: row.advertisedOn,
      });
    for (const text of row.says?.allocated ?? []) expect(allocated.message).toContain(text);
    for (const text of row.says?.attached ?? []) expect(attached.message).toContain(text);
    if (ALLOCATED === (row.o.allocation ?? ALLOCATED))
      expect(s).toMatchObject({ address: '10.225.51.8', addressPool: 'pool-a' });
    else expect(s.address).toBeUndefined();
  });
});

describe('SEC-1, SEC-12: an attachment that may not use the ElasticIP', () => {
  it('SEC-1: its one attachment withheld: Available, Attached False with that reason, no status.attachment, no ARPAdvertisement', () => {
    const withheld = { reason: 'PodNotRunning', message: 'Pod batch of NetworkInterface batch.eth0 has Succeeded' };
    const plan = planElasticIP(observe({ attachments: [{ ...att('batch', 'node-a'), withheld }] }), now);
    expect(plan.status?.phase).toBe('Available');
    expect(plan.status?.attachment).toBeUndefined();
    expect(cond(plan.status, 'Attached')).toMatchObject({
      status: 'False',
      reason: 'PodNotRunning',
      message: expect.stringContaining('ElasticIPAttachment batch may not use 10.225.51.8'),
    });
    expect(plan.advertisement).toBeUndefined();
    // Positive control: the same attachment, not withheld, is advertised on its node.
    expect(planElasticIP(observe({ attachments: [att('batch', 'node-a')] }), now).advertisement?.nodeName).toBe(
      'node-a',
    );
  });

  it('SEC-1: a NIC whose Pod stopped is no holder: the other NIC gets it although the stopped one was recorded', () => {
    const stopped = { reason: 'PodNotRunning', message: 'Pod old has Succeeded' };
    const plan = planElasticIP(
      observe({
        previous: { phase: 'Attached', attachment: { kind: 'NetworkInterface', name: 'old.eth0' } },
        nics: [nic('old.eth0', 1, { stopped }), nic('new.eth0', 2)],
      }),
      now,
    );
    expect(plan.status?.attachment).toEqual({ kind: 'NetworkInterface', name: 'new.eth0' });
  });
});

describe('EN-8: a direct NIC gets no address while the network has no networkID', () => {
  it('Available, Attached False WaitingForNetworkID naming the network and the NICs, no status.attachment, no ARPAdvertisement', () => {
    const plan = planElasticIP(observe({ nics: [nic('late.eth0', 1)], awaitingNetworkID: 'late-net' }), now);
    expect(plan.status?.phase).toBe('Available');
    expect(plan.status?.attachment).toBeUndefined();
    expect(cond(plan.status, 'Attached')).toMatchObject({
      status: 'False',
      reason: 'WaitingForNetworkID',
      message: expect.stringContaining(
        'ExternalNetwork late-net has no status.networkID yet: 10.225.51.8 is given to no NetworkInterface (late.eth0)',
      ),
    });
    expect(plan.advertisement).toBeUndefined();
    // Positive control: the network has its ID.
    const later = planElasticIP(observe({ nics: [nic('late.eth0', 1)] }), now);
    expect(later.status?.attachment).toEqual({ kind: 'NetworkInterface', name: 'late.eth0' });
  });
});

describe('EIP-14/15: deletion', () => {
  it('EIP-14: NAT only (no direct NIC): finalize — release claim, ARPAdvertisement, finalizer', () => {
    const plan = planElasticIP(observe({ deleting: true, attachments: [att('nat', 'node-a')] }), now);
    expect(plan).toMatchObject({ finalize: true, status: undefined, advertisement: undefined });
  });

  it('EIP-15: finishes once the last NIC is gone', () => {
    expect(planElasticIP(observe({ deleting: true, nics: [nic('a', 1)] }), now).finalize).toBe(false);
    expect(planElasticIP(observe({ deleting: true, nics: [] }), now).finalize).toBe(true);
  });
});

describe('Events: one per phase transition, one when the answering node moves', () => {
  it('a transition to Attached is one Normal Event with the Attached reason', () => {
    const plan = planElasticIP(observe({ previous: { phase: 'Available' }, nics: [nic('web.eth0', 1)] }), now);
    expect(plan.events).toEqual([
      {
        type: 'Normal',
        reason: 'AttachedDirectly',
        message: expect.stringContaining('phase Attached: held directly by NetworkInterface web.eth0'),
      },
    ]);
  });

  it('no transition, no Event', () => {
    expect(planElasticIP(observe({ previous: { phase: 'Available' } }), now).events).toEqual([]);
  });

  it('Pending and Error are Warnings explained by the right condition', () => {
    expect(
      planElasticIP(observe({ allocation: { allocated: false, reason: 'NoFreeAddress', message: 'full' } }), now)
        .events,
    ).toEqual([{ type: 'Warning', reason: 'NoFreeAddress', message: 'phase Pending: full' }]);
    expect(planElasticIP(observe({ attachments: [att('a')], nics: [nic('n', 1)] }), now).events[0]).toMatchObject({
      type: 'Warning',
      reason: 'Conflict',
    });
  });

  it('EIP-17/19: the ARPAdvertisement follows the holder to another node, with an Event', () => {
    const plan = planElasticIP(
      observe({
        previous: { phase: 'Attached' },
        nics: [nic('web.eth0', 1, { nodeName: 'node-b' })],
        currentAdvertisementNode: 'node-a',
      }),
      now,
    );
    expect(plan.advertisement?.nodeName).toBe('node-b');
    expect(plan.events).toEqual([
      {
        type: 'Normal',
        reason: 'AnnouncingNodeChanged',
        message: expect.stringContaining('now answered by node node-b (was node-a)'),
      },
    ]);
  });
});

describe('conditions keep lastTransitionTime while their status holds', () => {
  it('a repeated pass rewrites nothing', () => {
    const first = planElasticIP(observe({ nics: [nic('web.eth0', 1)] }), now).status!;
    const again = planElasticIP(
      observe({ nics: [nic('web.eth0', 1)], previous: first }),
      new Date('2025-01-02T00:00:00Z'),
    ).status!;
    expect(again).toEqual(first);
  });
});

describe('EIP-1..3: the address request', () => {
  const pools = new Map<string, PoolView>([
    ['arp-a', { name: 'arp-a', advertiseMode: 'arp', addresses: ['10.225.51.0/28'] }],
    ['bgp-a', { name: 'bgp-a', advertiseMode: 'bgp', addresses: ['10.225.52.0/28'] }],
  ]);
  const net = { name: 'ext-net', type: 'arp', addressPools: ['bgp-a', 'arp-a'] };

  it('EIP-1: a missing network is an error naming it', () => {
    expect(decideAddressRequest({ externalNetwork: 'nope' }, undefined, pools)).toMatchObject({
      ok: false,
      reason: 'ExternalNetworkNotFound',
      message: expect.stringContaining('"nope" does not exist'),
    });
  });

  it('EIP-2: only pools of the network type', () => {
    expect(decideAddressRequest({ externalNetwork: 'ext-net' }, net, pools)).toEqual({
      ok: true,
      network: 'ext-net',
      type: 'arp',
      pools: ['arp-a'],
    });
    expect(
      decideAddressRequest(
        { externalNetwork: 'x' },
        { name: 'x', type: 'arp', addressPools: ['bgp-a', 'missing'] },
        pools,
      ),
    ).toMatchObject({
      ok: false,
      reason: 'NoUsableAddressPool',
      message: expect.stringMatching(/advertiseMode bgp.*AddressPool missing does not exist/),
    });
  });

  it('EIP-3: a requested address must lie in a usable pool', () => {
    expect(decideAddressRequest({ externalNetwork: 'ext-net', requestedIP: '10.225.51.5' }, net, pools)).toMatchObject({
      ok: true,
      requested: { address: '10.225.51.5', pool: 'arp-a' },
    });
    expect(decideAddressRequest({ externalNetwork: 'ext-net', requestedIP: '10.225.52.5' }, net, pools)).toMatchObject({
      ok: false,
      reason: 'RequestedIPNotInPool',
      message: expect.stringContaining('spec.requestedIP: "10.225.52.5"'),
    });
  });
});

it('EIP-17: the ARPAdvertisement name', () => {
  expect(eipAdvertisementName('shop', 'web-eip')).toBe('eip-shop-web-eip');
});
