// EIP-11 (holder choice), EIP-10 / EIPA-2 (conflicting users), EIP-16 (no hand-out while
// deleting): who uses an ElasticIP's address, decided from the references alone.
import {
  attachmentOf,
  byAgeThenName,
  chooseHolder,
  decideUsage,
  listNames,
  type NicView,
} from '../../../runtime/controller/eip/usage';

const t = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
const nic = (name: string, created: number | undefined, over: Partial<NicView> = {}): NicView => ({
  name,
  creationTimestamp: created === undefined ? undefined : t(created),
  deleting: false,
  nodeName: 'n1',
  ...over,
});
const asNic = (name: string) => ({ kind: 'NetworkInterface' as const, name });

describe('EIP-11: the holder among NICs that name the ElasticIP directly', () => {
  it('rule 1: the NIC in status.attachment keeps it, even when it is newer', () => {
    const choice = chooseHolder([nic('old.eth0', 1), nic('new.eth0', 5)], asNic('new.eth0'), false);
    expect(choice).toEqual({ rule: 'current', holder: nic('new.eth0', 5) });
  });

  it('rule 1: it keeps it while being deleted', () => {
    const holder = nic('web.eth0', 1, { deleting: true });
    expect(chooseHolder([holder, nic('web2.eth0', 2)], asNic('web.eth0'), false)).toEqual({ rule: 'current', holder });
  });

  it('rule 1: it keeps it while the ElasticIP is being deleted (EIP-15)', () => {
    expect(chooseHolder([nic('a.eth0', 1)], asNic('a.eth0'), true)).toMatchObject({ rule: 'current' });
  });

  it('rule 1 does not apply once the named NIC is gone', () => {
    expect(chooseHolder([nic('b.eth0', 2)], asNic('a.eth0'), false)).toMatchObject({
      rule: 'oldest',
      holder: { name: 'b.eth0' },
    });
  });

  it('rule 1 does not apply when status.attachment names an ElasticIPAttachment of that name', () => {
    expect(chooseHolder([nic('x', 2), nic('y', 1)], { kind: 'ElasticIPAttachment', name: 'x' }, false)).toMatchObject({
      rule: 'oldest',
      holder: { name: 'y' },
    });
  });

  it('rule 2: nobody while any referencing NIC is being deleted; names them all, sorted', () => {
    const nics = [
      nic('new.eth0', 9),
      nic('z-old.eth0', 1, { deleting: true }),
      nic('a-old.eth0', 2, { deleting: true }),
    ];
    expect(chooseHolder(nics, undefined, false)).toEqual({
      rule: 'waitForDeletion',
      waitingFor: ['a-old.eth0', 'z-old.eth0'],
    });
  });

  it('rule 2 applies even when the deleting NIC is the only one', () => {
    expect(chooseHolder([nic('a', 1, { deleting: true })], undefined, false)).toEqual({
      rule: 'waitForDeletion',
      waitingFor: ['a'],
    });
  });

  it('rule 3: the oldest by creationTimestamp', () => {
    expect(chooseHolder([nic('b', 3), nic('c', 1), nic('a', 2)], undefined, false)).toMatchObject({
      rule: 'oldest',
      holder: { name: 'c' },
    });
  });

  it('rule 3: equal creationTimestamps are broken by name', () => {
    expect(
      chooseHolder([nic('web-b.eth0', 1), nic('web-a.eth0', 1), nic('web-c.eth0', 1)], undefined, false),
    ).toMatchObject({ holder: { name: 'web-a.eth0' } });
  });

  it('rule 3: a NIC without creationTimestamp sorts after every dated one', () => {
    expect(chooseHolder([nic('a', undefined), nic('b', 100)], undefined, false)).toMatchObject({
      holder: { name: 'b' },
    });
    expect([nic('b', undefined), nic('a', undefined)].sort(byAgeThenName).map((n) => n.name)).toEqual(['a', 'b']);
  });

  it('rule 3 does not depend on input order', () => {
    const nics = [nic('c', 2), nic('a', 2), nic('b', 1)];
    const orders = [nics, [...nics].reverse(), [nics[1], nics[2], nics[0]]];
    for (const order of orders) expect(chooseHolder(order, undefined, false)).toMatchObject({ holder: { name: 'b' } });
  });

  it('EIP-16: a deleting ElasticIP hands its address to no NIC that did not hold it', () => {
    expect(chooseHolder([nic('a', 1)], undefined, true)).toEqual({ rule: 'elasticIPDeleting' });
    expect(chooseHolder([nic('a', 1)], asNic('gone'), true)).toEqual({ rule: 'elasticIPDeleting' });
  });

  it('no NIC: none', () => {
    expect(chooseHolder([], asNic('a'), false)).toEqual({ rule: 'none' });
  });
});

describe('usage: NAT, direct, conflicts', () => {
  const att = (name: string, nodeName?: string) => ({ name, networkInterface: `${name}-pod.eth0`, nodeName });

  it('one attachment and no NIC: NAT (EIP-4)', () => {
    expect(
      decideUsage({ attachments: [att('a', 'n1')], nics: [], current: undefined, elasticIPDeleting: false }),
    ).toEqual({ kind: 'nat', attachment: att('a', 'n1') });
  });

  it('EIP-10: attachments and NICs at once are a conflict naming both, even when the NIC held it', () => {
    expect(
      decideUsage({
        attachments: [att('nat')],
        nics: [nic('web.eth0', 1)],
        current: asNic('web.eth0'),
        elasticIPDeleting: false,
      }),
    ).toEqual({
      kind: 'conflict',
      attachments: ['nat'],
      nics: ['web.eth0'],
    });
  });

  it('EIPA-2: two attachments: none uses it', () => {
    expect(
      decideUsage({
        attachments: [att('b'), att('a')],
        nics: [],
        current: { kind: 'ElasticIPAttachment', name: 'a' },
        elasticIPDeleting: false,
      }),
    ).toEqual({
      kind: 'multipleAttachments',
      attachments: ['a', 'b'],
    });
  });

  it('direct: the holder and the others waiting', () => {
    expect(
      decideUsage({ attachments: [], nics: [nic('b', 2), nic('a', 1)], current: undefined, elasticIPDeleting: false }),
    ).toEqual({ kind: 'direct', holder: nic('a', 1), rule: 'oldest', others: ['b'] });
  });

  it('handover (rule 2) and withheld (EIP-16)', () => {
    expect(
      decideUsage({
        attachments: [],
        nics: [nic('a', 1, { deleting: true }), nic('b', 2)],
        current: undefined,
        elasticIPDeleting: false,
      }),
    ).toEqual({ kind: 'handover', waitingFor: ['a'], nics: ['a', 'b'] });
    expect(decideUsage({ attachments: [], nics: [nic('a', 1)], current: undefined, elasticIPDeleting: true })).toEqual({
      kind: 'withheld',
      nics: ['a'],
    });
  });

  it('EN-8: while the network has no networkID, no new holder (waitingForNetworkID naming it); the holder in status.attachment keeps it', () => {
    const base = { attachments: [], nics: [nic('b', 2), nic('a', 1)], elasticIPDeleting: false };
    expect(decideUsage({ ...base, current: undefined, awaitingNetworkID: 'late-net' })).toEqual({
      kind: 'waitingForNetworkID',
      network: 'late-net',
      nics: ['a', 'b'],
    });
    expect(decideUsage({ ...base, current: asNic('b'), awaitingNetworkID: 'late-net' })).toEqual({
      kind: 'direct',
      holder: nic('b', 2),
      rule: 'current',
      others: ['a'],
    });
    // Positive control: the same NICs once the network has its ID.
    expect(decideUsage({ ...base, current: undefined })).toMatchObject({ kind: 'direct', holder: nic('a', 1) });
    // NAT use does not wait for it (EN-8).
    expect(
      decideUsage({
        attachments: [att('x', 'n1')],
        nics: [],
        current: undefined,
        elasticIPDeleting: false,
        awaitingNetworkID: 'late-net',
      }),
    ).toEqual({ kind: 'nat', attachment: att('x', 'n1') });
  });

  it('EIP-7: status.attachment only for exactly one user', () => {
    expect(attachmentOf({ kind: 'nat', attachment: att('a') })).toEqual({ kind: 'ElasticIPAttachment', name: 'a' });
    expect(attachmentOf({ kind: 'direct', holder: nic('h', 1), rule: 'oldest', others: [] })).toEqual({
      kind: 'NetworkInterface',
      name: 'h',
    });
    for (const kind of [
      'unused',
      'withheld',
      'waitingForNetworkID',
      'handover',
      'conflict',
      'multipleAttachments',
    ] as const) {
      expect(attachmentOf({ kind, nics: [], waitingFor: [], attachments: [] } as never)).toBeUndefined();
    }
  });

  it('names in messages', () => {
    expect(listNames([])).toBe('');
    expect(listNames(['a'])).toBe('a');
    expect(listNames(['a', 'b'])).toBe('a and b');
    expect(listNames(['a', 'b', 'c'])).toBe('a, b and c');
  });
});
