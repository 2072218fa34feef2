// BGP-10 on a real node namespace: a kernel holding a bgp VIP on a kube-ipvs0-like interface with
// arp_ignore=0 would answer ARP for it; the XDP guard, fed the agent's own guard rules
// (desiredState), drops those requests. A control address on the same interface, in no pool, is
// answered by the same kernel: the positive control that the request reached it.
import { desiredState } from '../../runtime/agent/arp/desired';
import { CLIENT_IP, Rig, SUBNET, describeAsRoot, repliesFor } from './rig';

jest.setTimeout(30_000);

const BGP_POOL = `${SUBNET}.64/27`;
const BGP_VIP = `${SUBNET}.70`;
const CONTROL = `${SUBNET}.200`; // in no pool

describeAsRoot('BGP-10: the guard covers bgp pools', () => {
  const rig = new Rig(1);
  let mac = '';

  beforeAll(async () => {
    await rig.setup();
    const ns = rig.node(0);
    await rig.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kube-ipvs0p');
    for (const address of [BGP_VIP, CONTROL])
      await rig.in(ns, 'ip', 'addr', 'add', `${address}/32`, 'dev', 'kube-ipvs0');
    for (const scope of ['all', 'eth0']) await rig.sysctl(ns, `net.ipv4.conf.${scope}.arp_ignore`, '0');
    const attached = await rig.attach(0, { mode: 'generic' });
    mac = attached.mac;
    const desired = desiredState({
      nodeName: 'node-0',
      advertisements: [],
      pools: [{ name: 'routed', advertiseMode: 'bgp', addresses: [BGP_POOL] }],
      networks: [{ name: 'upstream', type: 'bgp', addressPools: ['routed'] }],
      iface: { name: 'eth0', addresses: [{ address: rig.nodeIp(0), prefixLength: 24 }] },
    });
    expect(desired.guardProblems).toEqual([]);
    rig.maps(0).syncGuard(desired.guard);
    rig.maps(0).setInterfaceConfig(attached.ifindex, { mac, guard: true, conflictDetection: false });
  }, 90_000);

  afterAll(() => rig.destroy(), 60_000);

  test('BGP-10: ARP requests for a bgp-pool address held by the kernel get no answer (dropped and counted); a control address on the same interface is answered', async () => {
    const before = rig.maps(0).stats().JUNEAU_DROP_GUARDED;
    const frames = await rig.capture(async () => {
      await rig.sendArp({ sip: CLIENT_IP, tip: BGP_VIP, count: 10 });
      await rig.sendArp({ sip: CLIENT_IP, tip: CONTROL, count: 10 });
    });
    const guarded = repliesFor(frames, BGP_VIP);
    const control = repliesFor(frames, CONTROL);
    console.log(`BGP-10: ${guarded.length} replies for the bgp VIP, ${control.length} for the control address`);
    expect(control).toHaveLength(10);
    expect(new Set(control.map((f) => f.arp!.sha))).toEqual(new Set([mac]));
    expect(guarded).toHaveLength(0);
    expect(rig.maps(0).stats().JUNEAU_DROP_GUARDED - before).toBe(10n);
  });
});
