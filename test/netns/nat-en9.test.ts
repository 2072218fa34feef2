// EN-9 with real packets: two nodes on one L2 segment with the upstream router (a bridge in the
// router's namespace), the pod and its direct ElasticIP on node B, and the router's neighbour entry
// for the ElasticIP forced to node A's MAC, as a stale ARP cache keeps it after the pod moved
// (ARP-8: no announcement by default). Node A carries what it receives for the ElasticIP by VXLAN
// with the ExternalNetwork's VNI to node B, whose VXLAN device hands it to the pod (DIR-1). The
// bindings come from desiredNat over the cluster's objects, as the agent computes them; the
// programs are loaded with the agent's capabilities by nat-loader.ts, which also makes the VXLAN
// device through the agent's own rtnetlink code.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { AGENT_CAPABILITIES } from '../../constructs/shared/install';
import { NatMaps } from '../../runtime/agent/bpf/nat';
import { removePins } from '../../runtime/agent/bpf/pins';
import { desiredNat, type NatInputs, type NodeObject } from '../../runtime/agent/nat/desired';
import { pod, podOwner } from '../shared/nat-pods';
import { VXLAN_PORT } from '../../runtime/agent/nat/vxlan';
import { NatRig, resolverIn } from './nat-rig';
import { ipv4Packets as ipv4 } from './ipv4';
import { describeAsRoot } from './rig';

const run = promisify(execFile);

const EIP = '192.0.2.50';
const ROUTER = '192.0.2.100';
const NODE_A = '192.0.2.1';
const NODE_B = '192.0.2.2';
const NODE_B_POD = '10.0.1.1';
const POD = '10.0.1.2';
const VNI = 4242;

/** The cluster's objects: ElasticIP `eip` of network `ext`, held directly by pod.eth0 on node-b. */
function objects(networkID: number): Omit<NatInputs, 'nodeName'> {
  // node-b's Pod (H1: a direct NIC forwards only while its Pod runs there with its address).
  const pods = [pod('ns', 'pod', 'node-b', POD)];
  const node = (name: string, address: string): NodeObject => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: { addresses: [{ type: 'InternalIP', address }] },
  });
  return {
    elasticIPs: [
      {
        metadata: { namespace: 'ns', name: 'eip' },
        spec: { externalNetwork: 'ext' },
        status: { address: EIP, attachment: { kind: 'NetworkInterface', name: 'pod.eth0' } },
      } as NatInputs['elasticIPs'][number],
    ],
    networkInterfaces: [
      {
        metadata: { namespace: 'ns', name: 'pod.eth0', ownerReferences: [podOwner('ns', 'pod')] },
        spec: { podName: 'pod', interface: 'eth0', nodeName: 'node-b', address: POD, elasticIP: 'eip' },
        status: { phase: 'Ready' },
      } as NatInputs['networkInterfaces'][number],
    ],
    attachments: [],
    pods,
    externalNetworks: [
      { metadata: { name: 'ext' }, spec: { type: 'arp', addressPools: ['p'] }, status: { networkID } } as NonNullable<
        NatInputs['externalNetworks']
      >[number],
    ],
    nodes: [node('node-a', NODE_A), node('node-b', NODE_B)],
  };
}

interface Vxlan {
  readonly outerDst: string;
  readonly dstPort: number;
  readonly vni: number;
  readonly innerDst: string;
}

const ip = (b: Buffer, at: number) => [...b.subarray(at, at + 4)].join('.');

/** Ethernet / IPv4 / UDP / VXLAN / Ethernet / IPv4, of an unfragmented (or first) outer packet. */
function vxlanOf(frame: Buffer): Vxlan | undefined {
  if (frame.readUInt16BE(12) !== 0x0800 || frame[23] !== 17 || (frame.readUInt16BE(20) & 0x1fff) !== 0) return;
  const udp = 14 + (frame[14] & 15) * 4;
  const vx = udp + 8;
  return {
    outerDst: ip(frame, 30),
    dstPort: frame.readUInt16BE(udp + 2),
    vni: frame.readUIntBE(vx + 4, 3),
    innerDst: ip(frame, vx + 8 + 14 + 16),
  };
}

describeAsRoot('EN-9: a direct ElasticIP reached through a node without its pod is carried by VXLAN', () => {
  const tools = new NatRig();
  const id = randomBytes(3).toString('hex');
  const router = `je${id}r`;
  const nodeA = `je${id}a`;
  const nodeB = `je${id}b`;
  const pod = `je${id}p`;
  const pinA = `/sys/fs/bpf/juneau-test-${id}-en9a`;
  const pinB = `/sys/fs/bpf/juneau-test-${id}-en9b`;
  let mapsA: NatMaps;
  let mapsB: NatMaps;
  const sh = (ns: string, ...args: string[]) => tools.in(ns, ...(args as [string, ...string[]]));

  async function link(nsA: string, devA: string, nsB: string, devB: string): Promise<void> {
    const a = `je${id}${randomBytes(2).toString('hex')}`;
    const b = `je${id}${randomBytes(2).toString('hex')}`;
    await run('ip', ['link', 'add', a, 'type', 'veth', 'peer', 'name', b]);
    await run('ip', ['link', 'set', a, 'netns', nsA]);
    await run('ip', ['link', 'set', b, 'netns', nsB]);
    for (const [ns, from, to] of [
      [nsA, a, devA],
      [nsB, b, devB],
    ]) {
      await sh(ns, 'ip', 'link', 'set', from, 'name', to);
      // Software checksums, verified by the receiving kernel; one packet on the wire per packet.
      await sh(ns, 'ethtool', '-K', to, 'rx', 'off', 'tx', 'off', 'gso', 'off', 'gro', 'off', 'tso', 'off');
      await sh(ns, 'ip', 'link', 'set', to, 'up');
    }
  }

  /** Loads the programs and makes the VXLAN device from a process holding only the agent's
   * capabilities (as NatRig.attach does). */
  async function attach(ns: string, pods: string[], pinDir: string, local: string): Promise<{ tunnel: number }> {
    const caps = `-all,${AGENT_CAPABILITIES.map((c) => `+${c.toLowerCase()}`).join(',')}`;
    const request = JSON.stringify({ ext: 'ext0', pods, pinDir, tunnel: local });
    const tsx = path.join(__dirname, '../../node_modules/.bin/tsx');
    const loader = path.join(__dirname, 'nat-loader.ts');
    const out = await sh(
      ns,
      'setpriv',
      `--bounding-set=${caps}`,
      '--inh-caps=-all',
      '--',
      tsx,
      loader,
      'attach',
      request,
    );
    return JSON.parse(out) as { tunnel: number };
  }

  /** What each node's agent would write for these objects. */
  function program(networkID: number): void {
    const a = desiredNat({ nodeName: 'node-a', ...objects(networkID) });
    const b = desiredNat({ nodeName: 'node-b', ...objects(networkID) });
    for (const maps of [mapsA, mapsB]) maps.setPeers([NODE_A, NODE_B]);
    mapsA.sync(a.nat, a.direct, a.remote);
    mapsB.sync(b.nat, b.direct, b.remote);
  }

  /** UDP 4789 frames leaving node A while `during` runs. */
  const encapsulated = async (during: () => Promise<void>) =>
    (await tools.capture(nodeA, 'ext0', during, ['udp', 'port', String(VXLAN_PORT)])).map(vxlanOf);

  beforeAll(async () => {
    await run('bash', [`${__dirname}/../../bpf/build.sh`]);
    for (const ns of [router, nodeA, nodeB, pod]) {
      await run('ip', ['netns', 'add', ns]);
      await sh(ns, 'ip', 'link', 'set', 'lo', 'up');
      for (const scope of ['all', 'default']) await tools.sysctl(ns, `net.ipv6.conf.${scope}.disable_ipv6`, '1');
    }
    await sh(router, 'ip', 'link', 'add', 'br0', 'type', 'bridge');
    await link(router, 'pa', nodeA, 'ext0');
    await link(router, 'pb', nodeB, 'ext0');
    await link(nodeB, 'pod0', pod, 'eth0');
    for (const port of ['pa', 'pb']) await sh(router, 'ip', 'link', 'set', port, 'master', 'br0');
    await sh(router, 'ip', 'link', 'set', 'br0', 'up');
    await sh(router, 'ip', 'addr', 'add', `${ROUTER}/24`, 'dev', 'br0');
    await sh(nodeA, 'ip', 'addr', 'add', `${NODE_A}/24`, 'dev', 'ext0');
    await sh(nodeB, 'ip', 'addr', 'add', `${NODE_B}/24`, 'dev', 'ext0');
    await sh(nodeB, 'ip', 'addr', 'add', `${NODE_B_POD}/24`, 'dev', 'pod0');
    await sh(pod, 'ip', 'addr', 'add', `${POD}/24`, 'dev', 'eth0');
    await sh(pod, 'ip', 'addr', 'add', `${EIP}/32`, 'dev', 'lo');
    await sh(pod, 'ip', 'route', 'add', 'default', 'via', NODE_B_POD);
    for (const ns of [nodeA, nodeB]) {
      await tools.sysctl(ns, 'net.ipv4.ip_forward', '1');
      await sh(ns, 'ip', 'route', 'add', 'default', 'via', ROUTER);
      // What is not carried stops here instead of bouncing between node and router.
      await sh(ns, 'ip', 'route', 'add', 'blackhole', `${EIP}/32`);
    }
    // The stale cache: the router keeps sending the ElasticIP to node A.
    const macA = await tools.mac(nodeA, 'ext0');
    await sh(router, 'ip', 'neigh', 'replace', EIP, 'lladdr', macA, 'dev', 'br0', 'nud', 'permanent');
    // The bridge learns both nodes' MACs first: a frame to an unknown MAC is flooded to node B too,
    // whose tc_nat_in would deliver that copy itself (DIR-1) besides node A's VXLAN one.
    for (const ns of [nodeA, nodeB]) expect(await tools.tool(ns, 'ping', ROUTER, '1')).toEqual({ replies: [ROUTER] });
    const a = await attach(nodeA, [], pinA, NODE_A);
    await attach(nodeB, ['pod0'], pinB, NODE_B);
    mapsA = NatMaps.openPinned(pinA, resolverIn(nodeA));
    mapsB = NatMaps.openPinned(pinB, resolverIn(nodeB));
    mapsA.setTunnel(a.tunnel);
  }, 120_000);

  afterAll(async () => {
    mapsA?.close();
    mapsB?.close();
    await tools.destroy();
    for (const ns of [router, nodeA, nodeB, pod]) await run('ip', ['netns', 'del', ns]).catch(() => undefined);
    removePins(pinA);
    removePins(pinB);
  }, 60_000);

  test("EN-9: TCP to the ElasticIP through node A reaches the pod on node B in VXLAN with the network's VNI and completes; the pod sees the router", async () => {
    program(VNI);
    expect([mapsA.remoteBindings(), mapsB.acceptedVnis()]).toEqual([
      [{ elasticIP: EIP, node: NODE_B, vni: VNI }],
      [VNI],
    ]);
    const server = await tools.serve<{ client: string; received: number }>(pod, 'tcp-server', '8080');
    let client: unknown;
    const frames = await encapsulated(async () => {
      client = await tools.tool(router, 'tcp-client', EIP, '8080', '20000');
    });
    expect(client).toEqual({ banner: `client=${ROUTER}`, sent: 20000, echoed: 20000, intact: true });
    expect(await server.result).toEqual({ client: ROUTER, received: 20000 });
    const first = frames.filter((f) => f !== undefined);
    expect(first.length).toBeGreaterThan(3);
    expect(new Set(first.map((f) => JSON.stringify(f)))).toEqual(
      new Set([JSON.stringify({ outerDst: NODE_B, dstPort: VXLAN_PORT, vni: VNI, innerDst: EIP })]),
    );
    const [a, b] = [mapsA.stats(), mapsB.stats()];
    expect({
      aEncap: a.JUNEAU_NAT_REMOTE_ENCAP >= BigInt(first.length),
      bTunnelIn: b.JUNEAU_NAT_EVENT_TUNNEL_IN > 0n,
      bDirectIn: b.JUNEAU_NAT_DIRECT_IN === b.JUNEAU_NAT_EVENT_TUNNEL_IN,
      bDropped: b.JUNEAU_NAT_DROP_TUNNEL_VNI + b.JUNEAU_NAT_DROP_TUNNEL_UNMAPPED,
    }).toEqual({ aEncap: true, bTunnelIn: true, bDirectIn: true, bDropped: 0n });
    expect(mapsA.entries()).toEqual([
      expect.objectContaining({
        elasticIP: EIP,
        address: NODE_B,
        kind: 'remote',
        inPackets: a.JUNEAU_NAT_REMOTE_ENCAP,
      }),
    ]);
  }, 30_000);

  test('EN-9: node B accepts only the VNIs of its direct ElasticIPs: another VNI is encapsulated by A and dropped by B, counted', async () => {
    program(VNI);
    mapsA.sync([], [], [{ elasticIP: EIP, node: NODE_B, vni: VNI + 1 }]);
    const before = mapsB.stats().JUNEAU_NAT_DROP_TUNNEL_VNI;
    let ping: unknown;
    const frames = await encapsulated(async () => {
      ping = await tools.tool(router, 'ping', EIP, '2');
    });
    expect(ping).toEqual({ replies: [] });
    expect(frames.map((f) => f?.vni)).toEqual([VNI + 1, VNI + 1]);
    expect(mapsB.stats().JUNEAU_NAT_DROP_TUNNEL_VNI - before).toBe(2n);
  }, 30_000);

  test("SEC-3: a VXLAN frame with the network's VNI for the direct ElasticIP from a host that is not a Node is dropped by node B and counted; the same frame from node A reaches the pod", async () => {
    program(VNI);
    /** What the pod receives on UDP `port` while `from` sends one VXLAN frame to node B. */
    const injected = async (from: string, port: number) =>
      ipv4(
        await tools.capture(
          pod,
          'eth0',
          async () =>
            void (await tools.tool(from, 'vxlan-send', NODE_B, String(VNI), '10.244.9.9', EIP, String(port), '1')),
          ['udp', 'and', 'dst', 'port', String(port)],
        ),
      ).map((p) => `${p.src}>${p.dst}`);
    let before = mapsB.stats();
    expect(await injected(router, 9500)).toEqual([]);
    expect(mapsB.stats().JUNEAU_NAT_DROP_TUNNEL_PEER - before.JUNEAU_NAT_DROP_TUNNEL_PEER).toBe(1n);
    expect(mapsB.stats().JUNEAU_NAT_EVENT_TUNNEL_IN - before.JUNEAU_NAT_EVENT_TUNNEL_IN).toBe(0n);
    before = mapsB.stats();
    expect(await injected(nodeA, 9501)).toEqual([`10.244.9.9>${EIP}`]);
    expect(mapsB.stats().JUNEAU_NAT_EVENT_TUNNEL_IN - before.JUNEAU_NAT_EVENT_TUNNEL_IN).toBe(1n);
    expect(mapsB.peers()).toEqual([NODE_A, NODE_B]);
  }, 30_000);

  test('EN-9, EN-8: with status.networkID 0 nothing is encapsulated; removing the binding stops the carrying', async () => {
    for (const networkID of [0, VNI]) {
      program(networkID);
      if (networkID === VNI) {
        expect(mapsA.remoteBindings()).toHaveLength(1);
        mapsA.sync([], [], []); // the pod left: the remote binding goes
      }
      expect([mapsA.remoteBindings(), mapsA.countersMap.keys()]).toEqual([[], []]);
      const unmapped = mapsA.stats().JUNEAU_NAT_PASS_UNMAPPED;
      let ping: unknown;
      const frames = await encapsulated(async () => {
        ping = await tools.tool(router, 'ping', EIP, '2');
      });
      expect({ ping, frames }).toEqual({ ping: { replies: [] }, frames: [] });
      // The pings did reach node A, which passed them to its kernel.
      expect(mapsA.stats().JUNEAU_NAT_PASS_UNMAPPED - unmapped).toBeGreaterThanOrEqual(2n);
    }
  }, 60_000);
});
