/**
 * Wiring of the ElasticIP feature into a controller process: this feature's caches, one work
 * queue per reconciler (ElasticIP, ElasticIPAttachment status, NetworkInterface status, Pod →
 * NetworkInterfaces), and the handlers that map a change to the keys it affects. It shares the
 * ControllerContext (REST client, allocator and its index, ExternalNetwork / AddressPool /
 * AllocationClaim / ARPAdvertisement caches, events) with the rest of the controller; the caller
 * starts those caches. `start()` waits for every cache it reads before the first pass, so "not
 * loaded yet" is never mistaken for "gone".
 */
import type { AllocationClaim } from '../../../api';
import { objectKey, type KubeObject } from '../../kube/types';
import type { RuntimeMetrics } from '../../kube/metrics';
import { waitForCacheSync, type Informer } from '../../kube/informer';
import { Lifecycle } from '../../kube/lifecycle';
import { runQueue, WorkQueue } from '../../kube/workqueue';
import { claimRecordOf } from '../allocator/claims';
import type { Caches, ControllerContext } from '../context';
import { ownerKeysOf } from '../arp/names';
import { reconcilePod } from '../pods/reconcile-pod';
import { allInformers, createEipCaches, INDEX, type EipCaches, type ElasticIPObject } from './caches';
import { reconcileElasticIPAttachment, reconcileNetworkInterface } from './reconcile-dependents';
import { reconcileElasticIP, type EipContext } from './reconcile-elastic-ip';

export interface ElasticIPControllerOptions {
  /** Concurrent ElasticIP passes (different keys). @default 4 */
  readonly workers?: number;
  readonly metrics?: RuntimeMetrics;
}

/** The shared caches this feature reads: the caller starts them (the controller starts all of its own). */
export const sharedCachesRead = (shared: Caches): Array<Informer<KubeObject>> =>
  [shared.externalNetworks, shared.addressPools, shared.allocationClaims, shared.arpAdvertisements] as unknown as Array<
    Informer<KubeObject>
  >;

/** Built once per process, next to the other reconcilers, on the shared context. */
export class ElasticIPControllers {
  readonly caches: EipCaches;
  readonly queues: {
    readonly elasticIPs: WorkQueue;
    readonly attachments: WorkQueue;
    readonly networkInterfaces: WorkQueue;
    readonly pods: WorkQueue;
  };
  private readonly ctx: EipContext;
  /** Stop at any moment: before start, during it, twice (kube/lifecycle.ts). */
  private readonly lifecycle = new Lifecycle();

  constructor(
    private readonly base: ControllerContext,
    private readonly options: ElasticIPControllerOptions = {},
  ) {
    this.caches = createEipCaches(base.informers);
    this.ctx = { base, caches: this.caches };
    const queue = (name: string) => new WorkQueue({ onDepthChange: options.metrics?.queueDepthHook(name) });
    this.queues = {
      elasticIPs: queue('elasticip'),
      attachments: queue('elasticipattachment'),
      networkInterfaces: queue('networkinterface'),
      pods: queue('pod'),
    };
    mapEventsToKeys(this.ctx, this.queues);
  }

  /** True once this feature's caches have listed (for /readyz). */
  get hasSynced(): boolean {
    return allInformers(this.caches).every((i) => i.hasSynced);
  }

  /** Starts this feature's caches, waits for them and the shared ones, then runs the reconcilers. */
  start(): Promise<void> {
    return this.lifecycle.start(() => this.startSteps());
  }

  /** Stops the reconcilers (passes in flight finish; queued keys drained, or dropped with `dropQueued`) and this feature's caches. */
  stop(options: { dropQueued?: boolean } = {}): Promise<void> {
    return this.lifecycle.stop(async () => {
      await Promise.all(Object.values(this.queues).map((q) => q.shutdown({ drop: options.dropQueued })));
      await Promise.all(allInformers(this.caches).map((i) => i.stop()));
    });
  }

  private async startSteps(): Promise<void> {
    const { caches, queues, ctx } = this;
    allInformers(caches).forEach((i) => i.start());
    // No timeout, as the controller: a start that cannot sync waits until stopped.
    const all = [...allInformers(caches), ...sharedCachesRead(this.base.caches)];
    if (!(await this.lifecycle.unlessStopped(waitForCacheSync(all, Infinity)))) return;
    const run = { logger: this.base.logger, metrics: this.options.metrics };
    runQueue(queues.elasticIPs, 'elasticip', async (k) => reconcileElasticIP(ctx, k), this.options.workers ?? 4, run);
    runQueue(queues.attachments, 'elasticipattachment', async (k) => reconcileElasticIPAttachment(ctx, k), 2, run);
    runQueue(queues.networkInterfaces, 'networkinterface', async (k) => reconcileNetworkInterface(ctx, k), 2, run);
    runQueue(queues.pods, 'pod', async (k) => reconcilePod(ctx, k), 2, run);
    caches.elasticIPs.list().forEach((o) => queues.elasticIPs.add(objectKey(o)));
    caches.attachments.list().forEach((o) => queues.attachments.add(objectKey(o)));
    caches.nics.list().forEach((o) => queues.networkInterfaces.add(objectKey(o)));
    caches.pods.list().forEach((o) => queues.pods.add(objectKey(o)));
    // ALLOC-2: claims of ElasticIPs that are gone get a pass too (released unless a NIC still names them).
    for (const claim of this.base.caches.allocationClaims.list()) {
      const h = claimRecordOf(claim)?.holder;
      if (h?.kind === 'ElasticIP' && h.namespace) queues.elasticIPs.add(`${h.namespace}/${h.name}`);
    }
  }
}

type Queues = ElasticIPControllers['queues'];

/** Which keys a change affects. */
function mapEventsToKeys(ctx: EipContext, q: Queues): void {
  const { caches } = ctx;
  const shared = ctx.base.caches;
  const keyOf = (namespace: string | undefined, name: string | undefined) =>
    namespace && name ? `${namespace}/${name}` : undefined;
  const add = (queue: WorkQueue, key: string | undefined) => key && queue.add(key);
  /** Everything that reads the ElasticIP `<ns>/<name>`: itself, its users, Pods waiting for it (EN-8). */
  const elasticIPChanged = (key: string | undefined) => {
    if (!key) return;
    q.elasticIPs.add(key);
    caches.nics.byIndex(INDEX.byElasticIP, key).forEach((n) => q.networkInterfaces.add(objectKey(n)));
    caches.attachments.byIndex(INDEX.byElasticIP, key).forEach((a) => q.attachments.add(objectKey(a)));
    caches.pods.byIndex(INDEX.byElasticIP, key).forEach((p) => q.pods.add(objectKey(p)));
  };
  const eipsOfNetwork = (network: string): ElasticIPObject[] =>
    caches.elasticIPs.list().filter((e) => e.spec.externalNetwork === network);
  caches.elasticIPs.onChange((e) => elasticIPChanged(objectKey(e)));
  caches.attachments.onChange((a) => {
    q.attachments.add(objectKey(a));
    elasticIPChanged(keyOf(a.metadata.namespace, a.spec.elasticIP));
  });
  caches.nics.onChange((n) => {
    q.networkInterfaces.add(objectKey(n));
    elasticIPChanged(keyOf(n.metadata.namespace, n.spec.elasticIP));
    caches.attachments.byIndex(INDEX.byNetworkInterface, objectKey(n)).forEach((a) => q.attachments.add(objectKey(a)));
    add(q.pods, keyOf(n.metadata.namespace, n.spec.podName));
  });
  caches.pods.onChange((p) => {
    q.pods.add(objectKey(p));
    // A terminating Pod's NICs count as being deleted (EIP-11 rule 2).
    caches.nics
      .byIndex(INDEX.byPod, objectKey(p))
      .forEach((n) => elasticIPChanged(keyOf(n.metadata.namespace, n.spec.elasticIP)));
  });
  shared.externalNetworks.onChange((n) =>
    eipsOfNetwork(n.metadata.name ?? '').forEach((e) => elasticIPChanged(objectKey(e))),
  );
  shared.addressPools.onChange((p) => {
    const pool = p.metadata.name ?? '';
    shared.externalNetworks
      .list()
      .filter((n) => n.spec.addressPools.includes(pool))
      .forEach((n) => eipsOfNetwork(n.metadata.name ?? '').forEach((e) => q.elasticIPs.add(objectKey(e))));
  });
  const claimChanged = (claim: AllocationClaim & KubeObject, deleted: boolean) => {
    const record = claimRecordOf(claim);
    if (record?.holder.kind === 'ElasticIP') add(q.elasticIPs, keyOf(record.holder.namespace, record.holder.name));
    // A released address may be what a Pending ElasticIP waits for (NoFreeAddress, RequestedIPInUse).
    if (deleted && record?.pool.kind === 'AddressPool')
      caches.elasticIPs
        .list()
        .filter((e) => e.status?.phase === 'Pending')
        .forEach((e) => q.elasticIPs.add(objectKey(e)));
  };
  shared.allocationClaims.addHandlers({
    onAdd: (c) => claimChanged(c, false),
    onUpdate: (_old, c) => claimChanged(c, false),
    onDelete: (c) => claimChanged(c, true),
  });
  // Its owner, and (NAME-1) whoever's name it stands on, who may be waiting for it to go.
  shared.arpAdvertisements.onChange((ad) => ownerKeysOf(ad, 'ElasticIP').forEach((k) => add(q.elasticIPs, k)));
}
