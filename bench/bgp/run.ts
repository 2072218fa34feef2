/**
 * bench/bgp: one node's BGP loop (runtime/agent/bgp/sync.ts) at N addresses, against BIRD fed
 * the same configuration directly, side by side in one run (bench/README.md, "bench/bgp").
 *
 * Rig: a throwaway real control plane (test/cluster/harness.ts) with N ServiceLoadBalancers on a
 * bgp network whose status lists the node; the netns rig (test/netns/rig.ts) with one node
 * namespace running BIRD 2 (test/netns/bgp-rig.ts) and the router namespace running FRR, peering
 * eBGP and installing every route into its kernel. The agent's loop runs in this process (its
 * API client and BIRD's control socket are all it touches).
 *
 * Variants, each round in turn (the order alternating):
 *   - `juneau` cold: a new loop starts (lists the N objects, decides, renders, applies): time until
 *     the router's FIB holds all N routes;
 *   - `floor` cold: the text that loop applied, given to BIRD directly: the same until.
 * Between them BIRD is reset to no prefix and the FIB waited empty. Then, with N announced and the
 * loop running, `--samples` single changes of each, interleaved: one address's status stops (then
 * starts again) listing the node -> its route gone from (back in) the router's FIB; floor: the
 * same text without (with) that prefix applied directly. Also BIRD's RSS at N and the size of the
 * node's BGPNodeState.
 *
 *   sudo npx tsx bench/bgp/run.ts [--count 10000] [--rounds 3] [--samples 40]
 *
 * Needs root, `npx cdk8s synth` (the CRDs), bird2 and frr (scripts/install-system-deps.sh).
 * Exits 1 when an address never reaches the router; timings are printed, never judged.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { API_VERSION } from '../../api';
import { renderBirdConfig } from '../../runtime/agent/bgp/bird-config';
import { applyBirdConfig } from '../../runtime/agent/bgp/birdc';
import { BgpSync } from '../../runtime/agent/bgp/sync';
import { applyStatus, FieldManagers } from '../../runtime/kube/apply';
import { silentLogger } from '../../runtime/kube/log';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { getOrUndefined, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { startCluster } from '../../test/cluster/harness';
import { CRD_MANIFEST } from '../../test/cluster/paths';
import { BirdNode, FrrRouter } from '../../test/netns/bgp-rig';
import { inNs } from '../../test/netns/ns-tools';
import { CLIENT_IP, Rig } from '../../test/netns/rig';
import { forEachConcurrent, ipv4, log, memoryOf, percentile, seconds, waitUntil, loadAverage } from '../scale/common';

const { values: flags } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '3' },
    samples: { type: 'string', default: '40' },
  },
});
const COUNT = Number(flags.count);
const ROUNDS = Number(flags.rounds);
const SAMPLES = Number(flags.samples);
const ROUTER_ASN = 64513;
const NODE_ASN = 64512;
const NS = 'bench-bgp';
const NET = 'bench-bgp';
const PEER = 'router';
/** N addresses, contiguous (as a pool hands them out): 10.128.0.0/16 holds 65,536. */
const BASE = '10.128.0.0';
const load = loadAverage;

/** Routes FRR installed in the router's kernel. */
async function fibCount(rig: Rig): Promise<number> {
  const out = await inNs(rig.client, 'ip', '-4', 'route', 'show', 'proto', 'bgp');
  return out ? out.trimEnd().split('\n').length : 0;
}
const hasRoute = async (rig: Rig, address: string) =>
  (await inNs(rig.client, 'ip', '-4', 'route', 'show', `${address}/32`)).includes('via');

/** ms from `t0` until `probe` holds (polled every `everyMs`). */
async function until(what: string, t0: number, probe: () => Promise<boolean>, everyMs = 100): Promise<number> {
  await waitUntil(what, 600_000, async () => ((await probe()) ? true : undefined), everyMs);
  return performance.now() - t0;
}

async function setupObjects(admin: RestClient, node: string): Promise<void> {
  const create = (type: typeof JuneauResources.bgpPeers, body: object) =>
    admin.create(type, { apiVersion: API_VERSION, ...body } as KubeObject);
  await admin.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await admin.create(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: node } });
  await create(JuneauResources.addressPools, {
    kind: 'AddressPool',
    metadata: { name: NET },
    spec: { advertiseMode: 'bgp', addresses: [`${BASE}/16`] },
  });
  await create(JuneauResources.externalNetworks, {
    kind: 'ExternalNetwork',
    metadata: { name: NET },
    spec: { type: 'bgp', addressPools: [NET] },
  });
  await create(JuneauResources.bgpPeers, {
    kind: 'BGPPeer',
    metadata: { name: PEER },
    spec: { peerAddress: CLIENT_IP, peerASN: ROUTER_ASN, myASN: NODE_ASN },
  });
  await create(JuneauResources.bgpAdvertisements, {
    kind: 'BGPAdvertisement',
    metadata: { name: NET },
    spec: { externalNetworks: [NET], peers: [PEER] },
  });
}

const slbName = (i: number) => `vip-${i}`;
const setAdvertising = (admin: RestClient, i: number, nodes: string[]) =>
  applyStatus(
    admin,
    JuneauResources.serviceLoadBalancers,
    { namespace: NS, name: slbName(i) },
    { vip: ipv4(BASE, i), advertisingNodes: nodes },
    FieldManagers.controller,
  );

function frrConfig(nodeIp: string): string {
  return `frr defaults datacenter
hostname router
router bgp ${ROUTER_ASN}
 bgp router-id ${CLIENT_IP}
 no bgp ebgp-requires-policy
 neighbor ${nodeIp} remote-as ${NODE_ASN}
 address-family ipv4 unicast
  maximum-paths 8
 exit-address-family
exit
`;
}

async function main(): Promise<void> {
  if (!fs.existsSync(CRD_MANIFEST)) throw new Error(`${CRD_MANIFEST} is missing: run \`npx cdk8s synth\` first`);
  log(`bench/bgp: ${COUNT} addresses, ${ROUNDS} rounds, ${SAMPLES} samples; ${os.cpus().length} CPUs, load ${load()}`);
  const cluster = await startCluster({ crdFiles: [CRD_MANIFEST], timeoutMs: 180_000 });
  const rig = new Rig(1);
  const router = new FrrRouter(rig.client, `jb${rig.id}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-bench-bgp-'));
  const bird = new BirdNode(rig.node(0), dir);
  const node = 'bgp-bench-n1';
  const lines: string[] = [];
  let sync: BgpSync | undefined;
  try {
    const admin = new RestClient(cluster.kubeConfig, { requestTimeoutMs: 120_000 });
    await rig.setup();
    await router.start(frrConfig(rig.nodeIp(0)));
    // The floor's texts: what the loop renders for these objects (checked against the text it applies).
    const textOf = (skip?: number) =>
      renderBirdConfig({
        routerId: rig.nodeIp(0),
        peers: [{ name: PEER, address: CLIENT_IP, peerASN: ROUTER_ASN, myASN: NODE_ASN }],
        prefixes: Array.from({ length: COUNT }, (_, i) => i)
          .filter((i) => i !== skip)
          .map((i) => ({ prefix: `${ipv4(BASE, i)}/32`, peers: [PEER] })),
      });
    const empty = renderBirdConfig({
      routerId: rig.nodeIp(0),
      peers: [{ name: PEER, address: CLIENT_IP, peerASN: ROUTER_ASN, myASN: NODE_ASN }],
      prefixes: [],
    });
    const full = textOf();
    fs.writeFileSync(bird.file, empty);
    await bird.start();
    await setupObjects(admin, node);
    let t = performance.now();
    await forEachConcurrent(COUNT, 8, async (i) => {
      await admin.create(JuneauResources.serviceLoadBalancers, {
        apiVersion: API_VERSION,
        kind: 'ServiceLoadBalancer',
        metadata: { name: slbName(i), namespace: NS },
        spec: { externalNetwork: NET },
      } as KubeObject);
      await setAdvertising(admin, i, [node]);
    });
    log(
      `setup: ${COUNT} ServiceLoadBalancers with a VIP listing the node in ${seconds(performance.now() - t)} (untimed)`,
    );
    const newSync = () =>
      new BgpSync({
        client: admin,
        nodeName: node,
        routerId: rig.nodeIp(0),
        socketPath: bird.socket,
        configFile: bird.file,
        secretNamespace: NS,
        recorder: { normal: () => undefined, warning: () => undefined },
        logger: silentLogger,
      });
    const reset = async () => {
      const r = await applyBirdConfig(bird.socket, bird.file, empty);
      if (!r.ok) throw new Error(`BIRD refused the empty configuration: ${r.error}`);
      await until('the router FIB empty', performance.now(), async () => (await fibCount(rig)) === 0);
    };
    const cold: Record<'juneau' | 'floor', number[]> = { juneau: [], floor: [] };
    const coldApplied: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order: Array<'juneau' | 'floor'> = round % 2 === 0 ? ['juneau', 'floor'] : ['floor', 'juneau'];
      for (const variant of order) {
        await reset();
        t = performance.now();
        if (variant === 'juneau') {
          sync = newSync();
          void sync.start();
        } else {
          const r = await applyBirdConfig(bird.socket, bird.file, full);
          if (!r.ok) throw new Error(`BIRD refused the loop's own text: ${r.error}`);
        }
        // The loop's own part: until BIRD accepted its text (informers listed, decided, rendered, applied).
        const appliedMs =
          variant === 'juneau' ? await until('the loop applied', t, async () => sync!.applies > 0, 20) : undefined;
        const ms = await until(
          `${COUNT} routes in the router FIB (${variant})`,
          t,
          async () => (await fibCount(rig)) === COUNT,
          200,
        );
        cold[variant].push(ms);
        if (appliedMs !== undefined) coldApplied.push(appliedMs);
        const configured = appliedMs !== undefined ? ` (BIRD configured by the loop after ${seconds(appliedMs)})` : '';
        log(
          `round ${round + 1} ${variant}: ${COUNT} routes in the router FIB after ${seconds(ms)}${configured}; load ${load()}`,
        );
        if (variant === 'juneau') {
          if (fs.readFileSync(bird.file, 'utf8') !== full)
            throw new Error(
              `the loop applied another text than the floor's (compare ${bird.file} with renderBirdConfig)`,
            );
          await sync!.stop();
          sync = undefined;
        }
      }
    }
    // Steady state: the loop running with N announced, then single changes of each variant, interleaved.
    await reset();
    sync = newSync();
    void sync.start();
    await until(`${COUNT} routes (steady state)`, performance.now(), async () => (await fibCount(rig)) === COUNT, 200);
    const birdPid = Number((await inNs(rig.node(0), 'pgrep', '-x', 'bird')).trim().split('\n')[0]);
    const birdMem = memoryOf(birdPid);
    const change: Record<string, number[]> = {
      'juneau withdraw': [],
      'juneau announce': [],
      'floor withdraw': [],
      'floor announce': [],
      'API write': [],
    };
    for (let s = 0; s < SAMPLES; s++) {
      const i = (s * 997) % COUNT;
      const address = ipv4(BASE, i);
      const without = textOf(i);
      // juneau: the status write, then the loop's pass, BIRD, FRR, the router's kernel.
      t = performance.now();
      await setAdvertising(admin, i, []);
      change['API write'].push(performance.now() - t);
      change['juneau withdraw'].push(
        await until(`${address} withdrawn (juneau)`, t, async () => !(await hasRoute(rig, address)), 5),
      );
      t = performance.now();
      await setAdvertising(admin, i, [node]);
      change['juneau announce'].push(await until(`${address} back (juneau)`, t, () => hasRoute(rig, address), 5));
      await sync.settled();
      // floor: the same change as text given to BIRD directly (the loop's text is unchanged meanwhile).
      t = performance.now();
      const w = await applyBirdConfig(bird.socket, bird.file, without);
      if (!w.ok) throw new Error(`BIRD refused the text without ${address}: ${w.error}`);
      change['floor withdraw'].push(
        await until(`${address} withdrawn (floor)`, t, async () => !(await hasRoute(rig, address)), 5),
      );
      t = performance.now();
      const a = await applyBirdConfig(bird.socket, bird.file, full);
      if (!a.ok) throw new Error(`BIRD refused the full text: ${a.error}`);
      change['floor announce'].push(await until(`${address} back (floor)`, t, () => hasRoute(rig, address), 5));
    }
    const state = await getOrUndefined<
      KubeObject & { status?: { announced?: { count?: number; addresses?: string[] } } }
    >(admin, JuneauResources.bgpNodeStates, undefined, node);
    const median = (v: number[]) => percentile(v, 50);
    lines.push(
      `bench/bgp: ${COUNT} addresses on one node, ${ROUNDS} rounds, ${SAMPLES} samples; load at the end ${load()}`,
      '',
      '| cold start: all N routes in the router FIB | per round | median |',
      '|---|---|---:|',
      ...(['juneau', 'floor'] as const).map(
        (v) => `| ${v} | ${cold[v].map((ms) => seconds(ms)).join(', ')} | ${seconds(median(cold[v]))} |`,
      ),
      `| ... of which juneau until BIRD configured (list, decide, render, apply) | ${coldApplied.map((ms) => seconds(ms)).join(', ')} | ${seconds(median(coldApplied))} |`,
      `| **juneau / floor** | ${cold.juneau.map((ms, r) => (cold.floor[r] ? (ms / cold.floor[r]).toFixed(2) : '-')).join(', ')} | **${(median(cold.juneau) / median(cold.floor)).toFixed(2)}x** |`,
      '',
      '| one change at N (ms) | p50 | p99 |',
      '|---|---:|---:|',
      ...Object.entries(change).map(
        ([k, v]) => `| ${k} | ${percentile(v, 50).toFixed(0)} | ${percentile(v, 99).toFixed(0)} |`,
      ),
      `| **juneau / floor, withdraw p50** | **${(percentile(change['juneau withdraw'], 50) / percentile(change['floor withdraw'], 50)).toFixed(2)}x** | |`,
      `| **juneau / floor, announce p50** | **${(percentile(change['juneau announce'], 50) / percentile(change['floor announce'], 50)).toFixed(2)}x** | |`,
      '',
      `BIRD at N: RSS ${((birdMem?.rss ?? 0) / 1024).toFixed(1)} MiB (peak ${((birdMem?.hwm ?? 0) / 1024).toFixed(1)} MiB); configuration text ${(Buffer.byteLength(full) / 1024).toFixed(0)} KiB.`,
      `BGPNodeState at N: ${Buffer.byteLength(JSON.stringify(state))} bytes, announced.count ${state?.status?.announced?.count}, ${state?.status?.announced?.addresses?.length} range item(s) (the addresses are contiguous, as a pool hands them out).`,
    );
  } finally {
    await sync?.stop();
    bird.stop();
    await router.stop();
    await rig.destroy();
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    for (const line of lines) log(line);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`bench/bgp failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
