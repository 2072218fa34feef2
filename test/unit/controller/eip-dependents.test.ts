// NIC-1 / EIP-10 / EIP-13 (NetworkInterface status) and EIPA-1 / EIPA-2 (ElasticIPAttachment
// status): a user is Ready/Attached only when the ElasticIP's written status.attachment names it.
import {
  planAttachmentStatus,
  planNetworkInterfaceStatus,
  type AttachmentObservation,
  type ElasticIPView,
  type NetworkInterfaceObservation,
} from '../../../runtime/controller/eip/dependents';
import type { ElasticIPStatus } from '../../../runtime/controller/eip/plan';
import type { Usage } from '../../../runtime/controller/eip/usage';

const now = new Date('2025-01-01T00:00:00Z');
const holderNic = { name: 'web.eth0', deleting: false, nodeName: 'node-a' };
const attachedTo = (kind: 'NetworkInterface' | 'ElasticIPAttachment', name: string): ElasticIPStatus => ({
  phase: 'Attached',
  address: '10.225.51.8',
  attachment: { kind, name },
});
const eip = (status: ElasticIPStatus | undefined, usage: Usage, deleting = false): ElasticIPView => ({
  name: 'web-eip',
  deleting,
  status,
  usage,
});

describe('NetworkInterface status (NIC-1, EIP-10, EIP-11, EIP-13)', () => {
  const observe = (over: Partial<NetworkInterfaceObservation>): NetworkInterfaceObservation => ({
    name: 'web.eth0',
    generation: 2,
    elasticIP: 'web-eip',
    eip: undefined,
    previous: undefined,
    ...over,
  });
  const rows: Array<[string, Partial<NetworkInterfaceObservation>, string, string, string[]]> = [
    [
      'a NIC with no ElasticIP is Ready (a NAT target)',
      { elasticIP: undefined },
      'Ready',
      'NoElasticIP',
      ['ElasticIPAttachment'],
    ],
    [
      'the ElasticIP does not exist: Pending',
      {},
      'Pending',
      'WaitingForElasticIP',
      ["spec.elasticIP: ElasticIP web-eip (from its Pod's annotation) does not exist in this namespace"],
    ],
    [
      "EN-8: the ElasticIP's network has no networkID yet: Pending, naming the network",
      {
        eip: eip(
          { phase: 'Available', address: '10.225.51.8' },
          { kind: 'waitingForNetworkID', network: 'late-net', nics: ['web.eth0'] },
        ),
      },
      'Pending',
      'WaitingForNetworkID',
      ['ExternalNetwork late-net, which has no status.networkID yet', 'EN-8'],
    ],
    [
      'Ready when the ElasticIP status names it',
      {
        eip: eip(attachedTo('NetworkInterface', 'web.eth0'), {
          kind: 'direct',
          holder: holderNic,
          rule: 'current',
          others: [],
        }),
      },
      'Ready',
      'ElasticIPHeld',
      ['10.225.51.8'],
    ],
    [
      'EIP-10: Pending WaitingForElasticIP naming the attachment',
      { eip: eip({ phase: 'Error' }, { kind: 'conflict', attachments: ['nat-attach'], nics: ['web.eth0'] }) },
      'Pending',
      'WaitingForElasticIP',
      ['ElasticIPAttachment(s) nat-attach', 'EIP-10'],
    ],
    [
      'EIP-11/13: lost the choice: Pending naming the holder',
      {
        name: 'web2.eth0',
        eip: eip(attachedTo('NetworkInterface', 'web.eth0'), {
          kind: 'direct',
          holder: holderNic,
          rule: 'current',
          others: ['web2.eth0'],
        }),
      },
      'Pending',
      'ElasticIPHeldElsewhere',
      ['held by NetworkInterface web.eth0'],
    ],
    [
      'EIP-12: waiting for the handover: Pending naming the deleting NIC',
      {
        name: 'new.eth0',
        eip: eip(
          { phase: 'Available' },
          { kind: 'handover', waitingFor: ['old.eth0'], nics: ['new.eth0', 'old.eth0'] },
        ),
      },
      'Pending',
      'WaitingForHandover',
      ['old.eth0'],
    ],
    [
      'EIP-16: the ElasticIP is being deleted and another NIC still holds it: this one will never get it',
      {
        name: 'late.eth0',
        eip: eip(
          attachedTo('NetworkInterface', 'web.eth0'),
          { kind: 'direct', holder: holderNic, rule: 'current', others: ['late.eth0'] },
          true,
        ),
      },
      'Pending',
      'ElasticIPDeleting',
      ['EIP-16'],
    ],
    [
      'EIP-15: the holder stays Ready while the ElasticIP is being deleted',
      {
        eip: eip(
          attachedTo('NetworkInterface', 'web.eth0'),
          { kind: 'direct', holder: holderNic, rule: 'current', others: [] },
          true,
        ),
      },
      'Ready',
      'ElasticIPHeld',
      [],
    ],
    [
      'EIP-16: the ElasticIP is being deleted',
      { eip: eip({ phase: 'Available' }, { kind: 'withheld', nics: ['web.eth0'] }, true) },
      'Pending',
      'ElasticIPDeleting',
      ['EIP-16'],
    ],
    [
      'chosen, but not recorded in the ElasticIP status yet: still Pending (record first)',
      { eip: eip({ phase: 'Available' }, { kind: 'direct', holder: holderNic, rule: 'oldest', others: [] }) },
      'Pending',
      'WaitingForElasticIP',
      ['has not recorded this NetworkInterface'],
    ],
    [
      'the ElasticIP has no address: Pending with its reason',
      {
        eip: eip(
          {
            phase: 'Pending',
            conditions: [
              {
                type: 'Allocated',
                status: 'False',
                reason: 'NoFreeAddress',
                message: 'pool full',
                lastTransitionTime: '2025-01-01T00:00:00Z',
              },
            ],
          },
          { kind: 'direct', holder: holderNic, rule: 'oldest', others: [] },
        ),
      },
      'Pending',
      'WaitingForElasticIP',
      ['is Pending: pool full'],
    ],
  ];

  it.each(rows)('%s', (_title, over, phase, reason, says) => {
    const s = planNetworkInterfaceStatus(observe(over), now);
    expect(s.phase).toBe(phase);
    expect(s.reason).toBe(reason);
    expect(s.observedGeneration).toBe(2);
    expect(s.conditions).toEqual([
      {
        type: 'Ready',
        status: phase === 'Ready' ? 'True' : 'False',
        reason,
        message: s.message,
        observedGeneration: 2,
        lastTransitionTime: '2025-01-01T00:00:00Z',
      },
    ]);
    for (const text of says) expect(s.message).toContain(text);
  });
});

describe('ElasticIPAttachment status (EIPA-1, EIPA-2, EIP-10)', () => {
  const nat: Usage = {
    kind: 'nat',
    attachment: { name: 'nat-attach', networkInterface: 'nginx.eth0', nodeName: 'node-b' },
  };
  const observe = (over: Partial<AttachmentObservation>): AttachmentObservation => ({
    name: 'nat-attach',
    generation: 1,
    elasticIP: 'web-eip',
    networkInterface: 'nginx.eth0',
    nic: { nodeName: 'node-b' },
    eip: eip(attachedTo('ElasticIPAttachment', 'nat-attach'), nat),
    previous: undefined,
    ...over,
  });
  const rows: Array<[string, Partial<AttachmentObservation>, string, string, string | undefined, string[]]> = [
    [
      'Attached: the ElasticIP names it and the NIC has a node; status.nodeName is that node',
      {},
      'Attached',
      'Attached',
      'node-b',
      ['nginx.eth0 on node node-b'],
    ],
    [
      'the ElasticIP does not exist',
      { eip: undefined },
      'Pending',
      'ElasticIPNotFound',
      'node-b',
      ['ElasticIP web-eip does not exist'],
    ],
    [
      'the NetworkInterface does not exist',
      { nic: undefined },
      'Pending',
      'NetworkInterfaceNotFound',
      undefined,
      ['NetworkInterface nginx.eth0 does not exist'],
    ],
    [
      'the NetworkInterface has no node',
      { nic: {} },
      'Pending',
      'NetworkInterfaceNotScheduled',
      undefined,
      ['no node yet'],
    ],
    [
      'EIP-10: Pending Conflict, no NAT, naming the NIC',
      { eip: eip({ phase: 'Error' }, { kind: 'conflict', attachments: ['nat-attach'], nics: ['web.eth0'] }) },
      'Pending',
      'Conflict',
      'node-b',
      ['NetworkInterface(s) web.eth0', 'no NAT'],
    ],
    [
      'EIPA-2: Pending MultipleAttachments naming the other one',
      { eip: eip({ phase: 'Error' }, { kind: 'multipleAttachments', attachments: ['nat-attach', 'other'] }) },
      'Pending',
      'MultipleAttachments',
      'node-b',
      ['ElasticIPAttachment(s) other', 'EIPA-2'],
    ],
    [
      'the ElasticIP is being deleted',
      { eip: eip(attachedTo('ElasticIPAttachment', 'nat-attach'), nat, true) },
      'Pending',
      'ElasticIPDeleting',
      'node-b',
      ['being deleted'],
    ],
    [
      "SEC-1: its NIC's Pod has stopped: Pending with that reason, even while the ElasticIP still records it",
      { withheld: { reason: 'PodNotRunning', message: 'Pod nginx of NetworkInterface nginx.eth0 has Succeeded' } },
      'Pending',
      'PodNotRunning',
      'node-b',
      ['Pod nginx', 'no NAT is set up'],
    ],
    [
      'not recorded yet',
      { eip: eip({ phase: 'Available' }, nat) },
      'Pending',
      'WaitingForElasticIP',
      'node-b',
      ['has not recorded this attachment'],
    ],
  ];

  it.each(rows)('%s', (_title, over, phase, reason, nodeName, says) => {
    const s = planAttachmentStatus(observe(over), now);
    expect(s.phase).toBe(phase);
    expect(s.reason).toBe(reason);
    expect(s.nodeName).toBe(nodeName);
    expect(s.conditions?.[0]).toMatchObject({
      type: 'Attached',
      status: phase === 'Attached' ? 'True' : 'False',
      reason,
      observedGeneration: 1,
    });
    for (const text of says) expect(s.message).toContain(text);
  });
});
