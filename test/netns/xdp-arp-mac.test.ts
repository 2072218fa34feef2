// SEC-14 (ARP-12 residue): the node's ingress interface changes its MAC while the agent runs. The
// agent's poll sees the change and rewrites the MAC in the responder's config, so replies carry the
// new MAC and a unicast request to the new MAC is judged like a broadcast one: answered when ours,
// dropped by the guard when it is a pool address the node does not answer (the kernel would
// answer it from a kube-ipvs0-like interface with arp_ignore=0, the incident behind OPS-1).
// Real XDP on a real veth, the agent's ARP loop (ArpSync) over the unit tests' fake API.
import type { ArpSync } from '../../runtime/agent/arp/sync';
import type { LocalInterface } from '../../runtime/agent/interface';
import type { KubeObject } from '../../runtime/kube/types';
import { FakeApi, agentOn, arpAd } from '../unit/agent-fakes';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

jest.setTimeout(60_000);

const VIP = `${SUBNET}.60`;
const HELD_BY_NOBODY = `${SUBNET}.61`; // on the kernel's kube-ipvs0, in no table
const NEW_MAC = '02:00:5e:00:53:14';

describeAsRoot('SEC-14 the responder follows a change of the interface MAC (real XDP)', () => {
  const rig = useRig(1);
  let agent: ArpSync | undefined;
  afterAll(() => agent?.stop());

  test('SEC-14 ARP-12: after the MAC changes, replies carry the new MAC and unicast requests to it are answered or guarded', async () => {
    const ns = rig.node(0);
    await rig.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kube-ipvs0p');
    await rig.in(ns, 'ip', 'addr', 'add', `${HELD_BY_NOBODY}/32`, 'dev', 'kube-ipvs0');
    for (const scope of ['all', 'eth0']) await rig.sysctl(ns, `net.ipv4.conf.${scope}.arp_ignore`, '0');
    const { ifindex, mac: oldMac } = await rig.attach(0, { mode: 'generic' });
    const maps = rig.maps(0);
    let iface: LocalInterface = {
      name: 'eth0',
      mac: oldMac,
      addresses: [{ address: rig.nodeIp(0), prefixLength: 24 }],
    };
    const api = new FakeApi();
    agent = agentOn(api, maps, iface, {
      readInterface: () => iface,
      rewriteMac: (mac) => {
        if (!maps.setInterfaceMac(ifindex, mac)) throw new Error(`no config for ifindex ${ifindex}`);
      },
    });
    api.objects.set('arpadvertisements', [arpAd('vip', VIP)]);
    api.objects.set('addresspools', [
      { metadata: { name: 'p' }, spec: { advertiseMode: 'arp', addresses: [`${SUBNET}.0/25`] } } as KubeObject,
    ]);
    api.open();
    await agent.start();
    const send = async (tip: string, ethDst?: string) =>
      repliesFor(await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip, ethDst, count: 3 })), tip);

    // Positive control before the change: replies from the old MAC, unicast to it guarded.
    expect((await send(VIP)).map((r) => r.src)).toEqual(Array(3).fill(oldMac));
    expect(await send(HELD_BY_NOBODY, oldMac)).toEqual([]);

    await rig.in(ns, 'ip', 'link', 'set', 'dev', 'eth0', 'address', NEW_MAC);
    expect(await rig.mac(ns, 'eth0')).toBe(NEW_MAC);
    iface = { ...iface, mac: await rig.mac(ns, 'eth0') };
    agent.poll();
    expect(maps.interfaceConfig(ifindex)?.mac).toBe(NEW_MAC);

    const replies = await send(VIP);
    expect(replies.map((r) => [r.src, r.arp!.sha])).toEqual(Array(3).fill([NEW_MAC, NEW_MAC]));
    const unicastOurs = await send(VIP, NEW_MAC);
    expect(unicastOurs.map((r) => r.arp!.sha)).toEqual(Array(3).fill(NEW_MAC));
    const before = maps.stats().JUNEAU_DROP_GUARDED;
    expect(await send(HELD_BY_NOBODY, NEW_MAC)).toEqual([]);
    expect(maps.stats().JUNEAU_DROP_GUARDED - before).toBe(3n);
  });
});
