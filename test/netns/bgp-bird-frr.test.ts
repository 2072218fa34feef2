// BGP mode's node half on real daemons and real packets: two "node" namespaces run BIRD 2 on the
// configuration the agent renders (runtime/agent/bgp/bird-config.ts) and reload it through the
// agent's control client (birdc.ts); the "router" namespace on the same segment runs FRR (another
// implementation) peering eBGP with both and installing multipath routes into its kernel.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyBirdConfig, bgpSessions, birdCommand, type BgpSessionState } from '../../runtime/agent/bgp/birdc';
import { birdSymbol, type BirdConfigInput, type BirdPeer } from '../../runtime/agent/bgp/bird-config';
import { BirdNode, FrrRouter, RouteMonitor, kernelNextHops, poll } from './bgp-rig';
import { CLIENT_IP, Rig, describeAsRoot } from './rig';
import { inNs } from './ns-tools';
import { BIRD_RECOVERY_FLAGS } from '../../constructs/shared/install/agent';

jest.setTimeout(120_000);

const ROUTER_ASN = 64513;
const NODE_ASN = 64512;
const PASSWORD = 's3cret-md5';
const VIP = '198.51.100.10/32';
const SECOND_VIP = '198.51.100.11/32';
/** What the router announces to the nodes: it must never reach them (BGP-8). */
const FROM_ROUTER = '203.0.113.0/24';

/** Node 0: password and BFD; node 1: no BFD, a 3 s hold time (the crash tests use each). */
const PEERS: readonly BirdPeer[] = [
  {
    name: 'router',
    address: CLIENT_IP,
    peerASN: ROUTER_ASN,
    myASN: NODE_ASN,
    holdTime: 9,
    keepaliveTime: 3,
    password: PASSWORD,
    bfd: { minRxMs: 100, minTxMs: 100, multiplier: 3 },
  },
  { name: 'router', address: CLIENT_IP, peerASN: ROUTER_ASN, myASN: NODE_ASN, holdTime: 3, keepaliveTime: 1 },
];

function frrConfig(rig: Rig): string {
  const [n0, n1] = [rig.nodeIp(0), rig.nodeIp(1)];
  return `frr defaults datacenter
hostname router
ip route ${FROM_ROUTER} Null0
bfd
 profile fast
  receive-interval 100
  transmit-interval 100
 exit
exit
router bgp ${ROUTER_ASN}
 bgp router-id ${CLIENT_IP}
 no bgp ebgp-requires-policy
 neighbor ${n0} remote-as ${NODE_ASN}
 neighbor ${n0} password ${PASSWORD}
 neighbor ${n0} bfd profile fast
 neighbor ${n1} remote-as ${NODE_ASN}
 address-family ipv4 unicast
  network ${FROM_ROUTER}
  maximum-paths 8
 exit-address-family
exit
`;
}

describeAsRoot('BGP on real daemons: BIRD on two nodes, FRR on the router', () => {
  const rig = new Rig(2);
  const router = new FrrRouter(rig.client, `jn${rig.id}`);
  const nodes = [0, 1].map((i) => new BirdNode(rig.node(i), `/run/juneau-test-bgp-${rig.id}/n${i}`));
  const input = (i: number, prefixes: readonly string[], peer: Partial<BirdPeer> = {}): BirdConfigInput => ({
    routerId: rig.nodeIp(i),
    peers: [{ ...PEERS[i], ...peer }],
    prefixes: prefixes.map((prefix) => ({ prefix })),
  });
  const session = async (i: number): Promise<BgpSessionState> =>
    (await bgpSessions(nodes[i].socket, birdSymbol('router')))[0];
  const established = (i: number) =>
    poll(`node ${i}'s session Established`, async () => {
      const s = await session(i);
      return s.state === 'Established' ? s : undefined;
    });
  const nextHops = () => kernelNextHops(rig.client, VIP);
  const hopsBecome = (want: string[], timeoutMs = 60_000) =>
    poll(
      `router's next hops for ${VIP} = [${want.join(', ')}]`,
      async () => {
        const hops = await nextHops();
        return JSON.stringify(hops) === JSON.stringify([...want].sort()) ? hops : undefined;
      },
      timeoutMs,
    );

  beforeAll(async () => {
    await rig.setup();
    await rig.sysctl(rig.client, 'net.ipv4.fib_multipath_hash_policy', '1');
    await router.start(frrConfig(rig));
    for (const i of [0, 1]) await nodes[i].start(input(i, [VIP]));
    await Promise.all([established(0), established(1)]);
  }, 180_000);

  afterAll(async () => {
    for (const node of nodes) console.log(`BIRD log of ${node.ns}:\n${fs.readFileSync(node.log, 'utf8').slice(-3000)}`);
    for (const node of nodes) node.stop();
    await router.stop();
    await rig.destroy();
    fs.rmSync(path.dirname(nodes[0].dir), { recursive: true, force: true });
  }, 60_000);

  test('BGP-5: a VIP announced by both nodes has exactly two next hops in the router kernel; withdrawn on one, one; on both, none', async () => {
    await hopsBecome([rig.nodeIp(0), rig.nodeIp(1)]);
    expect((await nodes[1].apply(input(1, []))).ok).toBe(true);
    await hopsBecome([rig.nodeIp(0)]);
    expect((await nodes[0].apply(input(0, []))).ok).toBe(true);
    await hopsBecome([]);
    for (const i of [0, 1]) expect((await nodes[i].apply(input(i, [VIP]))).ok).toBe(true);
    expect(await hopsBecome([rig.nodeIp(0), rig.nodeIp(1)])).toHaveLength(2);
  });

  test('BGP-8: the route the router sends reaches BIRD and is filtered; it is in neither BIRD nor the node kernel', async () => {
    // Positive control: FRR sends it to both nodes and BIRD counts it received and filtered.
    for (const i of [0, 1]) {
      const sent = await router.json<{ advertisedRoutes: Record<string, unknown> }>(
        `show bgp ipv4 unicast neighbors ${rig.nodeIp(i)} advertised-routes`,
      );
      expect(Object.keys(sent.advertisedRoutes)).toContain(FROM_ROUTER);
      const details = (await birdCommand(nodes[i].socket, `show protocols all ${birdSymbol('router')}`))
        .map((l) => l.text)
        .join('\n');
      const [received, , filtered] = (/Import updates:\s+(\d+)\s+(\d+)\s+(\d+)/.exec(details) ?? [])
        .slice(1)
        .map(Number);
      expect(received).toBeGreaterThanOrEqual(1);
      expect(filtered).toBe(received);
      expect((await session(i)).prefixesImported).toBe(0);
      const table = (await birdCommand(nodes[i].socket, 'show route')).map((l) => l.text).join('\n');
      expect(table).not.toContain('203.0.113.0');
      expect(await kernelNextHops(rig.node(i), FROM_ROUTER)).toEqual([]);
      expect(await inNs(rig.node(i), 'ip', 'route', 'show', 'table', 'all', 'proto', 'bird')).toBe('');
    }
  });

  test('BGP-7: the client reads each session: Established, since when, prefixes exported, the peer name', async () => {
    for (const i of [0, 1]) {
      const s = await established(i);
      expect(s).toMatchObject({ peer: 'router', neighborAddress: CLIENT_IP, prefixesExported: 1, prefixesImported: 0 });
      expect(s.since!.getTime()).toBeLessThanOrEqual(Date.now());
      console.log(`BGP-7 node ${i}: ${s.state} since ${s.since!.toISOString()}, ${s.prefixesExported} exported`);
    }
  });

  test('BGP-6: configure with one more prefix announces it without resetting the session (uptime and FRR counters kept)', async () => {
    const before = await established(0);
    const frrBefore = await router.neighbor(rig.nodeIp(0));
    expect((await nodes[0].apply(input(0, [VIP, SECOND_VIP]))).ok).toBe(true);
    // The change happened: the router has the new prefix from node 0 ...
    await poll('the router learns the second VIP', async () =>
      (await kernelNextHops(rig.client, SECOND_VIP)).includes(rig.nodeIp(0)) ? true : undefined,
    );
    const after = await session(0);
    expect(after.prefixesExported).toBe(2);
    // ... and the session it came over is the one that was up before.
    expect(after.since).toEqual(before.since);
    expect(await router.neighbor(rig.nodeIp(0))).toEqual(frrBefore);
  });

  test('BGP-7: a config that does not parse is refused with BIRD’s reason, and the running one keeps announcing', async () => {
    const bad = await applyBirdConfig(nodes[0].socket, nodes[0].file, 'router id 1.2.3.4;\nprotocol bgp x {\n');
    expect(bad).toMatchObject({ ok: false, error: expect.stringMatching(/syntax error/) });
    console.log(`BGP-7 refused config: ${bad.ok ? '' : bad.error}`);
    expect((await session(0)).prefixesExported).toBe(2);
    expect(await kernelNextHops(rig.client, SECOND_VIP)).toEqual([rig.nodeIp(0)]);
  });

  test('BGP-6: killing and restarting the agent process leaves the session and routes untouched', async () => {
    const before = await established(0);
    const frrBefore = await router.neighbor(rig.nodeIp(0));
    const agent = () => {
      // node itself is the agent (not the tsx wrapper, whose child would outlive a SIGKILL of it).
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(__dirname, 'bgp-agent.ts'),
          nodes[0].socket,
          nodes[0].file,
          JSON.stringify(input(0, [VIP, SECOND_VIP])),
        ],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const firstLine = new Promise<{ configured: { ok: boolean }; sessions: BgpSessionState[] }>((resolve, reject) => {
        child.stdout.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString().split('\n')[0])));
        child.once('exit', (code) => reject(new Error(`bgp-agent exited ${code}`)));
      });
      return { child, firstLine };
    };
    const first = agent();
    const report = await first.firstLine;
    expect(report.configured.ok).toBe(true);
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));
    const second = agent();
    const again = await second.firstLine;
    second.child.kill('SIGKILL');
    expect(again.configured.ok).toBe(true);
    expect(new Date(again.sessions[0].since!)).toEqual(before.since);
    expect(await router.neighbor(rig.nodeIp(0))).toEqual(frrBefore);
    expect(await nextHops()).toEqual([rig.nodeIp(0), rig.nodeIp(1)].sort());
  });

  test('BGP-7: a wrong password leaves the session down and the client reads its state; the right one restores it', async () => {
    const before = await established(0);
    expect((await nodes[0].apply(input(0, [VIP, SECOND_VIP], { password: 'wrong-one' }))).ok).toBe(true);
    // TCP MD5 drops every segment with the wrong key, so the session stays in Connect/Active; BIRD
    // has a last error once a connection attempt fails, which with silent drops can take minutes.
    const down = await poll('node 0 not Established since the password change', async () => {
      if (!nodes[0].alive()) throw new Error(`BIRD on node 0 exited: see ${nodes[0].log}`);
      const s = await session(0);
      return s.state !== 'Established' && s.since! > before.since! ? s : undefined;
    });
    await hopsBecome([rig.nodeIp(1)]);
    const frr = await router.neighbor(rig.nodeIp(0));
    console.log(
      `BGP-7 wrong password: node state ${down.state} (${down.protocolState}, '${down.info}'), last error '${down.lastError ?? ''}'; FRR ${frr.state}`,
    );
    expect(['Connect', 'Active', 'Idle']).toContain(down.state);
    expect(frr.state).not.toBe('Established');
    expect(down.prefixesExported).toBe(0);
    expect((await nodes[0].apply(input(0, [VIP, SECOND_VIP]))).ok).toBe(true);
    await established(0);
    await hopsBecome([rig.nodeIp(0), rig.nodeIp(1)]);
  });

  test('BGP-6: with BFD, a frozen BIRD (SIGSTOP, a crash to the router) loses its next hop in under 1 s', async () => {
    await hopsBecome([rig.nodeIp(0), rig.nodeIp(1)]);
    const monitor = await RouteMonitor.start(rig.client);
    try {
      const t0 = performance.now();
      nodes[0].signal('SIGSTOP');
      const ms = await monitor.firstChange('198.51.100.10', t0, 10_000);
      console.log(`BGP-6 BFD (100 ms x 3): node 0 frozen -> router FIB changed in ${ms.toFixed(0)} ms`);
      expect(await nextHops()).toEqual([rig.nodeIp(1)]);
      expect(ms).toBeLessThan(1000);
    } finally {
      monitor.stop();
      nodes[0].signal('SIGCONT');
    }
    // Thawed, node 0 finds its session torn down (FRR sent Cease/BFD down) and opens a new one.
    const resumed = new Date(Math.floor(Date.now() / 1000) * 1000);
    await poll(
      'node 0 Established again after the freeze',
      async () => {
        const s = await session(0);
        return s.state === 'Established' && s.since! >= resumed ? s : undefined;
      },
      90_000,
    );
    await hopsBecome([rig.nodeIp(0), rig.nodeIp(1)]);
  });

  test('BGP-6: without BFD, a frozen BIRD loses its next hop within the 3 s hold time', async () => {
    await hopsBecome([rig.nodeIp(0), rig.nodeIp(1)]);
    const monitor = await RouteMonitor.start(rig.client);
    try {
      const t0 = performance.now();
      nodes[1].signal('SIGSTOP');
      // Node 1's next hop is what the freeze must remove; node 0's BFD session (100 ms x 3) can flap
      // on a loaded machine, so the moment is when node 1 left the route, not the route's first change.
      const seenAt = await poll(
        `node 1 gone from the router's next hops for ${VIP}`,
        async () => ((await nextHops()).includes(rig.nodeIp(1)) ? undefined : performance.now()),
        15_000,
      );
      const ms = monitor.lastChange('198.51.100.10', t0, seenAt);
      console.log(`BGP-6 hold time 3 s: node 1 frozen -> router FIB changed in ${ms.toFixed(0)} ms`);
      // The hold time runs from the last keepalive heard (at most 1 s before the freeze), plus FRR's and the kernel's processing.
      expect(ms).toBeLessThan(3000 + 1000);
      // Node 0, never frozen, carries the VIP alone (back within the wait if its session flapped).
      await hopsBecome([rig.nodeIp(0)]);
    } finally {
      monitor.stop();
      nodes[1].signal('SIGCONT');
    }
  });

  // Last: it restarts node 0's BIRD, and the password test reads session times to the second.
  test('BGP-6: BIRD stopped by `birdcl graceful restart` (the install’s preStop) and started again: the router keeps the node’s next hop the whole time (stopped by SIGTERM alone, it loses it), and the session comes back', async () => {
    const both = [rig.nodeIp(0), rig.nodeIp(1)].sort();
    await hopsBecome(both);
    const monitor = await RouteMonitor.start(rig.client);
    try {
      const since = performance.now();
      const before = await router.neighbor(rig.nodeIp(0));
      expect(await birdCommand(nodes[0].socket, 'graceful restart')).toEqual([
        { code: 25, text: 'Graceful restart requested' },
      ]);
      await nodes[0].exited();
      // FRR, a helper, keeps the routes of a peer that closed without a Cease as stale.
      await poll('the router to see the session with node 0 gone', async () =>
        (await router.neighbor(rig.nodeIp(0))).state !== 'Established' ? true : undefined,
      );
      expect(await nextHops()).toEqual(both);
      // As in the agent Pod: the new BIRD starts on the configuration the last one ran (kept on
      // the host) with -R (graceful restart recovery), and the agent then applies its decision.
      await nodes[0].start(undefined, BIRD_RECOVERY_FLAGS);
      expect((await nodes[0].apply(input(0, [VIP]))).ok).toBe(true);
      await established(0);
      // Once the new session is up and BIRD's End-of-RIB in, FRR drops what it still holds as stale.
      await poll('the router to have node 0’s End-of-RIB', async () => {
        const n = await router.json<
          Record<string, { gracefulRestartInfo?: { endOfRibRecv?: Record<string, boolean> } }>
        >(`show bgp neighbors ${rig.nodeIp(0)}`);
        return Object.values(n[rig.nodeIp(0)]?.gracefulRestartInfo?.endOfRibRecv ?? {}).some(Boolean)
          ? true
          : undefined;
      });
      const after = await router.neighbor(rig.nodeIp(0));
      expect(after.established).toBe(before.established + 1);
      expect(await nextHops()).toEqual(both);
      expect(monitor.changes(VIP.split('/')[0], since, performance.now())).toEqual([]);
    } finally {
      monitor.stop();
    }
  });
});
