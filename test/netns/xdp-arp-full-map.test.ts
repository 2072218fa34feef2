// A full map converges: the pinned maps are at max_entries and the desired set
// moves (some entries leave, as many others arrive). An insert into a full hash map fails with
// E2BIG and one into a full LPM trie with ENOSPC, so a writer that adds before it removes never
// converges. Real maps of the real responder, pinned by a real attach; the writer is the agent's.
import { writeDesired } from '../../runtime/agent/arp/writer';
import { LIMITS } from '../../runtime/agent/bpf/layout';
import { CLIENT_IP, Rig, SUBNET, describeAsRoot, repliesFor } from './rig';

// Real namespaces and 65,536 map writes a pass (about 30 us each through the binding here):
// generous on a loaded 2-CPU CI machine.
jest.setTimeout(120_000);

/** The `count` consecutive IPv4 addresses from `first`. */
function addressRange(first: string, count: number): string[] {
  const start = first.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
  return Array.from({ length: count }, (_, i) => {
    const n = start + i;
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  });
}

/** Text order: enough to compare two sets as arrays, and fast on 65,536 addresses. */
const sorted = (xs: Iterable<string>) => [...xs].sort();

describeAsRoot('full maps converge when entries move (writes remove before they add)', () => {
  const rig = new Rig(1);
  let mac = '';
  // The table's addresses, in the slots or in external_arp_table (bpf/juneau_maps.h): at
  // JUNEAU_ARP_TABLE_MAX addresses in all, external_arp_table holds what the slots did not.
  const tableKeys = () => rig.maps(0).addressKeys();

  beforeAll(async () => {
    await rig.setup();
    mac = (await rig.attach(0, { mode: 'generic' })).mac;
  }, 90_000);

  afterAll(async () => {
    await rig.destroy();
  }, 60_000);

  test('juneau_guard at max_entries: 100 drop prefixes leave, 100 others arrive and one entry changes action, with exact contents', () => {
    const max = LIMITS.JUNEAU_GUARD_MAX;
    const toPrefixes = (xs: string[]) => xs.map((address) => ({ address, prefixLength: 32 }));
    const allow = [rig.nodeIp(0)];
    const drops = addressRange('10.3.0.0', max - allow.length);
    const fullResult = writeDesired(rig.maps(0), { addresses: [], guard: { drop: toPrefixes(drops), allow } });
    expect(fullResult.guard.added).toHaveLength(max);
    expect(rig.maps(0).guardEntries()).toHaveLength(max);

    // 100 leave, 100 arrive, and 10.3.1.0 turns from drop into allow (an update in place).
    const nextDrops = [...drops.slice(100).filter((a) => a !== '10.3.1.0'), ...addressRange('10.4.0.0', 100)];
    const nextAllow = [...allow, '10.3.1.0'];
    const moved = writeDesired(rig.maps(0), {
      addresses: [],
      guard: { drop: toPrefixes(nextDrops), allow: nextAllow },
    });
    expect({ added: moved.guard.added.length, removed: moved.guard.removed.length }).toEqual({
      added: 101,
      removed: 100,
    });

    const entries = rig.maps(0).guardEntries();
    expect(entries).toHaveLength(max);
    const byAction = (action: string) =>
      sorted(entries.filter((e) => e.action === action && e.prefixLength === 32).map((e) => e.address));
    expect(byAction('drop')).toEqual(sorted(nextDrops));
    expect(byAction('allow')).toEqual(sorted(nextAllow));
  });

  test('ARP-10: external_arp_table at max_entries: 100 addresses leave, 100 others arrive, in one sync, with exact contents and the datapath answering the new set', async () => {
    const max = LIMITS.JUNEAU_ARP_TABLE_MAX;
    const leavingOnSegment = addressRange(`${SUBNET}.10`, 50);
    const arrivingOnSegment = addressRange(`${SUBNET}.150`, 50);
    const filler = addressRange('10.0.0.0', max - leavingOnSegment.length);
    const full = [...leavingOnSegment, ...filler];
    const noGuard = { drop: [], allow: [] };

    const first = writeDesired(rig.maps(0), { addresses: full, guard: noGuard });
    expect(first.entries).toBe(max);
    expect(tableKeys()).toHaveLength(max);

    const moved = [...filler.slice(50), ...arrivingOnSegment, ...addressRange('10.2.0.0', 50)];
    expect(moved).toHaveLength(max);
    const second = writeDesired(rig.maps(0), { addresses: moved, guard: noGuard });
    expect({ added: second.added.length, removed: second.removed.length, entries: second.entries }).toEqual({
      added: 100,
      removed: 100,
      entries: max,
    });
    expect(sorted(tableKeys())).toEqual(sorted(moved));

    // The program reads the moved set: an arriving address is answered, a leaving one is not.
    const frames = await rig.capture(async () => {
      await rig.sendArp({ sip: CLIENT_IP, tip: arrivingOnSegment[0], count: 2 });
      await rig.sendArp({ sip: CLIENT_IP, tip: leavingOnSegment[0], count: 2 });
    });
    expect(repliesFor(frames, arrivingOnSegment[0]).map((f) => f.src)).toEqual([mac, mac]);
    expect(repliesFor(frames, leavingOnSegment[0])).toEqual([]);

    // Back to the first set: converges the other way too.
    writeDesired(rig.maps(0), { addresses: full, guard: noGuard });
    expect(sorted(tableKeys())).toEqual(sorted(full));
  });
});
