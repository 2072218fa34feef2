// The agent's BGP loop (runtime/agent/bgp/sync.ts) on the real API server and a real BIRD 2
// (`bird`, in a network namespace of its own made by `unshare -n`, so its port 179 is nobody
// else's): what the ServiceLoadBalancers' status says reaches BIRD's routes, leaving
// advertisingNodes withdraws (BGP-5), a BIRD restart is configured again, and the node's
// BGPNodeState reports the session (BGP-7). No controller runs: the test writes the
// ServiceLoadBalancer's status as the controller would. The peer is unreachable (no router here),
// so the session stays down: the router side is test/netns/bgp-bird-frr.test.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { API_VERSION, type BGPNodeState } from '../../api';
import { renderBirdConfig } from '../../runtime/agent/bgp/bird-config';
import { birdCommand } from '../../runtime/agent/bgp/birdc';
import { BgpSync, type BgpSyncOptions } from '../../runtime/agent/bgp/sync';
import { applyStatus } from '../../runtime/kube/apply';
import { createLogger, silentLogger } from '../../runtime/kube/log';
import type { ServedAddress } from '../../runtime/agent/nat/desired';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { deleteIgnoringNotFound, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { deleteNodes, ensureNode, testKubeConfig, waitFor, waitForMatch } from './fixture';
import { tempDir } from '../unit/temp-dir';

const rest = new RestClient(testKubeConfig());
const suffix = Math.random().toString(36).slice(2, 7);
const NODE = `bgpa-${suffix}-n1`;
const POOL = `bgpa-${suffix}`;
const NET = `bgpa-${suffix}`;
const PEER = `bgpa-tor-${suffix}`;
const ADV = `bgpa-adv-${suffix}`;
const NS = 'default';
const SLB = `bgpa-${suffix}`;
const VIP = '198.18.81.5';
const EIP = '198.18.81.6';
const create = (type: typeof JuneauResources.bgpPeers, kind: string, name: string, spec: object, namespace?: string) =>
  rest.create(type, { apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });

// The image's starting configuration, with a router id: BIRD's own network namespace has no IPv4
// address to take one from.
const STARTING = renderBirdConfig({ routerId: '192.0.2.131', peers: [], prefixes: [] });
const events: string[] = [];
const recorder = {
  normal: (_r: unknown, reason: string) => void events.push(reason),
  warning: (_r: unknown, reason: string) => void events.push(reason),
};

let dir: string;
let bird: ChildProcess | undefined;
let sync: BgpSync;

function startBird(): void {
  bird = spawn(
    'unshare',
    [
      '-n',
      '/usr/sbin/bird',
      '-f',
      '-c',
      path.join(dir, 'bird.conf'),
      '-s',
      path.join(dir, 'bird.ctl'),
      '-P',
      path.join(dir, 'bird.pid'),
    ],
    { stdio: 'ignore' },
  );
}
async function stopBird(): Promise<void> {
  const b = bird;
  if (!b || b.exitCode !== null) return;
  await new Promise((r) => {
    b.once('exit', r);
    b.kill('SIGTERM');
  });
}
const routes = async () => (await birdCommand(path.join(dir, 'bird.ctl'), 'show route')).map((l) => l.text).join('\n');
const nodeState = () => rest.get<KubeObject & BGPNodeState>(JuneauResources.bgpNodeStates, undefined, NODE);
const setAdvertising = (nodes: string[]) =>
  applyStatus(
    rest,
    JuneauResources.serviceLoadBalancers,
    { namespace: NS, name: SLB },
    { vip: VIP, advertisingNodes: nodes },
    'juneau-controller',
  );

/** The agent's loop on this file's node and BIRD, with short intervals. */
const loop = (more: Partial<BgpSyncOptions> = {}) =>
  new BgpSync({
    client: rest,
    nodeName: NODE,
    routerId: '192.0.2.131',
    socketPath: path.join(dir, 'bird.ctl'),
    configFile: path.join(dir, 'bird.conf'),
    secretNamespace: NS,
    recorder,
    logger: silentLogger,
    pollIntervalMs: 300,
    minWriteIntervalMs: 300,
    ...more,
  });

beforeAll(async () => {
  dir = tempDir('bgp-agent-');
  fs.writeFileSync(path.join(dir, 'bird.conf'), STARTING);
  startBird();
  await ensureNode(NODE, { internalIP: '192.0.2.131', labels: { rack: 'a' } });
  await create(JuneauResources.addressPools, 'AddressPool', POOL, {
    advertiseMode: 'bgp',
    addresses: ['198.18.81.0/29'],
  });
  await create(JuneauResources.externalNetworks, 'ExternalNetwork', NET, { type: 'bgp', addressPools: [POOL] });
  await create(JuneauResources.bgpPeers, 'BGPPeer', PEER, { peerAddress: '192.0.2.254', peerASN: 65001, myASN: 65000 });
  await create(JuneauResources.bgpAdvertisements, 'BGPAdvertisement', ADV, {
    externalNetworks: [NET],
    communities: ['65000:7'],
  });
  await create(JuneauResources.serviceLoadBalancers, 'ServiceLoadBalancer', SLB, { externalNetwork: NET }, NS);
  await setAdvertising([NODE]);
  sync = loop();
  void sync.start();
});

afterAll(async () => {
  await sync?.stop();
  await stopBird();
  await deleteIgnoringNotFound(rest, JuneauResources.serviceLoadBalancers, NS, SLB);
  await deleteIgnoringNotFound(rest, JuneauResources.bgpNodeStates, undefined, NODE);
  for (const [type, name] of [
    [JuneauResources.bgpAdvertisements, ADV],
    [JuneauResources.bgpPeers, PEER],
    [JuneauResources.externalNetworks, NET],
    [JuneauResources.addressPools, POOL],
  ] as const)
    await deleteIgnoringNotFound(rest, type, undefined, name);
  await deleteNodes([NODE]);
});

describe('agent BGP loop on a real BIRD', () => {
  test('BGP-3, BGP-7: a VIP whose advertisingNodes list the node is in BIRD, and the BGPNodeState reports the peer not Established with nothing announced', async () => {
    const started = Date.now();
    await waitFor(async () => (await routes()).includes(`${VIP}/32`), { what: 'the VIP in BIRD', timeoutMs: 20_000 });
    console.log(`BGP-3: VIP in BIRD ${Date.now() - started} ms after the loop started`);
    expect(fs.readFileSync(path.join(dir, 'bird.conf'), 'utf8')).toContain('bgp_community.add((65000,7))');
    const state = await waitForMatch(nodeState, (s) => s.status?.peers?.[0]?.peer === PEER, 'the node state');
    expect(state.spec.nodeName).toBe(NODE);
    expect(state.status?.peers?.[0].state).not.toBe('Established');
    expect(state.status?.announced).toEqual({ count: 0, addresses: [] });
  });

  test('BGP-5: the node leaving advertisingNodes withdraws the VIP from BIRD', async () => {
    const started = Date.now();
    await setAdvertising(['someone-else']);
    await waitFor(async () => !(await routes()).includes(VIP), { what: 'the VIP withdrawn', timeoutMs: 20_000 });
    console.log(`BGP-5: VIP withdrawn from BIRD ${Date.now() - started} ms after advertisingNodes changed`);
    await setAdvertising([NODE]);
    await waitFor(async () => (await routes()).includes(`${VIP}/32`), { what: 'the VIP back', timeoutMs: 20_000 });
  });

  test('BGP-6: a restarted BIRD that started from an older file is configured again', async () => {
    const applies = sync.applies;
    await stopBird();
    fs.writeFileSync(path.join(dir, 'bird.conf'), STARTING);
    startBird();
    const started = Date.now();
    await waitFor(
      async () => {
        try {
          return (await routes()).includes(`${VIP}/32`);
        } catch {
          return false;
        }
      },
      { what: 'the VIP after the restart', timeoutMs: 30_000 },
    );
    console.log(`BGP-6: BIRD configured again ${Date.now() - started} ms after its restart`);
    expect(sync.applies).toBeGreaterThan(applies);
  });

  test('BGP-7: a configuration that cannot be applied (a password BIRD cannot quote) leaves the running one, with a Warning Event', async () => {
    const secret = `bgpa-pw-${suffix}`;
    const peer2 = `bgpa-tor2-${suffix}`;
    await rest.create(Resources.secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secret, namespace: NS },
      stringData: { password: 'bad"pw' },
    } as KubeObject);
    try {
      await create(JuneauResources.bgpPeers, 'BGPPeer', peer2, {
        peerAddress: '192.0.2.253',
        peerASN: 65001,
        myASN: 65000,
        passwordSecretRef: { name: secret },
      });
      await waitFor(async () => events.includes('BGPConfigRefused'), { what: 'the refusal Event', timeoutMs: 20_000 });
      const text = await routes();
      expect(text).toContain(`${VIP}/32`);
      expect(fs.readFileSync(path.join(dir, 'bird.conf'), 'utf8')).not.toContain(peer2);
    } finally {
      await deleteIgnoringNotFound(rest, JuneauResources.bgpPeers, undefined, peer2);
      await deleteIgnoringNotFound(rest, Resources.secrets, NS, secret);
    }
  });

  // The NAT process's report is the loop's input here, set by the test as the NAT child would send
  // it (the child itself, with real NAT maps, is the box's: test/box/bgp.test.ts).
  test('BGP-4, BGP-6: a restarted loop applies nothing until the NAT process reports what it serves (BIRD keeps the VIP); the ElasticIPs reported on the bgp network are announced, and withdrawn when the report drops them', async () => {
    await sync.stop();
    const lines: string[] = [];
    const listeners: Array<() => void> = [];
    const nat: { served: ServedAddress[] | undefined; onServedChange: (l: () => void) => void } = {
      served: undefined,
      onServedChange: (l) => void listeners.push(l),
    };
    const report = (served: ServedAddress[]) => {
      nat.served = served;
      for (const l of listeners) l();
    };
    sync = loop({
      logger: createLogger({ component: 'test-bgp', sink: (l) => void lines.push(l) }),
      servedAddresses: nat,
    });
    const fileBefore = fs.readFileSync(path.join(dir, 'bird.conf'), 'utf8');
    void sync.start();
    await waitFor(async () => lines.some((l) => l.includes('waiting for the NAT process')), {
      what: 'a pass that waits for the NAT process',
      timeoutMs: 20_000,
    });
    await sync.settled();
    expect(sync.applies).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'bird.conf'), 'utf8')).toBe(fileBefore);
    expect(await routes()).toContain(`${VIP}/32`);

    const started = Date.now();
    report([
      { address: EIP, externalNetwork: NET, owner: 'ElasticIP default/db' },
      { address: '192.0.2.77', externalNetwork: 'an-arp-network', owner: 'ElasticIP default/lan' },
    ]);
    await waitFor(async () => (await routes()).includes(`${EIP}/32`), {
      what: 'the ElasticIP in BIRD',
      timeoutMs: 20_000,
    });
    console.log(`BGP-4: ElasticIP in BIRD ${Date.now() - started} ms after the NAT process reported it`);
    const text = await routes();
    expect(text).toContain(`${VIP}/32`);
    expect(text).not.toContain('192.0.2.77');
    report([]);
    await waitFor(async () => !(await routes()).includes(EIP), { what: 'the ElasticIP withdrawn', timeoutMs: 20_000 });
    expect(await routes()).toContain(`${VIP}/32`);
  });
});
