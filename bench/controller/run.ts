/**
 * How long the controller takes to bring N LoadBalancer Services with ready endpoints to `Ready`,
 * against the floor: a tight client loop doing the same writes on the same API server with no
 * reconcile logic. Both run on one throwaway control plane, in one run, measured the same way
 * (a watch on the namespace's ServiceLoadBalancers sees the last one turn Ready).
 *
 *   npx tsx bench/controller/run.ts [services=1000] [rounds=1]
 *
 * Needs the control-plane binaries (`npm run cluster:build`) and the CRDs (`npx cdk8s synth`).
 * See bench/README.md.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { LOAD_BALANCER_CLASS } from '../../api';
import { JuneauController } from '../../runtime/controller/controller';
import { advertisementName } from '../../runtime/controller/arp/names';
import { EventRecorder } from '../../runtime/kube/events';
import { JuneauResources, Resources, resourcePath } from '../../runtime/kube/resources';
import { deleteIgnoringNotFound, getOrUndefined, RestClient, type RequestOptions } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { startCluster, type Cluster } from '../../test/cluster/harness';
import { CRD_MANIFEST } from '../../test/cluster/paths';
import { createArpNetwork } from '../../test/cluster/arp-network';
import { ignoreNotFound } from '../../test/cluster/fixture';
import { sleep } from '../../test/sleep';
import {
  backendGroups,
  createBackends,
  createNodes,
  loadBalancerService,
  serviceFloorWrites,
  waitForReadyEndpoints,
} from '../lb-rig';
import { forEachConcurrent, ipv4, log, seconds } from '../scale/common';

const SERVICES = Number(process.argv[2] ?? 1000);
const ROUNDS = Number(process.argv[3] ?? 1);
/** The controller's default `--workers`; the floor runs as many loops side by side. */
const WORKERS = 4;
const REPORTER = 'juneau.loutres.me/controller';

const nodes = [1, 2, 3, 4, 5, 6].map((i) => `bench-n${i}`);
const groups = backendGroups(nodes);

/** Counts the writes (everything but GET) a client makes, by verb and resource. */
class CountingRestClient extends RestClient {
  readonly writes = new Map<string, number>();
  override async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    if (method !== 'GET') {
      const resource = path
        .replace(/^\/apis?\/(?:[^/]+\/)?v[0-9a-z]+\//, '')
        .replace(/namespaces\/[^/]+\//, '')
        .split('/');
      const key = `${method} ${resource[0]}${resource.length > 2 ? `/${resource[2]}` : ''}`;
      this.writes.set(key, (this.writes.get(key) ?? 0) + 1);
    }
    return super.request<T>(method, path, options);
  }
  total(): number {
    return [...this.writes.values()].reduce((a, b) => a + b, 0);
  }
  summary(): string {
    return [...this.writes.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
  }
}

async function createNamespace(rest: RestClient, name: string): Promise<void> {
  await rest.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

/** N Services (externalTrafficPolicy Local) and waits until each has an EndpointSlice with a ready endpoint. */
async function createServices(
  rest: RestClient,
  namespace: string,
  network: string,
  loadBalancerClass: string,
): Promise<void> {
  const side = { namespace, network, loadBalancerClass, groups: groups.length };
  await forEachConcurrent(SERVICES, 16, async (i) => {
    await rest.create(Resources.services, loadBalancerService(side, i));
  });
  await waitForReadyEndpoints(rest, namespace, SERVICES, 500);
}

/** Resolves with the time at which a watch on the namespace's ServiceLoadBalancers has seen all N Ready. */
async function watchAllReady(
  rest: RestClient,
  namespace: string,
): Promise<{ done: Promise<number>; abort: () => void }> {
  const list = await rest.list(JuneauResources.serviceLoadBalancers, { namespace });
  const ready = new Set<string>();
  let resolve!: (t: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  const handle = await rest.watch<KubeObject & { status?: { phase?: string } }>(
    resourcePath(JuneauResources.serviceLoadBalancers, namespace),
    { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: false },
    (e) => {
      const name = e.object.metadata?.name ?? '';
      if (e.type !== 'DELETED' && e.object.status?.phase === 'Ready') ready.add(name);
      else ready.delete(name);
      if (ready.size === SERVICES) resolve(Date.now());
    },
  );
  void handle.done.then((err) => err && log(`watch ended: ${String(err)}`));
  return { done, abort: handle.abort };
}

/** The controller, in-process (what `juneau-controller` runs once it leads), with its Event recorder. */
async function runController(
  admin: RestClient,
  cluster: Cluster,
  namespace: string,
): Promise<{ ms: number; writes: CountingRestClient }> {
  const rest = new CountingRestClient(cluster.kubeConfig);
  const recorder = new EventRecorder(rest, { reportingController: REPORTER, reportingInstance: 'bench' });
  const controller = new JuneauController({ rest, recorder, workers: WORKERS });
  const watch = await watchAllReady(admin, namespace);
  const t0 = Date.now();
  await controller.start();
  const t1 = await watch.done;
  watch.abort();
  await controller.stop();
  await recorder.stop();
  return { ms: t1 - t0, writes: rest };
}

/**
 * The floor: per Service, the writes the controller makes on its first pass, with nothing decided:
 * the ServiceLoadBalancer (server-side apply, owner reference and finalizer), the AllocationClaim,
 * the ARPAdvertisement, the status (server-side apply), the Service's status.loadBalancer, and
 * one Event. The VIP is the i-th address and the node the group's first: no index, no cache.
 */
async function runFloor(
  admin: RestClient,
  cluster: Cluster,
  namespace: string,
  pool: string,
  network: string,
  base: string,
): Promise<{ ms: number; writes: CountingRestClient }> {
  const rest = new CountingRestClient(cluster.kubeConfig);
  const services = (await admin.list(Resources.services, { namespace })).items;
  const uidOf = new Map(services.map((s) => [s.metadata?.name ?? '', s.metadata?.uid ?? '']));
  const watch = await watchAllReady(admin, namespace);
  const t0 = Date.now();
  await forEachConcurrent(SERVICES, WORKERS, (i) =>
    serviceFloorWrites(rest, {
      namespace,
      name: `s${i}`,
      uid: uidOf.get(`s${i}`) ?? '',
      vip: ipv4(base, i + 1),
      pool,
      network,
      members: groups[i % groups.length],
    }),
  );
  const t1 = await watch.done;
  watch.abort();
  return { ms: t1 - t0, writes: rest };
}

/**
 * Removes what a timed run wrote (untimed), so the next one never meets it: ARPAdvertisements,
 * ServiceLoadBalancers (finalizer dropped; no controller runs now), claims, and the Services'
 * status.loadBalancer, so a repeated floor writes a real change again.
 */
async function cleanRun(admin: RestClient, namespace: string, pool: string): Promise<void> {
  await forEachConcurrent(SERVICES, 16, async (i) => {
    const name = `s${i}`;
    await deleteIgnoringNotFound(
      admin,
      JuneauResources.arpAdvertisements,
      undefined,
      advertisementName({ kind: 'ServiceLoadBalancer', namespace, name }),
    );
    await admin
      .patch(JuneauResources.serviceLoadBalancers, namespace, name, 'merge', { metadata: { finalizers: null } })
      .catch(ignoreNotFound);
    await deleteIgnoringNotFound(admin, JuneauResources.serviceLoadBalancers, namespace, name);
    await admin
      .patch(
        Resources.services,
        namespace,
        name,
        'merge',
        { status: { loadBalancer: { ingress: null } } },
        { subresource: 'status' },
      )
      .catch(ignoreNotFound);
  });
  const claims = (
    await admin.list<KubeObject & { spec: { pool: { name: string } } }>(JuneauResources.allocationClaims)
  ).items.filter((c) => c.spec.pool.name === pool);
  await forEachConcurrent(
    claims.length,
    16,
    async (i) =>
      void (await deleteIgnoringNotFound(
        admin,
        JuneauResources.allocationClaims,
        undefined,
        claims[i].metadata?.name ?? '',
      )),
  );
}

/** Deletes a namespace (Pods first, grace 0: no kubelet) and waits until it is gone. */
async function deleteNamespace(admin: RestClient, namespace: string): Promise<void> {
  const pods = (await admin.list(Resources.pods, { namespace })).items;
  for (const p of pods)
    await deleteIgnoringNotFound(admin, Resources.pods, namespace, p.metadata?.name ?? '', {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds: 0,
    });
  await deleteIgnoringNotFound(admin, Resources.namespaces, undefined, namespace);
  while (await getOrUndefined(admin, Resources.namespaces, undefined, namespace)) await sleep(500);
}

/** The middle value; the mean of the two middle ones for an even count. */
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main(): Promise<void> {
  if (!fs.existsSync(CRD_MANIFEST)) throw new Error(`${CRD_MANIFEST} is missing: run \`npx cdk8s synth\` first`);
  log(
    `bench/controller: ${SERVICES} Services, ${ROUNDS} round(s), ${WORKERS} workers; ${os.cpus().length} CPUs, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const cluster = await startCluster({ crdFiles: [CRD_MANIFEST], log: (l) => log(`  ${l}`) });
  const stop = () => void cluster.stop().then(() => process.exit(130));
  process.once('SIGINT', stop);
  try {
    const admin = new RestClient(cluster.kubeConfig);
    await createNodes(admin, nodes);
    const rounds: Array<{ controller: number; floors: [number, number]; ratio: number }> = [];
    let controllerWrites: CountingRestClient | undefined;
    let floorWrites: CountingRestClient | undefined;
    for (let round = 1; round <= ROUNDS; round++) {
      // Both namespaces and their endpoints exist before anything is timed. The floor's Services
      // have a class the controller ignores, and each timed run's objects are removed before the
      // next one starts, so the controller never meets the floor's and vice versa. The floor runs
      // before and after the controller (floor, controller, floor): drift on a shared machine
      // hits both sides alike, and the ratio is against the mean of the two floors.
      const ctlNs = `bench-ctl-${round}`;
      const floorNs = `bench-floor-${round}`;
      const ctlPool = `ctl-${round}`;
      const floorPool = `floor-${round}`;
      // A /21 (2,048 addresses) per pool and round, from 198.18.0.0/15.
      const ctlCidr = `198.18.${(round - 1) * 16}.0/21`;
      const floorBase = `198.18.${(round - 1) * 16 + 8}.0`;
      await createArpNetwork(admin, { pool: ctlPool, network: ctlPool, addresses: [ctlCidr] });
      await createArpNetwork(admin, { pool: floorPool, network: floorPool, addresses: [`${floorBase}/21`] });
      const setup0 = Date.now();
      for (const [ns, net] of [
        [ctlNs, 1],
        [floorNs, 2],
      ] as const) {
        await createNamespace(admin, ns);
        await createBackends(admin, ns, groups, 100 + round * 2 + net);
      }
      await createServices(admin, floorNs, floorPool, 'bench.juneau.invalid/floor');
      await createServices(admin, ctlNs, ctlPool, LOAD_BALANCER_CLASS);
      log(
        `round ${round}: ${2 * SERVICES} Services with ready EndpointSlices in ${seconds(Date.now() - setup0)} (untimed)`,
      );

      const floorA = await runFloor(admin, cluster, floorNs, floorPool, floorPool, floorBase);
      log(
        `round ${round}: floor      ${seconds(floorA.ms)}  (${floorA.writes.total()} writes: ${floorA.writes.summary()})`,
      );
      await cleanRun(admin, floorNs, floorPool);
      await sleep(2_000);
      const controller = await runController(admin, cluster, ctlNs);
      log(
        `round ${round}: controller ${seconds(controller.ms)}  (${controller.writes.total()} writes: ${controller.writes.summary()})`,
      );
      await cleanRun(admin, ctlNs, ctlPool);
      await sleep(2_000);
      const floorB = await runFloor(admin, cluster, floorNs, floorPool, floorPool, floorBase);
      log(`round ${round}: floor      ${seconds(floorB.ms)}  (again, after the controller)`);
      await cleanRun(admin, floorNs, floorPool);
      await Promise.all([deleteNamespace(admin, ctlNs), deleteNamespace(admin, floorNs)]);
      const ratio = controller.ms / ((floorA.ms + floorB.ms) / 2);
      log(`round ${round}: controller / floor = ${ratio.toFixed(2)}x`);
      rounds.push({ controller: controller.ms, floors: [floorA.ms, floorB.ms], ratio });
      controllerWrites = controller.writes;
      floorWrites = floorA.writes;
    }
    const c = median(rounds.map((r) => r.controller));
    const f = median(rounds.flatMap((r) => r.floors));
    const ratio = median(rounds.map((r) => r.ratio));
    log('');
    log(`| ${SERVICES} Services -> all Ready (median) | time | writes/Service |`);
    log('|---|---:|---:|');
    log(
      `| floor: tight client loop, ${WORKERS} in flight | ${seconds(f)} | ${((floorWrites?.total() ?? 0) / SERVICES).toFixed(2)} |`,
    );
    log(
      `| controller: JuneauController, ${WORKERS} workers | ${seconds(c)} | ${((controllerWrites?.total() ?? 0) / SERVICES).toFixed(2)} |`,
    );
    log('');
    log(
      `controller / floor = ${ratio.toFixed(2)}x (median of the rounds' ratios: ${rounds.map((r) => r.ratio.toFixed(2)).join(', ')})`,
    );
  } finally {
    await cluster.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench/controller: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
