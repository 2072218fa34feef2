// The agent's pure core: this node's ARPAdvertisements -> external_arp_table (ARP-10), EN-12
// refusals, guard rules from arp pools (OPS-1), and the desired-vs-actual plan.
import { desiredState, planTable, REFUSAL_REASONS, type DesiredInput } from '../../../runtime/agent/arp/desired';
import { ConflictTracker, CounterDeltas } from '../../../runtime/agent/arp/conflicts';

const iface = { name: 'eth0', addresses: [{ address: '192.0.2.1', prefixLength: 24 }] };
const ad = (name: string, address: string, nodeName = 'node-a') => ({
  name,
  address,
  nodeName,
  externalNetwork: 'ext',
});
const base: DesiredInput = { nodeName: 'node-a', advertisements: [], pools: [], networks: [], iface };

describe('desired state', () => {
  test("ARP-10: this node's in-subnet advertisements become the table, sorted numerically", () => {
    const desired = desiredState({
      ...base,
      advertisements: [ad('b', '192.0.2.100'), ad('a', '192.0.2.9'), ad('c', '192.0.2.20')],
    });
    expect(desired.addresses).toEqual(['192.0.2.9', '192.0.2.20', '192.0.2.100']);
    expect(desired.owners.get('192.0.2.9')).toEqual(['a']);
    expect(desired.refused).toEqual([]);
  });

  test('an advertisement of another node is not ours (the field selector should have kept it out)', () => {
    expect(desiredState({ ...base, advertisements: [ad('x', '192.0.2.5', 'node-b')] }).addresses).toEqual([]);
  });

  test('EN-12: an address outside the interface subnet is refused with a message naming interface and subnets', () => {
    const desired = desiredState({ ...base, advertisements: [ad('far', '198.51.100.7'), ad('near', '192.0.2.7')] });
    expect(desired.addresses).toEqual(['192.0.2.7']);
    expect(desired.refused).toEqual([
      {
        advertisement: 'far',
        address: '198.51.100.7',
        reason: REFUSAL_REASONS.outsideSubnet,
        message:
          '198.51.100.7 is outside the L2 subnet of eth0 (192.0.2.0/24), so ARP for it cannot reach this node; not answered (EN-12)',
      },
    ]);
  });

  test('EN-12: every subnet of the interface counts; an interface without IPv4 refuses everything', () => {
    const two = { name: 'bond0', addresses: [...iface.addresses, { address: '198.51.100.1', prefixLength: 28 }] };
    expect(desiredState({ ...base, iface: two, advertisements: [ad('far', '198.51.100.7')] }).addresses).toEqual([
      '198.51.100.7',
    ]);
    const none = desiredState({
      ...base,
      iface: { name: 'eth0', addresses: [] },
      advertisements: [ad('a', '192.0.2.7')],
    });
    expect(none.refused[0].message).toContain('(no IPv4 subnet)');
  });

  test('a malformed spec.address is refused, not written', () => {
    const desired = desiredState({ ...base, advertisements: [ad('bad', '192.0.2.300')] });
    expect(desired.addresses).toEqual([]);
    expect(desired.refused[0]).toMatchObject({ advertisement: 'bad', reason: REFUSAL_REASONS.invalidAddress });
  });

  test('two advertisements for one address (ARP-4 violated past the webhook): one entry, both owners', () => {
    const desired = desiredState({ ...base, advertisements: [ad('a', '192.0.2.7'), ad('b', '192.0.2.7')] });
    expect(desired.addresses).toEqual(['192.0.2.7']);
    expect(desired.owners.get('192.0.2.7')).toEqual(['a', 'b']);
  });

  test("OPS-1 BGP-10 guard: arp and bgp pools (by advertiseMode or by their network) are dropped, others not; the interface's addresses are allowed", () => {
    const desired = desiredState({
      ...base,
      pools: [
        { name: 'arp-pool', advertiseMode: 'arp', addresses: ['192.0.2.0/25', '192.0.2.200-192.0.2.203'] },
        { name: 'bgp-pool', advertiseMode: 'bgp', addresses: ['203.0.113.0/24'] },
        { name: 'listed', advertiseMode: '', addresses: ['198.51.100.0/30'] },
        { name: 'bgp-listed', advertiseMode: '', addresses: ['198.51.100.64/30'] },
        { name: 'unlisted', advertiseMode: '', addresses: ['198.51.100.128/30'] },
      ],
      networks: [
        { name: 'ext', type: 'arp', addressPools: ['listed'] },
        { name: 'up', type: 'bgp', addressPools: ['bgp-pool', 'bgp-listed'] },
      ],
    });
    expect(desired.guard).toEqual({
      drop: [
        { address: '192.0.2.0', prefixLength: 25 },
        { address: '192.0.2.200', prefixLength: 30 },
        { address: '198.51.100.0', prefixLength: 30 },
        { address: '198.51.100.64', prefixLength: 30 },
        { address: '203.0.113.0', prefixLength: 24 },
      ],
      allow: ['192.0.2.1'],
    });
    expect(desired.guardProblems).toEqual([]);
  });

  test('a malformed pool item is named and skipped; the rest is still guarded', () => {
    const desired = desiredState({
      ...base,
      pools: [{ name: 'p', advertiseMode: 'arp', addresses: ['192.0.2.1/24', '192.0.2.128/25'] }],
    });
    expect(desired.guard.drop).toEqual([{ address: '192.0.2.128', prefixLength: 25 }]);
    expect(desired.guardProblems).toEqual([
      "AddressPool p: address pool item '192.0.2.1/24' has host bits set (network is 192.0.2.0/24)",
    ]);
  });
});

describe('desired vs actual', () => {
  test('adds what is missing, removes what is stale, keeps the rest untouched', () => {
    expect(planTable(['192.0.2.3', '192.0.2.1', '192.0.2.2'], ['192.0.2.2', '192.0.2.9', '192.0.2.1'])).toEqual({
      add: ['192.0.2.3'],
      remove: ['192.0.2.9'],
      keep: ['192.0.2.1', '192.0.2.2'],
    });
  });

  test('adopting a map that is already right changes nothing (agent restart)', () => {
    expect(planTable(['192.0.2.1'], new Set(['192.0.2.1']))).toEqual({ add: [], remove: [], keep: ['192.0.2.1'] });
  });

  test('an empty desired state empties the table', () => {
    expect(planTable([], ['192.0.2.1'])).toEqual({ add: [], remove: ['192.0.2.1'], keep: [] });
  });
});

describe('RFC 5227 conflicts from counters', () => {
  const entry = (conflicts: bigint, lastConflictMac?: string) => ({ conflicts, lastConflictMac });

  test('the first read is a baseline: conflicts an adopted map already holds were reported by the previous agent', () => {
    const tracker = new ConflictTracker();
    expect(tracker.observe(new Map([['192.0.2.7', entry(4n, '02:00:00:00:00:09')]]))).toEqual([]);
    expect(tracker.observe(new Map([['192.0.2.7', entry(6n, '02:00:00:00:00:09')]]))).toEqual([
      { address: '192.0.2.7', count: 2n, foreignMac: '02:00:00:00:00:09', total: 6n },
    ]);
    expect(tracker.observe(new Map([['192.0.2.7', entry(6n, '02:00:00:00:00:09')]]))).toEqual([]);
  });

  test('an address added later starts at zero, so all its conflicts are new; a re-added one too', () => {
    const tracker = new ConflictTracker();
    tracker.observe(new Map());
    expect(tracker.observe(new Map([['192.0.2.8', entry(1n, '02:00:00:00:00:0a')]]))).toHaveLength(1);
    tracker.observe(new Map([['192.0.2.8', entry(5n)]]));
    expect(tracker.observe(new Map([['192.0.2.8', entry(2n)]]))[0]).toMatchObject({ count: 2n });
  });

  test('counter deltas for Prometheus: increments, restarts from zero, forgets removed keys', () => {
    const deltas = new CounterDeltas();
    expect(deltas.delta('a', 5n)).toBe(5);
    expect(deltas.delta('a', 7n)).toBe(2);
    expect(deltas.delta('a', 3n)).toBe(3);
    expect(deltas.retain((k) => k !== 'a')).toEqual(['a']);
    expect(deltas.delta('a', 4n)).toBe(4);
  });
});
