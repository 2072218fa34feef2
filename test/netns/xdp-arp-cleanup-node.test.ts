// SEC-16 (L4): a node whose agent missed the uninstall keeps Juneau's XDP guard (dropping ARP for
// the old pools' addresses, which breaks a move to another load balancer) and its NAT filters.
// `kubectl juneau cleanup-node`, run on the node as root from its pins alone, detaches the
// responder and the NAT filters, deletes the VXLAN device and removes the pins; the kernel then
// answers the pool address it holds. Real programs attached by separate loader processes (as an
// agent would have left them), the real CLI, real ARP.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { PIN_SUBDIR } from '../../runtime/agent/bpf/pins';
import { poolItemsToPrefixes } from '../../runtime/agent/bpf/prefixes';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

jest.setTimeout(60_000);

const REPO = path.resolve(__dirname, '../..');
const TSX = path.join(REPO, 'node_modules/.bin/tsx');
const HELD_BY_KERNEL = `${SUBNET}.61`; // on kube-ipvs0, in the old pool, answered by no one while guarded

describeAsRoot('SEC-16 kubectl juneau cleanup-node (real XDP, TC, pins)', () => {
  const rig = useRig(1);

  test('SEC-16: cleanup-node detaches the responder and the NAT filters, deletes the VXLAN device and removes the pins; the kernel answers again', async () => {
    const ns = rig.node(0);
    const bpffs = rig.pinDir(0);
    const pinDir = path.join(bpffs, PIN_SUBDIR);
    await rig.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kube-ipvs0p');
    await rig.in(ns, 'ip', 'addr', 'add', `${HELD_BY_KERNEL}/32`, 'dev', 'kube-ipvs0');
    for (const scope of ['all', 'eth0']) await rig.sysctl(ns, `net.ipv4.conf.${scope}.arp_ignore`, '0');
    const { ifindex, mac } = await rig.attach(0, { mode: 'generic', pinDir });
    await rig.in(
      ns,
      TSX,
      path.join(__dirname, 'nat-loader.ts'),
      'attach',
      JSON.stringify({ ext: 'eth0', pinDir, tunnel: rig.nodeIp(0) }),
    );
    const filters = async () => (await rig.in(ns, 'tc', 'filter', 'show', 'dev', 'eth0', 'ingress')).trim();
    const vxlan = async () => (await rig.in(ns, 'ip', '-br', 'link')).includes('juneau-vxlan');
    // Pinned one level down from pinDir(0), as an agent with --bpffs pins: opened here, not by rig.maps().
    const arp = ArpMaps.openPinned(pinDir);
    try {
      arp.syncGuard({ drop: poolItemsToPrefixes([`${SUBNET}.0/25`]), allow: [rig.nodeIp(0)] });
    } finally {
      arp.close();
    }
    // What the agent left: the guard drops the request the kernel would answer.
    expect(await rig.xdpProgramId(0)).toBeGreaterThan(0);
    expect(await filters()).toMatch(/tc_nat_in/);
    expect(await vxlan()).toBe(true);
    let frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: HELD_BY_KERNEL, count: 3 }));
    expect(repliesFor(frames, HELD_BY_KERNEL)).toEqual([]);

    const out = await rig.in(
      ns,
      process.execPath,
      '--import',
      'tsx',
      path.join(REPO, 'runtime/cli/main.ts'),
      'cleanup-node',
      '--bpffs',
      bpffs,
      '-o',
      'json',
    );
    const done = JSON.parse(out) as {
      responderDetached: number[];
      natDetached: Array<{ ifindex: number; roles: string[] }>;
    };
    expect(done.responderDetached).toEqual([ifindex]);
    expect(done.natDetached).toContainEqual({ ifindex, roles: expect.arrayContaining(['in', 'out']) });
    expect(await rig.xdpProgramId(0)).toBe(0);
    expect(await filters()).not.toMatch(/tc_nat/);
    expect(await vxlan()).toBe(false);
    expect(fs.existsSync(path.join(bpffs, 'juneau'))).toBe(false);
    // The kernel decides again, as without Juneau: it answers the address it holds.
    frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: HELD_BY_KERNEL, count: 3 }));
    expect(repliesFor(frames, HELD_BY_KERNEL).map((f) => f.arp!.sha)).toEqual([mac, mac, mac]);
  });
});
