// The pod-side NAT hook on the devices the agent finds by itself (runtime/agent/nat/pod-devices.ts):
// where each pod address is routed in the node namespace (the agent's own netlink code), tc_nat_pod
// attached there, and detached when no pod is routed there any more. Real namespaces, real TC
// programs, real packets: a CNI-like masquerade on the node loses to the translation (NAT-2) and the
// node's conntrack keeps no entry (NAT-4) only once the hook is on the detected devices; before,
// the same traffic is masqueraded and tracked (the positive control). Two node layouts: one veth
// per pod (Calico, Cilium) and the pods on one bridge (the `bridge` plugin's cni0, the box's).
import { describeAsRoot } from './rig';
import { EIP, NODE_EXT, POD, POD2, POD_BRIDGED, SERVER, useNatRig, type NatRig } from './nat-rig';
import { inNetnsSync } from './ns-tools';
import { natFilters, natPinnedDevices } from '../../runtime/agent/bpf/nat';
import { PodDevices, detachPodDevices, type PodDeviceReport } from '../../runtime/agent/nat/pod-devices';

/** A PodDevices of the node namespace: ext0 the ingress interface, the rig's pins. */
async function podDevices(rig: NatRig): Promise<PodDevices> {
  const external = { ifindex: await rig.nodeIfindex('ext0'), name: 'ext0' };
  return new PodDevices({ pinDir: rig.pinDir, external });
}

/** One pass of the agent over these pod addresses, in the node namespace. */
const follow = (rig: NatRig, devices: PodDevices, addresses: string[]): PodDeviceReport =>
  inNetnsSync(rig.node, () => devices.follow(addresses));

/** The tc_nat_pod program id on `dev` of the node (0: none). */
const podFilter = async (rig: NatRig, dev: string) => {
  const ifindex = await rig.nodeIfindex(dev);
  return inNetnsSync(rig.node, () => natFilters(ifindex).pod);
};

/** What flannel's --ip-masq and many CNIs install: pod traffic leaving through ext0 masqueraded. */
async function withMasquerade<T>(rig: NatRig, body: () => Promise<T>): Promise<T> {
  await rig.in(rig.node, 'nft', 'add table ip cni');
  await rig.in(rig.node, 'nft', 'add chain ip cni post { type nat hook postrouting priority srcnat; }');
  await rig.in(rig.node, 'nft', 'add rule ip cni post ip saddr 10.0.0.0/8 oifname "ext0" masquerade');
  try {
    return await body();
  } finally {
    await rig.in(rig.node, 'nft', 'delete', 'table', 'ip', 'cni');
  }
}

/** A TCP connection from the pod to the server through the node: who the server saw, and the
 * node's conntrack entries for the pod's address, the ElasticIP or the node's (the masquerade). */
async function podConnects(rig: NatRig, port: number): Promise<{ client: string; tracked: string[] }> {
  await rig.in(rig.node, 'conntrack', '-F');
  const server = await rig.serve<{ client: string }>(rig.server, 'tcp-server', String(port));
  await rig.tool(rig.pod, 'tcp-client', SERVER, String(port), '2000');
  const { client } = await server.result;
  const tracked = (await rig.in(rig.node, 'conntrack', '-L'))
    .split('\n')
    .filter((l) => l.includes(`src=${POD} `) || l.includes(EIP) || l.includes(`dst=${NODE_EXT} `));
  return { client, tracked };
}

describeAsRoot('the pod-side NAT hook on the devices found from the pods\u2019 routes: one veth per pod', () => {
  const rig = useNatRig();
  let devices: PodDevices;

  beforeAll(async () => {
    await rig.addSecondPod();
    await rig.attach([]); // tc_nat_in/out on ext0 only: the manifest sets no natPodInterfaces
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
    devices = await podDevices(rig);
  }, 60_000);

  test('NAT-2, NAT-4: without the hook a CNI masquerade wins and conntrack tracks the flow; with it on the detected veth, the flow leaves from the ElasticIP and nothing is tracked', async () => {
    await withMasquerade(rig, async () => {
      const before = await podConnects(rig, 8201);
      expect(before.client).toBe(NODE_EXT);
      expect(before.tracked.length).toBeGreaterThan(0);

      const report = follow(rig, devices, [POD]);
      expect(report.devices.map((d) => [d.name, d.pods])).toEqual([['pod0', 1]]);
      expect(report.undetected).toEqual([]);
      const after = await podConnects(rig, 8202);
      console.log(
        `nat-pod-devices veth: masquerade without the hook -> server saw ${before.client}, ${before.tracked.length} conntrack entries; hook on pod0 -> ${after.client}, ${after.tracked.length}`,
      );
      expect(after).toEqual({ client: EIP, tracked: [] });
    });
  });

  test("following: a second pod's veth gets the hook at the next pass, and loses it when that pod goes; a veth that went leaves no pin", async () => {
    expect(await podFilter(rig, 'pod1')).toBe(0);
    const both = follow(rig, devices, [POD, POD2]);
    expect(both.devices.map((d) => d.name)).toEqual(['pod0', 'pod1']);
    expect(both.attached).toEqual([await rig.nodeIfindex('pod1')]);
    expect(await podFilter(rig, 'pod1')).not.toBe(0);

    const pod1 = await rig.nodeIfindex('pod1');
    const one = follow(rig, devices, [POD]);
    expect(one.detached).toEqual([pod1]);
    expect(await podFilter(rig, 'pod1')).toBe(0);
    expect(await podFilter(rig, 'pod0')).not.toBe(0);

    // The pod comes back, then its veth is deleted with it (its filter goes with the device).
    follow(rig, devices, [POD, POD2]);
    expect(natPinnedDevices(rig.pinDir, 'pod')).toContain(pod1);
    await rig.in(rig.node, 'ip', 'link', 'del', 'pod1');
    expect(follow(rig, devices, [POD]).detached).toEqual([pod1]);
    expect(natPinnedDevices(rig.pinDir, 'pod')).toEqual([await rig.nodeIfindex('pod0')]);
  });

  test('where detection cannot work the pod is reported with why: routed through a gateway, or through the ingress interface', () => {
    const report = follow(rig, devices, [POD, '203.0.113.9', '192.0.2.77']);
    expect(report.devices.map((d) => d.name)).toEqual(['pod0']);
    expect(report.undetected.map((u) => [u.address, u.why.split(' (')[0].split(',')[0]])).toEqual([
      ['203.0.113.9', 'not routed to a device of this node'],
      ['192.0.2.77', 'routed through the ingress interface ext0'],
    ]);
  });

  test('NAT-4: a restarted agent adopts the hooks the last one left (translation goes on), and removes them on uninstall', async () => {
    const pod0 = await rig.nodeIfindex('pod0');
    const before = await podFilter(rig, 'pod0');
    const next = await podDevices(rig);
    expect(next.devices).toEqual([pod0]);
    expect(await podFilter(rig, 'pod0')).toBe(before);
    expect((await podConnects(rig, 8203)).client).toBe(EIP);
    // Its first pass replaces the program with its own, in place.
    expect(follow(rig, next, [POD]).attached).toEqual([pod0]);
    expect(await podFilter(rig, 'pod0')).not.toBe(before);
    expect(await podFilter(rig, 'pod0')).not.toBe(0);
    inNetnsSync(rig.node, () => detachPodDevices(rig.pinDir));
    expect(await podFilter(rig, 'pod0')).toBe(0);
    expect(natPinnedDevices(rig.pinDir, 'pod')).toEqual([]);
  });
});

describeAsRoot('the pod-side NAT hook on the devices found from the pods\u2019 routes: pods on one bridge', () => {
  const rig = useNatRig();
  let devices: PodDevices;

  beforeAll(async () => {
    await rig.attach([]);
    devices = await podDevices(rig);
  }, 60_000);

  test('no route to the pods yet (the bridge is not there): reported; the bridge appearing later gets the hook at the next pass, not its ports', async () => {
    // The pod's veth down: its route goes, the pod is reached through nothing of this node yet.
    await rig.in(rig.node, 'ip', 'link', 'set', 'pod0', 'down');
    const none = follow(rig, devices, [POD]);
    expect(none.devices).toEqual([]);
    expect(none.undetected.map((u) => u.address)).toEqual([POD]);

    await rig.bridgePods(); // br0 takes the node's pod address, pod0 and pod1 become its ports
    await rig.in(rig.node, 'ip', 'link', 'set', 'pod0', 'up');
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
    const report = follow(rig, devices, [POD, POD_BRIDGED]);
    expect(report.devices.map((d) => [d.name, d.pods])).toEqual([['br0', 2]]);
    expect(await podFilter(rig, 'br0')).not.toBe(0);
    for (const port of ['pod0', 'pod1']) expect(await podFilter(rig, port)).toBe(0);
  });

  test('NAT-2, NAT-4 on the bridge, with bridge-nf-call-iptables on (as kube-proxy needs): the masquerade does not win and conntrack keeps no entry; without the hook it does', async () => {
    await rig.sysctl(rig.node, 'net.bridge.bridge-nf-call-iptables', '1');
    await withMasquerade(rig, async () => {
      const br0 = await rig.nodeIfindex('br0');
      const withHook = await podConnects(rig, 8211);
      inNetnsSync(rig.node, () => detachPodDevices(rig.pinDir, [br0]));
      const without = await podConnects(rig, 8212);
      console.log(
        `nat-pod-devices bridge: hook on br0 -> server saw ${withHook.client}, ${withHook.tracked.length} conntrack entries; without it -> ${without.client}, ${without.tracked.length}`,
      );
      expect(withHook).toEqual({ client: EIP, tracked: [] });
      expect(without.client).toBe(NODE_EXT);
      expect(without.tracked.length).toBeGreaterThan(0);
    });
  });
});
