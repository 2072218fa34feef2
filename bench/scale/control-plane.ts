/**
 * The control-plane half of bench/scale: N LoadBalancer Services with ready endpoints and N
 * ElasticIPs, brought to Ready/Available first by the floor (a client loop doing the controller's
 * writes, nothing decided), then by two juneau-controller processes (the bundled binary, leader
 * election on) with the leader SIGKILLed halfway.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { API_VERSION, FINALIZERS, LOAD_BALANCER_CLASS } from '../../api';

import { applyStatus, FieldManagers } from '../../runtime/kube/apply';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { getOrUndefined, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { type Cluster } from '../../test/cluster/harness';
import { REPO_ROOT } from '../../test/cluster/paths';
import { createArpNetwork } from '../../test/cluster/arp-network';
import { waitFor } from '../../test/cluster/fixture';
import { duplicates, fail, forEachConcurrent, ipv4, log, seconds, trackPeak, watchCount } from './common';
import { sleep } from '../../test/sleep';
import {
  backendGroups,
  createBackends,
  createNodes,
  floorEvent,
  loadBalancerService,
  serviceFloorWrites,
  waitForReadyEndpoints,
} from '../lb-rig';

const FIELD_MANAGER = FieldManagers.controller;
/** The controller's default `--workers`; the floor keeps as many writes in flight per kind. */
const WORKERS = 4;
const CONTROLLER_BIN = path.join(REPO_ROOT, 'build', 'bin', 'juneau-controller.js');
const LEASE = 'juneau-bench-scale';

export const nodes = [1, 2, 3, 4, 5, 6].map((i) => `scale-n${i}`);
const groups = backendGroups(nodes);

/** One side of the run: its namespace, and the pools and networks its Services and ElasticIPs draw from. */
export interface Side {
  readonly namespace: string;
  readonly slbNetwork: string;
  readonly slbBase: string;
  readonly eipNetwork: string;
  readonly eipBase: string;
  readonly loadBalancerClass: string;
}
/** Each pool a /16: 10,000 of each fit, and the floor's never overlap the controller's. */
export const sides: Record<'floor' | 'controller', Side> = {
  floor: {
    namespace: 'scale-floor',
    slbNetwork: 'floor-slb',
    slbBase: '10.65.0.0',
    eipNetwork: 'floor-eip',
    eipBase: '10.67.0.0',
    loadBalancerClass: 'bench.juneau.invalid/floor',
  },
  controller: {
    namespace: 'scale-ctl',
    slbNetwork: 'ctl-slb',
    slbBase: '10.64.0.0',
    eipNetwork: 'ctl-eip',
    eipBase: '10.66.0.0',
    loadBalancerClass: LOAD_BALANCER_CLASS,
  },
};

const slbReady = (o: KubeObject & { status?: { phase?: string } }) => o.status?.phase === 'Ready';
const eipAvailable = (o: KubeObject & { status?: { phase?: string; address?: string } }) =>
  o.status?.phase === 'Available' && !!o.status.address;

/** Nodes (no kubelet: their status is written here), pools and networks, namespaces and 9 ready Pods each. */
export async function setupSides(rest: RestClient): Promise<void> {
  await createNodes(rest, nodes);
  for (const [s, side] of Object.values(sides).entries()) {
    await createArpNetwork(rest, {
      pool: side.slbNetwork,
      network: side.slbNetwork,
      addresses: [`${side.slbBase}/16`],
    });
    await createArpNetwork(rest, {
      pool: side.eipNetwork,
      network: side.eipNetwork,
      addresses: [`${side.eipBase}/16`],
    });
    await rest.create(Resources.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: side.namespace },
    });
    await createBackends(rest, side.namespace, groups, 200 + s);
  }
}

/** N Services (ETP Local) and N ElasticIPs in the side's namespace; waits until every Service has a ready EndpointSlice. */
export async function createObjects(rest: RestClient, side: Side, count: number): Promise<void> {
  const services = {
    namespace: side.namespace,
    network: side.slbNetwork,
    loadBalancerClass: side.loadBalancerClass,
    groups: groups.length,
  };
  await forEachConcurrent(count, 32, async (i) => {
    await rest.create(Resources.services, loadBalancerService(services, i));
    await rest.create(JuneauResources.elasticIPs, {
      apiVersion: API_VERSION,
      kind: 'ElasticIP',
      metadata: { namespace: side.namespace, name: `e${i}` },
      spec: { externalNetwork: side.eipNetwork },
    } as KubeObject);
  });
  await waitForReadyEndpoints(rest, side.namespace, count, 1_000);
}

/** Watches a side until all N ServiceLoadBalancers are Ready and all N ElasticIPs Available. */
export async function watchSide(rest: RestClient, side: Side, count: number) {
  const slbs = await watchCount(rest, JuneauResources.serviceLoadBalancers, side.namespace, count, slbReady);
  const eips = await watchCount(rest, JuneauResources.elasticIPs, side.namespace, count, eipAvailable);
  return {
    all: Promise.all([slbs.all, eips.all]).then(([a, b]) => Math.max(a, b)),
    ready: () => slbs.size() + eips.size(),
    abort: () => (slbs.abort(), eips.abort()),
  };
}

/**
 * The floor: per Service the controller's first-pass writes (ServiceLoadBalancer apply with owner
 * and finalizer, AllocationClaim, ARPAdvertisement, status apply, Service status, one Event) and
 * per ElasticIP its writes (finalizer, AllocationClaim, status apply, one Event), the address the
 * i-th of the pool and the node the group's first: nothing read, nothing decided. WORKERS in
 * flight for each kind, both kinds at once, as the controller's two queues run.
 */
export async function runFloor(admin: RestClient, cluster: Cluster, count: number): Promise<number> {
  const side = sides.floor;
  const { namespace } = side;
  const rest = new RestClient(cluster.kubeConfig);
  const uidOf = new Map(
    (await admin.list(Resources.services, { namespace })).items.map((s) => [
      s.metadata?.name ?? '',
      s.metadata?.uid ?? '',
    ]),
  );
  const eipUid = new Map(
    (await admin.list(JuneauResources.elasticIPs, { namespace })).items.map((s) => [
      s.metadata?.name ?? '',
      s.metadata?.uid ?? '',
    ]),
  );
  const watch = await watchSide(admin, side, count);
  const t0 = Date.now();
  const services = forEachConcurrent(count, WORKERS, (i) =>
    serviceFloorWrites(rest, {
      namespace,
      name: `s${i}`,
      uid: uidOf.get(`s${i}`) ?? '',
      vip: ipv4(side.slbBase, i + 1),
      pool: side.slbNetwork,
      network: side.slbNetwork,
      members: groups[i % groups.length],
    }),
  );
  const eips = forEachConcurrent(count, WORKERS, async (i) => {
    const name = `e${i}`;
    const address = ipv4(side.eipBase, i + 1);
    const eip = await rest.patch<KubeObject>(
      JuneauResources.elasticIPs,
      namespace,
      name,
      'merge',
      { metadata: { finalizers: [FINALIZERS.elasticIP] } },
      { fieldManager: FIELD_MANAGER },
    );
    const holder = { apiVersion: API_VERSION, kind: 'ElasticIP', namespace, name, uid: eipUid.get(name) };
    await rest.create(
      JuneauResources.allocationClaims,
      {
        apiVersion: API_VERSION,
        kind: 'AllocationClaim',
        metadata: { name: `ipv4.${address}` },
        spec: { pool: { kind: 'AddressPool', name: side.eipNetwork }, value: address, holder },
      } as KubeObject,
      { fieldManager: FIELD_MANAGER },
    );
    const now = new Date().toISOString();
    const status = {
      phase: 'Available',
      address,
      addressPool: side.eipNetwork,
      observedGeneration: eip.metadata?.generation ?? 1,
      conditions: [
        {
          type: 'Allocated',
          status: 'True',
          reason: 'AddressAllocated',
          message: `${address} from AddressPool ${side.eipNetwork}`,
          observedGeneration: 1,
          lastTransitionTime: now,
        },
        {
          type: 'Attached',
          status: 'False',
          reason: 'NotAttached',
          message: 'no ElasticIPAttachment names this ElasticIP',
          observedGeneration: 1,
          lastTransitionTime: now,
        },
      ],
    };
    await applyStatus(rest, JuneauResources.elasticIPs, { namespace, name }, status, FIELD_MANAGER);
    await floorEvent(
      rest,
      { kind: 'ElasticIP', namespace, name, uid: eip.metadata?.uid },
      `phase Available: ${address}`,
    );
  });
  await Promise.all([services, eips]);
  const t1 = await watch.all;
  watch.abort();
  return t1 - t0;
}

export interface Replica {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  readonly peak: ReturnType<typeof trackPeak>;
}

/** --profile: CPU profiles and heap snapshots; --heap: heap snapshots only (the CPU profiler's
 * samples would count in the RSS being measured). */
export interface ProfileOptions {
  readonly dir: string;
  readonly cpu: boolean;
}

function startReplica(cluster: Cluster, name: string, logDir: string, profile: ProfileOptions | undefined): Replica {
  const fd = fs.openSync(path.join(logDir, `${name}.log`), 'a');
  const env: NodeJS.ProcessEnv = { ...process.env, POD_NAME: name };
  // Outside a cluster the binary serves no webhooks: admission is measured on its own below.
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.POD_NAMESPACE;
  const cpuFlags = profile?.cpu
    ? ['--cpu-prof', `--cpu-prof-dir=${profile.dir}`, `--cpu-prof-name=controller-${name}.cpuprofile`]
    : [];
  const nodeFlags = profile ? [...cpuFlags, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${profile.dir}`] : [];
  const args = [
    ...nodeFlags,
    CONTROLLER_BIN,
    '--kubeconfig',
    cluster.kubeconfigPath,
    '--leader-elect=true',
    '--leader-election-namespace',
    'default',
    '--leader-election-id',
    LEASE,
    '--metrics-addr=0',
    '--health-addr=0',
    '--log-level=info',
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', fd, fd], env });
  fs.closeSync(fd);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { name, child, exited, peak: trackPeak(child.pid!) };
}

/** Signals, then SIGKILL after `graceMs` (long when profiling: a heap snapshot of a 400 MB heap takes a while, and the CPU profile is written at exit). */
async function stopReplica(r: Replica, signal: NodeJS.Signals, graceMs = 20_000): Promise<void> {
  if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill(signal);
  const timer = setTimeout(() => r.child.kill('SIGKILL'), graceMs);
  await r.exited;
  clearTimeout(timer);
  r.peak.stop();
}

export interface ControllerRun {
  readonly ms: number;
  readonly killedAtMs: number;
  readonly takeoverMs: number;
  readonly peakKiB: Record<string, number>;
  readonly adDuplicates: string[];
}

/**
 * Two replicas started at t0 on the existing Services and ElasticIPs; the leader is SIGKILLed when
 * half of the 2N objects are Ready; the run ends when all are. A watch on ARPAdvertisements records
 * any moment two of them name one address (ARP-4) over the whole run.
 */
export async function runControllers(
  admin: RestClient,
  cluster: Cluster,
  count: number,
  logDir: string,
  profile: ProfileOptions | undefined,
  timeoutMs: number,
): Promise<ControllerRun> {
  const side = sides.controller;
  const watch = await watchSide(admin, side, count);
  const byAddress = new Map<string, Set<string>>();
  const adDuplicates = new Set<string>();
  const ads = await admin.list<KubeObject & { spec: { address: string } }>(JuneauResources.arpAdvertisements);
  const adWatch = await admin.watch<KubeObject & { spec: { address: string } }>(
    '/apis/juneau.loutres.me/v1alpha1/arpadvertisements',
    { resourceVersion: ads.metadata?.resourceVersion },
    (e) => {
      const names = byAddress.get(e.object.spec.address) ?? new Set<string>();
      if (e.type === 'DELETED') names.delete(e.object.metadata?.name ?? '');
      else names.add(e.object.metadata?.name ?? '');
      byAddress.set(e.object.spec.address, names);
      if (names.size > 1) adDuplicates.add(`${e.object.spec.address}: ${[...names].join(', ')}`);
    },
  );
  const leaseHolder = async () =>
    (
      await getOrUndefined<KubeObject & { spec?: { holderIdentity?: string } }>(
        admin,
        Resources.leases,
        'default',
        LEASE,
      )
    )?.spec?.holderIdentity || undefined;
  const t0 = Date.now();
  const replicas = [
    startReplica(cluster, 'scale-a', logDir, profile),
    startReplica(cluster, 'scale-b', logDir, profile),
  ];
  const deadline = t0 + timeoutMs;
  // A replica that loses its Lease exits by design (a CPU-starved one misses its renew deadline);
  // with none left nothing becomes Ready, so the run fails then instead of at its timeout.
  const noneLeft = () =>
    replicas.every((r) => r.child.exitCode !== null || r.child.signalCode !== null) &&
    `every controller replica exited (their logs: ${logDir})`;
  const allExited = Promise.all(replicas.map((r) => r.exited)).then((): typeof ALL_EXITED => ALL_EXITED);
  try {
    const wait = (what: string, intervalMs: number) => ({
      what,
      intervalMs,
      timeoutMs: Math.max(0, deadline - Date.now()),
      giveUp: noneLeft,
    });
    const holder = await waitFor(leaseHolder, wait('a leader', 250));
    const leader = replicas.find((r) => holder.startsWith(`${r.name}_`))!;
    await waitFor(() => watch.ready() >= count, wait(`${count} of ${2 * count} objects Ready`, 100));
    await stopReplica(leader, 'SIGKILL');
    const killedAt = Date.now();
    log(`  leader ${leader.name} SIGKILLed at ${seconds(killedAt - t0)} with ${watch.ready()} of ${2 * count} Ready`);
    const next = await waitFor(
      async () => ((await leaseHolder()) !== holder ? leaseHolder() : undefined),
      wait('the standby to take the Lease', 250),
    );
    const takeoverMs = Date.now() - killedAt;
    log(`  standby leading (${next}) after ${seconds(takeoverMs)}`);
    let timer: NodeJS.Timeout | undefined;
    const t1 = await Promise.race([
      watch.all,
      allExited,
      new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.max(0, deadline - Date.now())))),
    ]).finally(() => clearTimeout(timer));
    if (t1 === ALL_EXITED) throw new Error(`${noneLeft()} with ${watch.ready()} of ${2 * count} Ready`);
    if (t1 === undefined)
      fail(
        `${2 * count - watch.ready()} of ${2 * count} objects never became Ready/Available within ${seconds(timeoutMs)}`,
      );
    const peakKiB = Object.fromEntries(replicas.map((r) => [r.name, r.peak.peak()]));
    return {
      ms: (t1 ?? Date.now()) - t0,
      killedAtMs: killedAt - t0,
      takeoverMs,
      peakKiB,
      adDuplicates: [...adDuplicates],
    };
  } finally {
    watch.abort();
    adWatch.abort();
    for (const r of replicas) if (profile && r.child.exitCode === null) r.child.kill('SIGUSR2');
    if (profile) await sleep(5_000); // the heap snapshot is written synchronously on the signal
    await Promise.all(replicas.map((r) => stopReplica(r, 'SIGTERM', profile ? 180_000 : 20_000)));
  }
}

const ALL_EXITED = Symbol('every replica exited');

/** After the run: every VIP and address distinct, one claim each, one ARPAdvertisement per address (cluster-wide). */
export async function checkAddresses(admin: RestClient, count: number): Promise<string[]> {
  const { namespace } = sides.controller;
  const slbs = (
    await admin.list<KubeObject & { status?: { phase?: string; vip?: string } }>(JuneauResources.serviceLoadBalancers, {
      namespace,
    })
  ).items;
  const eips = (
    await admin.list<KubeObject & { status?: { phase?: string; address?: string } }>(JuneauResources.elasticIPs, {
      namespace,
    })
  ).items;
  const claims = (await admin.list<KubeObject & { spec: { value: string } }>(JuneauResources.allocationClaims)).items;
  const ads = (await admin.list<KubeObject & { spec: { address: string } }>(JuneauResources.arpAdvertisements)).items;
  const addresses = [...slbs.map((s) => s.status?.vip ?? ''), ...eips.map((e) => e.status?.address ?? '')];
  const notReady =
    slbs.filter((s) => !slbReady(s)).length +
    eips.filter((e) => !eipAvailable(e)).length +
    (2 * count - slbs.length - eips.length);
  if (notReady > 0) fail(`${notReady} ServiceLoadBalancers/ElasticIPs not Ready/Available at the end`);
  const dup = duplicates(addresses.filter(Boolean));
  if (dup.length)
    fail(`addresses held twice: ${dup.slice(0, 10).join(', ')}${dup.length > 10 ? ` (+${dup.length - 10})` : ''}`);
  const dupClaims = duplicates(claims.map((c) => c.spec.value));
  if (dupClaims.length) fail(`AllocationClaims with one value twice: ${dupClaims.slice(0, 10).join(', ')}`);
  const dupAds = duplicates(ads.map((a) => a.spec.address));
  if (dupAds.length) fail(`ARPAdvertisements for one address twice: ${dupAds.slice(0, 10).join(', ')}`);
  log(
    `  checked: ${slbs.length} ServiceLoadBalancers, ${eips.length} ElasticIPs, ${claims.length} claims, ${ads.length} ARPAdvertisements; ${dup.length + dupClaims.length + dupAds.length} duplicates`,
  );
  return addresses;
}
