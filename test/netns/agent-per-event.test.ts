// The agent's per-event path (bench/scale) on the real pinned maps with the XDP program attached: an
// ARPAdvertisement created is answered, one deleted is not, each by a write of its own entry
// only (the other entries keep their counters); the deleted address's filter bit is cleared at
// the next poll, which rebuilds the filter from the table it reads anyway. The API side is the
// unit tests' fake list/watch client (the cluster tests run the agent against a real API server).
import type { ArpSync } from '../../runtime/agent/arp/sync';
import { arpFilterBit, arpFilterHas } from '../../runtime/agent/bpf/layout';
import { FakeApi, agentOn, arpAd, tick } from '../unit/agent-fakes';
import { sleep } from '../sleep';
import { ARP_REPLY } from './pcap';
import { CLIENT_IP, SUBNET, arpFramesAbout, describeAsRoot, repliesFor, useRig } from './rig';

jest.setTimeout(30_000);

describeAsRoot('ArpSync per-event path on the real maps', () => {
  const rig = useRig(1);
  let agent: ArpSync | undefined;
  let nodeMac = '';
  beforeAll(async () => {
    nodeMac = (await rig.attach(0, { mode: 'generic' })).mac;
  }, 60_000);
  afterEach(() => agent?.stop());

  test('ARP-10: a created ARPAdvertisement is answered and a deleted one is not, each by one entry; the poll clears the stale filter bit', async () => {
    const maps = rig.maps(0);
    const api = new FakeApi();
    const iface = { name: 'eth0', mac: '02:00:00:00:00:01', addresses: [{ address: rig.nodeIp(0), prefixLength: 24 }] };
    agent = agentOn(api, maps, iface);
    const kept = `${SUBNET}.60`;
    api.objects.set('arpadvertisements', [arpAd('kept', kept)]);
    api.open();
    await agent.start();
    expect([...maps.addresses().keys()]).toEqual([kept]);
    // Counters on the kept entry show whether it was rewritten.
    let frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: kept, count: 3 }));
    expect(repliesFor(frames, kept)).toHaveLength(3);

    const vip = `${SUBNET}.61`;
    expect(arpFilterBit(vip)).not.toBe(arpFilterBit(kept));
    api.emit('arpadvertisements', 'ADDED', arpAd('vip', vip));
    await tick();
    frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: vip, count: 2 }));
    expect(repliesFor(frames, vip)).toHaveLength(2);
    expect(maps.lookupAddress(kept)).toMatchObject({ requests: 3n, replies: 3n });

    api.emit('arpadvertisements', 'DELETED', arpAd('vip', vip));
    await tick();
    expect([...maps.addresses().keys()]).toEqual([kept]);
    frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: vip, count: 2 }));
    expect(repliesFor(frames, vip)).toHaveLength(0);
    expect(arpFilterHas(maps.filter(), vip)).toBe(true);
    agent.poll();
    expect(arpFilterHas(maps.filter(), vip)).toBe(false);
    expect(arpFilterHas(maps.filter(), kept)).toBe(true);
    expect(maps.lookupAddress(kept)).toMatchObject({ requests: 3n, replies: 3n });
  });

  test('ARP-8: the agent gaining and losing an address sends nothing unsolicited; a request in the same capture is answered', async () => {
    const maps = rig.maps(0);
    const api = new FakeApi();
    const iface = { name: 'eth0', mac: nodeMac, addresses: [{ address: rig.nodeIp(0), prefixLength: 24 }] };
    agent = agentOn(api, maps, iface);
    api.objects.set('arpadvertisements', []);
    api.open();
    await agent.start();
    const gained = `${SUBNET}.62`;
    const lost = `${SUBNET}.63`;
    api.emit('arpadvertisements', 'ADDED', arpAd('lost', lost));
    await tick();
    const frames = await rig.capture(async () => {
      api.emit('arpadvertisements', 'ADDED', arpAd('gained', gained));
      api.emit('arpadvertisements', 'DELETED', arpAd('lost', lost));
      await tick();
      agent!.poll();
      await sleep(1_000);
      // Positive control: the capture sees what the node sends, and the new address is served.
      await rig.sendArp({ sip: CLIENT_IP, tip: gained, count: 1 });
    });
    const fromNode = arpFramesAbout(frames, nodeMac, [gained, lost]);
    console.log(`agent-per-event: ARP-8, ${fromNode.length} frame(s) from the node about ${gained}, ${lost}`);
    expect(repliesFor(frames, gained)).toHaveLength(1);
    // The one reply to the request, and nothing else: no announcement, no gratuitous ARP.
    expect(fromNode.map((f) => [f.arp!.op, f.arp!.sip, f.arp!.tip])).toEqual([[ARP_REPLY, gained, CLIENT_IP]]);
  });
});
