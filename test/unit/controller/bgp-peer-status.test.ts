// BGP-7 and BGP-2, pure: a BGPPeer's status from the nodes' reports, and a bgp ExternalNetwork's
// Advertised condition.
import type { ExternalNetwork } from '../../../api';
import { announcedItems, announcedRanges, parseIPv4 } from '../../../api/validation';
import { planPeerStatus } from '../../../runtime/controller/bgp/peer-status';
import { planNetworkStatus } from '../../../runtime/controller/network/plan';

const now = new Date('2025-01-01T00:00:00Z');
const report = (peer: string, state: 'Established' | 'Active', lastError?: string) => ({
  peers: [{ peer, state, ...(lastError ? { lastError } : {}) }],
});

describe('BGP-7: BGPPeer status', () => {
  test('counts the nodes reporting this peer and the Established ones, naming the others', () => {
    const nodeStates = new Map([
      ['n1', report('tor', 'Established')],
      ['n2', report('tor', 'Active', 'Connection refused')],
      ['n3', report('other', 'Established')],
    ]);
    const plan = planPeerStatus({ name: 'tor', generation: 4, previous: undefined, nodeStates }, now);
    expect(plan.status).toMatchObject({ nodes: 2, established: 1, observedGeneration: 4 });
    expect(plan.status.conditions?.[0]).toMatchObject({
      type: 'SessionsEstablished',
      status: 'False',
      reason: 'SessionsDown',
      message: '1 of 2 node(s) Established; not Established: n2 Active (Connection refused) (BGP-7)',
      observedGeneration: 4,
    });
    expect(plan.events).toEqual([
      { type: 'Warning', reason: 'SessionsDown', message: plan.status.conditions![0].message },
    ]);
    // The same reason again: no second Event.
    expect(planPeerStatus({ name: 'tor', generation: 4, previous: plan.status, nodeStates }, now).events).toEqual([]);
  });

  test('names at most 10 nodes; none reporting is NoSessions; all up is AllEstablished', () => {
    const many = new Map(
      Array.from({ length: 12 }, (_, i) => [`n${String(i).padStart(2, '0')}`, report('tor', 'Active')]),
    );
    const message = planPeerStatus({ name: 'tor', generation: 1, previous: undefined, nodeStates: many }, now).status
      .conditions![0].message;
    expect(message).toContain('n09 Active and 2 more');
    expect(
      planPeerStatus({ name: 'tor', generation: 1, previous: undefined, nodeStates: new Map() }, now).status
        .conditions![0].reason,
    ).toBe('NoSessions');
    const up = planPeerStatus(
      { name: 'tor', generation: 1, previous: undefined, nodeStates: new Map([['n1', report('tor', 'Established')]]) },
      now,
    );
    expect(up.status.conditions![0]).toMatchObject({ status: 'True', reason: 'AllEstablished' });
    expect(up.events[0].type).toBe('Normal');
  });

  test('the announced addresses are written as merged ranges and read back', () => {
    const values = ['198.18.0.1', '198.18.0.2', '198.18.0.3', '198.18.0.7'].map((a) => parseIPv4(a)!);
    const items = announcedItems(values);
    expect(items).toEqual(['198.18.0.1-198.18.0.3', '198.18.0.7']);
    expect(announcedRanges([...items, '198.18.1.0/30', 'junk'])).toEqual([
      { first: values[0], last: values[2] },
      { first: values[3], last: values[3] },
      { first: parseIPv4('198.18.1.0'), last: parseIPv4('198.18.1.3') },
    ]);
  });
});

describe('BGP-2: a bgp ExternalNetwork says whether it is announced', () => {
  const network = (type: 'arp' | 'bgp'): ExternalNetwork => ({
    apiVersion: 'juneau.loutres.me/v1alpha1',
    kind: 'ExternalNetwork',
    metadata: { name: 'wan', generation: 2 },
    spec: { type, addressPools: ['p'] },
  });
  const advertised = (type: 'arp' | 'bgp', advertisements?: string[]) =>
    planNetworkStatus(
      { network: network(type), pools: new Map(), networkID: undefined, advertisements },
      now,
    ).conditions?.find((c) => c.type === 'Advertised');

  test('NoBGPAdvertisement without one, ListedByBGPAdvertisement naming them; no such condition on arp', () => {
    expect(advertised('bgp')).toMatchObject({ status: 'False', reason: 'NoBGPAdvertisement', observedGeneration: 2 });
    expect(advertised('bgp', ['b', 'a'])).toMatchObject({
      status: 'True',
      reason: 'ListedByBGPAdvertisement',
      message: 'announced over BGP as BGPAdvertisement a, b says (BGP-2)',
    });
    expect(advertised('arp', ['a'])).toBeUndefined();
  });
});
