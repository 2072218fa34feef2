// The agent's per-address counters (agent_arp_requests_total, _replies_total, _conflicts_total)
// follow the map's counters poll by poll: every address is exported from its first poll, at its
// value (0 included); a counter moves by what the kernel counted since; a value that went down
// (the entry deleted and added again) counts from 0; an address that left loses its series.
import { ArpMetrics } from '../../../runtime/agent/arp/metrics';
import type { ArpEntry } from '../../../runtime/agent/bpf';
import { RuntimeMetrics } from '../../../runtime/kube/metrics';

const entry = (requests: bigint, replies: bigint, conflicts = 0n): ArpEntry => ({
  requests,
  replies,
  conflicts,
  lastConflictNs: 0n,
  lastConflictMac: undefined,
});

describe('ArpMetrics.observeEntries', () => {
  test('ARP-10 RFC 5227: per-address counters follow the map, new addresses exported at their value, gone ones dropped', async () => {
    const runtime = new RuntimeMetrics({ processMetrics: false });
    const metrics = new ArpMetrics(runtime);
    const series = async () =>
      (await runtime.exposition())
        .split('\n')
        .filter((l) => /^juneau_agent_arp_(requests|replies|conflicts)_total\{/.test(l))
        .sort();
    /** One poll of the map: address -> its entry. */
    const observe = (entries: Record<string, ArpEntry>) => metrics.observeEntries(new Map(Object.entries(entries)));
    observe({ '192.0.2.1': entry(0n, 0n), '192.0.2.2': entry(5n, 4n, 1n) });
    expect(await series()).toEqual([
      'juneau_agent_arp_conflicts_total{address="192.0.2.1"} 0',
      'juneau_agent_arp_conflicts_total{address="192.0.2.2"} 1',
      'juneau_agent_arp_replies_total{address="192.0.2.1"} 0',
      'juneau_agent_arp_replies_total{address="192.0.2.2"} 4',
      'juneau_agent_arp_requests_total{address="192.0.2.1"} 0',
      'juneau_agent_arp_requests_total{address="192.0.2.2"} 5',
    ]);
    // .2 moved (requests +2), then came back lower (deleted and re-added: 3 more from 0); .1 left.
    observe({ '192.0.2.1': entry(0n, 0n), '192.0.2.2': entry(7n, 4n, 1n) });
    observe({ '192.0.2.2': entry(3n, 4n, 1n) });
    expect(await series()).toEqual([
      'juneau_agent_arp_conflicts_total{address="192.0.2.2"} 1',
      'juneau_agent_arp_replies_total{address="192.0.2.2"} 4',
      'juneau_agent_arp_requests_total{address="192.0.2.2"} 10',
    ]);
    // .1 back: a new series from its value.
    observe({ '192.0.2.1': entry(2n, 2n), '192.0.2.2': entry(3n, 4n, 1n) });
    expect(await series()).toContain('juneau_agent_arp_requests_total{address="192.0.2.1"} 2');
    expect(await series()).toContain('juneau_agent_arp_requests_total{address="192.0.2.2"} 10');
  });
});
