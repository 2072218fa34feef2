// The agent's per-event path (bench/scale): a change of one ARPAdvertisement writes
// only its own address and reads no table; the poll, which reads the table anyway, clears the
// filter bits of removed addresses and repairs a table that drifted from what the agent wrote.
// Against the fakes of agent-loop.test.ts; test/netns/agent-per-event.test.ts has the real maps.
import type { ArpSync } from '../../../runtime/agent/arp/sync';
import { AnsweredAddresses } from '../../../runtime/agent/arp/answered';
import { desiredState, type AdvertisementView } from '../../../runtime/agent/arp/desired';
import { OWNER_LABELS } from '../../../api/constants';
import { FakeApi, FakeDatapath, arpAd, fakeAgent, type RecordedWarning, tick } from '../agent-fakes';

describe('ArpSync per-event path', () => {
  let api: FakeApi;
  let datapath: FakeDatapath;
  let agent: ArpSync;
  let warnings: RecordedWarning[];

  beforeEach(async () => {
    api = new FakeApi();
    datapath = new FakeDatapath();
    warnings = [];
    agent = fakeAgent(api, datapath, warnings);
    api.objects.set(
      'arpadvertisements',
      Array.from({ length: 50 }, (_, i) => arpAd(`ad-${i}`, `192.0.2.${10 + i}`)),
    );
    api.open();
    await agent.start();
    expect(datapath.table.size).toBe(50);
    datapath.ops.length = 0;
    datapath.tableReads = 0;
  });
  afterEach(() => agent.stop());

  test('ARP-10: a created advertisement inserts exactly its address, a deleted one removes exactly its own, without reading the table', async () => {
    api.emit('arpadvertisements', 'ADDED', arpAd('new', '192.0.2.200'));
    await tick();
    expect(datapath.ops).toEqual(['add 192.0.2.200']);
    api.emit('arpadvertisements', 'DELETED', arpAd('ad-7', '192.0.2.17'));
    await tick();
    expect(datapath.ops).toEqual(['add 192.0.2.200', 'remove 192.0.2.17']);
    expect(datapath.tableReads).toBe(0);
    expect(datapath.table.size).toBe(50);
    expect(datapath.table.has('192.0.2.17')).toBe(false);
  });

  test("SEC-11: an ElasticIP's advertisement reaches the datapath held, through the informer's trimming transform; a VIP's stays moveable", async () => {
    const owned = (name: string, address: string, kind: string) => {
      const ad = arpAd(name, address);
      return { ...ad, metadata: { ...ad.metadata, labels: { [OWNER_LABELS.kind]: kind, bulky: 'x'.repeat(64) } } };
    };
    api.emit('arpadvertisements', 'ADDED', owned('eip', '192.0.2.201', 'ElasticIP'));
    api.emit('arpadvertisements', 'ADDED', owned('vip', '192.0.2.202', 'ServiceLoadBalancer'));
    await tick();
    expect(datapath.held.has('192.0.2.201')).toBe(true);
    expect(datapath.held.has('192.0.2.202')).toBe(false);
    expect(datapath.table.has('192.0.2.202')).toBe(true);
  });

  test('ARP-10: an address moved by an update is removed before the new one is added; a burst of events is one net write per address', async () => {
    api.emit('arpadvertisements', 'MODIFIED', arpAd('ad-3', '192.0.2.201'));
    await tick();
    expect(datapath.ops).toEqual(['remove 192.0.2.13', 'add 192.0.2.201']);
    datapath.ops.length = 0;
    // ad-4 gives up .14 and ad-5 takes it over in the same burst: .14 stays, untouched (counters kept).
    api.emit('arpadvertisements', 'MODIFIED', arpAd('ad-4', '192.0.2.202'));
    api.emit('arpadvertisements', 'MODIFIED', arpAd('ad-5', '192.0.2.14'));
    await tick();
    expect(datapath.ops).toEqual(['remove 192.0.2.15', 'add 192.0.2.202']);
    expect(datapath.table.has('192.0.2.14')).toBe(true);
  });

  test('ARP-4 ARP-10: an address asked by two advertisements stays until the last of them leaves; one moved to another node leaves', async () => {
    api.emit('arpadvertisements', 'ADDED', arpAd('twin', '192.0.2.20'));
    await tick();
    api.emit('arpadvertisements', 'DELETED', arpAd('ad-10', '192.0.2.20'));
    await tick();
    expect(datapath.ops).toEqual([]);
    api.emit('arpadvertisements', 'MODIFIED', arpAd('twin', '192.0.2.20', 'node-b'));
    await tick();
    expect(datapath.ops).toEqual(['remove 192.0.2.20']);
  });

  test('EN-12: an update that takes an address out of the subnet removes it and is refused once; back in the subnet, it is answered again', async () => {
    api.emit('arpadvertisements', 'MODIFIED', arpAd('ad-0', '198.51.100.7'));
    await tick();
    api.emit('arpadvertisements', 'MODIFIED', arpAd('ad-0', '198.51.100.7'));
    await tick();
    expect(datapath.ops).toEqual(['remove 192.0.2.10']);
    expect(warnings.map((w) => w.reason)).toEqual(['AddressOutsideInterfaceSubnet']);
    api.emit('arpadvertisements', 'MODIFIED', arpAd('ad-0', '192.0.2.10'));
    await tick();
    expect(datapath.ops).toEqual(['remove 192.0.2.10', 'add 192.0.2.10']);
  });

  test('the poll rebuilds the filter from the table it read after a per-event removal, and only then', () => {
    agent.poll();
    expect(datapath.ops).toEqual([]);
    api.emit('arpadvertisements', 'DELETED', arpAd('ad-0', '192.0.2.10'));
    return tick().then(() => {
      agent.poll();
      expect(datapath.ops).toEqual(['remove 192.0.2.10', `filter ${[...datapath.table.keys()].join(',')}`]);
      expect(datapath.tableReads).toBe(2);
      agent.poll();
      expect(datapath.ops).toHaveLength(2);
    });
  });

  test('ARP-10: a table changed behind the agent is repaired at the next poll: a missing entry back, a foreign one gone', () => {
    datapath.table.delete('192.0.2.30');
    datapath.addAddress('192.0.2.250');
    datapath.ops.length = 0;
    agent.poll();
    expect(datapath.ops).toEqual(['remove 192.0.2.250', 'add 192.0.2.30', expect.stringMatching(/^filter /)]);
    expect(datapath.table.size).toBe(50);
  });
});

describe('AnsweredAddresses', () => {
  const iface24 = { name: 'eth0', addresses: [{ address: '192.0.2.1', prefixLength: 24 }] };
  const view = (name: string, address: string) => ({ name, address, nodeName: 'n', externalNetwork: 'ext' });

  test('after a reset from a full pass, applying changes one at a time gives what a full pass over the result gives', () => {
    const ads = [view('a', '192.0.2.5'), view('b', '192.0.2.6'), view('c', '192.0.2.6'), view('far', '10.0.0.1')];
    const full = (views: typeof ads) =>
      desiredState({ nodeName: 'n', advertisements: views, pools: [], networks: [], iface: iface24 });
    const answered = new AnsweredAddresses();
    answered.reset(full(ads), new Map(ads.map((v) => [v.name, { network: v.externalNetwork }])));
    expect(answered.refusedCount).toBe(1);
    const part = (address: string) => ({ address, network: 'ext' });
    // b leaves (.6 stays for c), c moves to .7 (.6 goes), a new d takes .5 too, far comes into the subnet.
    const changes = answered.apply([
      ['b', undefined],
      ['c', part('192.0.2.7')],
      ['d', part('192.0.2.5')],
      ['far', part('192.0.2.8')],
    ]);
    expect(changes).toEqual({ gained: ['192.0.2.7', '192.0.2.8'], lost: ['192.0.2.6'], classes: new Map() });
    const after = full([
      view('a', '192.0.2.5'),
      view('c', '192.0.2.7'),
      view('d', '192.0.2.5'),
      view('far', '192.0.2.8'),
    ]);
    expect(after.addresses.filter((a) => answered.has(a))).toEqual(after.addresses);
    expect(answered.size).toBe(after.addresses.length);
    expect(answered.refusedCount).toBe(0);
  });

  test('SEC-11: an address is held while every advertisement of it is; only class changes are returned, and a lost held address turns moveable', () => {
    const held = (name: string, address: string) => ({ ...view(name, address), expiryClass: 'held' as const });
    const ads: AdvertisementView[] = [held('eip', '192.0.2.5'), view('slb', '192.0.2.6')];
    const full = desiredState({ nodeName: 'n', advertisements: ads, pools: [], networks: [], iface: iface24 });
    expect([...full.held]).toEqual(['192.0.2.5']);
    const answered = new AnsweredAddresses();
    answered.reset(full, new Map(ads.map((v) => [v.name, { network: 'ext', expiryClass: v.expiryClass }])));
    const part = (address: string, expiryClass: 'held' | 'moveable') => ({ address, network: 'ext', expiryClass });
    // A moveable twin of .5 makes it moveable; a new held .9 is held; .6 gains nothing.
    expect(
      answered.apply([
        ['twin', part('192.0.2.5', 'moveable')],
        ['eip2', part('192.0.2.9', 'held')],
        ['slb', part('192.0.2.6', 'moveable')],
      ]).classes,
    ).toEqual(
      new Map([
        ['192.0.2.5', 'moveable'],
        ['192.0.2.9', 'held'],
      ]),
    );
    expect(answered.apply([['twin', undefined]]).classes).toEqual(new Map([['192.0.2.5', 'held']]));
    expect(answered.apply([['eip2', undefined]])).toEqual({
      gained: [],
      lost: ['192.0.2.9'],
      classes: new Map([['192.0.2.9', 'moveable']]),
    });
  });
});
