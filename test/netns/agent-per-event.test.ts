// The agent's per-event path (bench/scale) on the real pinned maps with the XDP program attached: an
// ARPAdvertisement created is answered, one deleted is not, each by a write of its own entry
// only (the other entries keep their counters); the deleted address's filter bit is cleared at
// the next poll, which rebuilds the filter from the table it reads anyway. The API side is the
// unit tests' fake list/watch client (the cluster tests run the agent against a real API server).
import type { ArpSync } from '../../runtime/agent/arp/sync';
import { arpFilterBit, arpFilterHas } from '../../runtime/agent/bpf/layout';
import { FakeApi, agentOn, arpAd, tick } from '../unit/agent-fakes';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

jest.setTimeout(30_000);

describeAsRoot('ArpSync per-event path on the real maps', () => {
  const rig = useRig(1);
  let agent: ArpSync | undefined;
  afterEach(() => agent?.stop());

  test('ARP-10: a created ARPAdvertisement is answered and a deleted one is not, each by one entry; the poll clears the stale filter bit', async () => {
    await rig.attach(0, { mode: 'generic' });
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
});
