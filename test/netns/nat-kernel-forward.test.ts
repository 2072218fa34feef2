// M2 of the security review, with real packets: the node's netfilter forward chain drops UDP to
// the pod (what an iptables/nftables NetworkPolicy or a host firewall does). By default tc_nat_in
// redirects the translated packet straight to the pod's device, past that chain: it arrives.
// Attached with --nat-kernel-forward, the packet goes through the kernel's forwarding after the
// DNAT and the rule drops it (its counter proves the drop; the same port without the rule is the
// positive control).
import { describeAsRoot } from './rig';
import { EIP, POD, ROUTER_EXT, useNatRig } from './nat-rig';

interface Seen {
  seen: Array<{ from: string }>;
}

describeAsRoot('NetworkPolicy and --nat-kernel-forward (SEC-7)', () => {
  const rig = useNatRig();
  const BLOCKED = 9400;
  const OPEN = 9401;

  beforeAll(async () => {
    await rig.attach();
    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
    await rig.in(rig.node, 'nft', 'add table inet netpol');
    await rig.in(rig.node, 'nft', 'add chain inet netpol forward { type filter hook forward priority 0; }');
    await rig.in(rig.node, 'nft', `add rule inet netpol forward ip daddr ${POD} udp dport ${BLOCKED} counter drop`);
  }, 60_000);

  /** Packets the forward rule dropped so far. */
  const dropped = async () => {
    const out = await rig.in(rig.node, 'nft', 'list', 'chain', 'inet', 'netpol', 'forward');
    return Number(/counter packets (\d+)/.exec(out)?.[1]);
  };

  /** One datagram from the router to the ElasticIP on `port`. */
  const send = (port: number) => rig.tool(rig.router, 'udp-send', EIP, String(port), '32', '1', 'nodf');
  /** What a server of the pod on `port` received of one datagram sent to it. */
  const received = async (port: number) => {
    const server = await rig.serve<Seen>(rig.pod, 'udp-server', String(port), '1');
    await send(port);
    return (await server.result).seen.map((s) => s.from);
  };

  test('SEC-7: by default the translated packet reaches the pod past the forward drop rule (NetworkPolicy is bypassed)', async () => {
    const before = await dropped();
    expect(await received(BLOCKED)).toEqual([ROUTER_EXT]);
    expect((await dropped()) - before).toBe(0);
  });

  test('SEC-7: with --nat-kernel-forward the rule applies: the packet is translated, handed to the kernel, and dropped by the rule; another port arrives', async () => {
    await rig.attach(['pod0'], { kernelForward: true });
    const before = await dropped();
    const stats = rig.maps().stats();
    await send(BLOCKED);
    expect((await dropped()) - before).toBe(1);
    expect(rig.statsSince(stats)).toMatchObject({ JUNEAU_NAT_DNAT: 1n });
    expect(rig.statsSince(stats).JUNEAU_NAT_DNAT_REDIRECT).toBeUndefined();
    expect(await received(OPEN)).toEqual([ROUTER_EXT]);
  });
});
