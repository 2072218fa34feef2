// ArpSync against a fake list/watch client and a fake datapath: nothing is written before the
// caches are synced (a restarting agent must not empty the map, ARP-10), events become diffs,
// refusals (EN-12) and conflicts (RFC 5227) become Warning Events, once.
import type { ArpSync } from '../../../runtime/agent/arp/sync';
import { FakeApi, FakeDatapath, arpAd, arpPool, fakeAgent, iface, type RecordedWarning, tick } from '../agent-fakes';

describe('ArpSync', () => {
  let api: FakeApi;
  let datapath: FakeDatapath;
  let warnings: RecordedWarning[];
  let agent: ArpSync;

  beforeEach(() => {
    api = new FakeApi();
    datapath = new FakeDatapath();
    warnings = [];
    agent = fakeAgent(api, datapath, warnings);
  });
  afterEach(() => agent.stop());

  test('ARP-10: before every informer has synced nothing is written, so an adopted map keeps answering; then stale entries go and missing ones come', async () => {
    datapath.addAddress('192.0.2.50'); // left by the previous agent, still wanted
    datapath.addAddress('192.0.2.99'); // left by the previous agent, deleted meanwhile
    datapath.writes = 0;
    api.objects.set('arpadvertisements', [arpAd('kept', '192.0.2.50'), arpAd('new', '192.0.2.51')]);
    const started = agent.start();
    await tick();
    expect(datapath.writes).toBe(0);
    expect(agent.reconciledOnce).toBe(false);
    api.open();
    await started;
    expect([...datapath.table.keys()].sort()).toEqual(['192.0.2.50', '192.0.2.51']);
    expect(agent.reconciledOnce).toBe(true);
    expect(api.selectors).toEqual(['arpadvertisements:spec.nodeName=node-a']);
  });

  test('watch events become diffs: an advertisement moved away leaves the table, one moved here enters it', async () => {
    api.objects.set('arpadvertisements', [arpAd('a', '192.0.2.50')]);
    api.open();
    await agent.start();
    api.emit('arpadvertisements', 'ADDED', arpAd('b', '192.0.2.51'));
    api.emit('arpadvertisements', 'DELETED', arpAd('a', '192.0.2.50'));
    await tick();
    expect([...datapath.table.keys()]).toEqual(['192.0.2.51']);
  });

  test('the guard follows arp AddressPools, allowing the interface address', async () => {
    api.open();
    await agent.start();
    api.emit('addresspools', 'ADDED', arpPool());
    await tick();
    expect(datapath.guard).toEqual({ drop: [{ address: '192.0.2.0', prefixLength: 25 }], allow: ['192.0.2.1'] });
  });

  test('EN-12: an out-of-subnet advertisement gets one Warning Event (not one per pass) and no entry', async () => {
    api.objects.set('arpadvertisements', [arpAd('far', '198.51.100.7')]);
    api.open();
    await agent.start();
    api.emit('addresspools', 'ADDED', arpPool());
    await tick();
    expect(datapath.table.size).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      regarding: { kind: 'ARPAdvertisement', name: 'far', uid: 'uid-far' },
      reason: 'AddressOutsideInterfaceSubnet',
    });
    expect(warnings[0].note).toContain('node node-a: 198.51.100.7 is outside the L2 subnet of eth0 (192.0.2.0/24)');
  });

  test('RFC 5227: a conflict counted by the datapath becomes a Warning Event on the owning advertisement naming the foreign MAC', async () => {
    api.objects.set('arpadvertisements', [arpAd('vip', '192.0.2.60')]);
    api.open();
    await agent.start();
    const entry = datapath.table.get('192.0.2.60')!;
    datapath.table.set('192.0.2.60', { ...entry, conflicts: 3n, lastConflictMac: '02:00:00:00:00:99' });
    agent.poll();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ regarding: { name: 'vip' }, reason: 'AddressConflict' });
    expect(warnings[0].note).toContain('another host with MAC 02:00:00:00:00:99 claimed it in 3 ARP packet(s)');
    agent.poll();
    expect(warnings).toHaveLength(1);
  });
});

describe('ArpSync and its interface', () => {
  test('EN-12: an address added to the interface is picked up at the next poll; a link that goes down keeps the table', async () => {
    const api = new FakeApi();
    const datapath = new FakeDatapath();
    let current: typeof iface | undefined = iface;
    const agent = fakeAgent(api, datapath, [], () => current);
    api.objects.set('arpadvertisements', [arpAd('near', '192.0.2.7'), arpAd('far', '198.51.100.7')]);
    api.open();
    await agent.start();
    expect([...datapath.table.keys()]).toEqual(['192.0.2.7']);
    current = undefined; // link down: libuv lists no address
    agent.poll();
    expect([...datapath.table.keys()]).toEqual(['192.0.2.7']);
    current = { ...iface, addresses: [...iface.addresses, { address: '198.51.100.1', prefixLength: 24 }] };
    agent.poll();
    expect([...datapath.table.keys()].sort()).toEqual(['192.0.2.7', '198.51.100.7']);
    expect(datapath.guard.allow).toEqual(['192.0.2.1', '198.51.100.1']);
    await agent.stop();
  });
});
