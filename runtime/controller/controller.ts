/**
 * The controller process minus flags: informer caches, the allocation index fed by them, one
 * work queue per reconciler, and the event handlers that map a change to the keys it affects.
 * `start()` waits for every cache before the first reconcile, so a pass never mistakes "not
 * loaded yet" for "gone" (which would release VIPs).
 */
import { SUBNET_VNI_POOL, type AllocationClaim } from '../../api';
import { FieldManagers } from '../kube/apply';
import type { EventRecorder } from '../kube/events';
import { waitForCacheSync } from '../kube/informer';
import { Lifecycle } from '../kube/lifecycle';
import type { Logger } from '../kube/log';
import type { RuntimeMetrics } from '../kube/metrics';
import { isAlreadyExists, type RestClient } from '../kube/rest';
import { objectKey, type KubeObject } from '../kube/types';
import { requeueAfter, runQueue, TerminalError, WorkQueue, type ReconcileResult } from '../kube/workqueue';
import { DuplicateDetector } from './arp/duplicate-detector';
import type { AllocatorIndex } from './allocator/allocator-index';
import { claimRecordOf, defaultSubnetVniPool, SUBNET_VNI_REF } from './allocator/claims';
import type { SharedInformers } from '../kube/shared-informers';
import { allCaches, createControllerContext, type Caches, type ControllerContext } from './context';
import { reconcileAddressPool } from './network/reconcile-address-pool';
import { controllerHolderKinds, sweepOrphanClaims } from './allocator/claim-sweep';
import { elasticIPHolderKind } from './eip/claim-sweep';
import { reconcileExternalNetwork } from './network/reconcile-external-network';
import { reconcileServiceLoadBalancer } from './slb/reconcile';
import { ownerKeysOf } from './arp/names';
import { asKube, JuneauResources } from './resources';
import { SERVICE_NAME_LABEL } from './slb/views';
import { ElasticIPControllers } from './eip/register';

export interface ControllerOptions {
  readonly rest: RestClient;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  readonly metrics?: RuntimeMetrics;
  /** Concurrent ServiceLoadBalancer passes (different keys). @default 4 */
  readonly workers?: number;
  /** How often orphaned claims are swept (ALLOC-2). @default 60_000 */
  readonly sweepIntervalMs?: number;
  /** A claim younger than this is never swept. @default 30_000 */
  readonly sweepGraceMs?: number;
  /** FO-3: added to an agent Lease's duration before its node counts as dead. @default 0 */
  readonly agentLeaseGraceMs?: number;
  /** The process's informers, shared with the webhooks' caches (main.ts). @default a new set over `rest` */
  readonly informers?: SharedInformers;
}

/**
 * Periodic passes about no single object, as keys of the housekeeping queue: each pass returns
 * `requeueAfter` its period (a failure retries with backoff), so two never overlap and stop()
 * ends them with the other queues.
 */
const HOUSEKEEPING = {
  /** ALLOC-2: claims whose holder is gone (allocator/claim-sweep.ts). */
  claimSweep: 'claim-sweep',
  /** Proposed values whose claim was never seen (AllocatorIndex.expireTentative). */
  tentativeClaims: 'tentative-claims',
} as const;
/** A tentative value older than this is given back; checked every TENTATIVE_CHECK_MS. */
const TENTATIVE_MAX_AGE_MS = 60_000;
const TENTATIVE_CHECK_MS = 30_000;

export class JuneauController {
  readonly caches: Caches;
  readonly index: AllocatorIndex;
  readonly queues: {
    readonly serviceLoadBalancers: WorkQueue;
    readonly externalNetworks: WorkQueue;
    readonly addressPools: WorkQueue;
    /** HOUSEKEEPING's periodic passes. */
    readonly housekeeping: WorkQueue;
  };
  private readonly ctx: ControllerContext;
  /** ElasticIPs, ElasticIPAttachments, NetworkInterfaces and Pods (EIP, EIPA, NIC) on the same context. */
  readonly elasticIPs: ElasticIPControllers;
  /** ARP-4 made visible: every ARPAdvertisement (not only ours) checked for a shared address. */
  readonly duplicates: DuplicateDetector;
  private readonly logger: Logger;
  /** Stop at any moment: before start, during it, twice (kube/lifecycle.ts). */
  private readonly lifecycle = new Lifecycle();

  constructor(private readonly options: ControllerOptions) {
    const { rest } = options;
    this.ctx = createControllerContext(options);
    this.caches = this.ctx.caches;
    this.index = this.ctx.index;
    this.logger = this.ctx.logger;
    this.queues = {
      serviceLoadBalancers: this.queue('serviceloadbalancer'),
      externalNetworks: this.queue('externalnetwork'),
      addressPools: this.queue('addresspool'),
      // A failing sweep is retried from 1 s, never later than its period.
      housekeeping: new WorkQueue({ baseDelayMs: 1_000, maxDelayMs: options.sweepIntervalMs ?? 60_000 }),
    };
    this.elasticIPs = new ElasticIPControllers(this.ctx, { workers: options.workers, metrics: options.metrics });
    this.duplicates = new DuplicateDetector({
      rest,
      informer: this.caches.arpAdvertisements,
      recorder: options.recorder,
      metrics: options.metrics,
      logger: this.logger,
    });
    this.mapEventsToKeys();
  }

  /**
   * FO-3: starts watching the agent Leases now, before (and whether or not) this replica leads. A
   * Lease is judged by when this process saw its renewTime change, so a tracker started only at
   * takeover counts every Lease as just renewed and finds a node that died with the old leader one
   * whole lease duration after the takeover (leader Lease + agent Lease: the 33 s crash failover
   * of bench/peers). A standby that has watched all along knows how long each Lease has been still.
   * Read-only, so safe on a standby (a leader's fenced client lets it through until leadership is lost).
   */
  observeAgentLeases(): void {
    if (!this.lifecycle.stopped) this.caches.agentLeases.start();
  }

  /** Starts the caches, waits for them, makes sure subnet-vni exists, then runs the reconcilers. */
  start(): Promise<void> {
    return this.lifecycle.start(() => this.startSteps());
  }

  private async startSteps(): Promise<void> {
    allCaches(this.caches).forEach((c) => c.start());
    // No timeout: a start that cannot sync (API unreachable, client fenced) waits until stopped.
    if (!(await this.lifecycle.unlessStopped(waitForCacheSync(allCaches(this.caches), Infinity)))) return;
    await this.ensureSubnetVniPool();
    if (this.lifecycle.stopped) return;
    const run = { logger: this.logger, metrics: this.options.metrics };
    runQueue(
      this.queues.serviceLoadBalancers,
      'serviceloadbalancer',
      async (k) => reconcileServiceLoadBalancer(this.ctx, k),
      this.options.workers ?? 4,
      run,
    );
    runQueue(
      this.queues.externalNetworks,
      'externalnetwork',
      async (k) => reconcileExternalNetwork(this.ctx, k),
      1,
      run,
    );
    runQueue(this.queues.addressPools, 'addresspool', async (k) => reconcileAddressPool(this.ctx, k), 1, run);
    for (const s of this.caches.services.list()) this.queues.serviceLoadBalancers.add(objectKey(s));
    for (const s of this.caches.serviceLoadBalancers.list()) this.queues.serviceLoadBalancers.add(objectKey(s));
    for (const n of this.caches.externalNetworks.list()) this.queues.externalNetworks.add(objectKey(n));
    for (const p of this.caches.addressPools.list()) this.queues.addressPools.add(objectKey(p));
    runQueue(this.queues.housekeeping, 'housekeeping', async (k) => this.housekeep(k), 1, run);
    Object.values(HOUSEKEEPING).forEach((k) => this.queues.housekeeping.add(k));
    // Each part gives up its own wait when stopped; stop() stops them after this start returns.
    if (!(await this.lifecycle.unlessStopped(this.elasticIPs.start()))) return;
    await this.lifecycle.unlessStopped(this.duplicates.start());
  }

  /**
   * Stops the reconcilers (letting passes in flight finish) and the caches. `dropQueued`: keys not
   * yet taken are dropped instead of drained (leadership lost: they are the new leader's now).
   */
  stop(options: { dropQueued?: boolean } = {}): Promise<void> {
    return this.lifecycle.stop(async () => {
      this.ctx.agentLiveness.stop();
      await this.duplicates.stop();
      await this.elasticIPs.stop(options);
      await Promise.all(Object.values(this.queues).map((q) => q.shutdown({ drop: options.dropQueued })));
      await Promise.all(allCaches(this.caches).map((c) => c.stop()));
    });
  }

  /** True once every cache has listed (for /readyz). */
  get hasSynced(): boolean {
    return allCaches(this.caches).every((c) => c.hasSynced) && this.elasticIPs.hasSynced && this.duplicates.hasSynced;
  }

  /** One HOUSEKEEPING pass; it comes back after its period. */
  private async housekeep(key: string): Promise<ReconcileResult> {
    switch (key) {
      case HOUSEKEEPING.tentativeClaims:
        this.index.expireTentative(TENTATIVE_MAX_AGE_MS);
        return requeueAfter(TENTATIVE_CHECK_MS);
      case HOUSEKEEPING.claimSweep: {
        const kinds = { ...controllerHolderKinds(this.ctx), ElasticIP: elasticIPHolderKind(this.elasticIPs.caches) };
        await sweepOrphanClaims(this.ctx, this.options.sweepGraceMs ?? 30_000, Date.now(), kinds);
        return requeueAfter(this.options.sweepIntervalMs ?? 60_000);
      }
      default:
        throw new TerminalError(`unknown housekeeping key '${key}'`);
    }
  }

  private queue(name: string): WorkQueue {
    return new WorkQueue({ onDepthChange: this.options.metrics?.queueDepthHook(name) });
  }

  /** EN-7: creates subnet-vni with the documented default range when absent; never changes one. */
  private async ensureSubnetVniPool(): Promise<void> {
    if (this.caches.allocationPools.get(undefined, SUBNET_VNI_POOL)) return;
    try {
      await this.options.rest.create(JuneauResources.allocationPools, asKube(defaultSubnetVniPool()), {
        fieldManager: FieldManagers.controller,
      });
      this.logger.info('created AllocationPool subnet-vni with the default range', { ...defaultSubnetVniPool().spec });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** Which keys a change affects (level-triggered: both states of an update, see Informer.onChange). */
  private mapEventsToKeys(): void {
    const c = this.caches;
    const q = this.queues;
    const slbsOfNetwork = (network: string) =>
      c.serviceLoadBalancers
        .list()
        .filter((s) => s.spec.externalNetwork === network)
        .forEach((s) => q.serviceLoadBalancers.add(objectKey(s)));
    c.services.onChange((s) => q.serviceLoadBalancers.add(objectKey(s)));
    // FO-3: a node's agent died or came back: every ServiceLoadBalancer chooses again (rare; a
    // pass that changes nothing writes nothing).
    this.ctx.agentLiveness.onLivenessChange(() =>
      c.serviceLoadBalancers.list().forEach((s) => q.serviceLoadBalancers.add(objectKey(s))),
    );
    c.serviceLoadBalancers.onChange((s) => q.serviceLoadBalancers.add(objectKey(s)));
    c.endpointSlices.onChange((s) => {
      const service = s.metadata?.labels?.[SERVICE_NAME_LABEL];
      if (service) q.serviceLoadBalancers.add(`${s.metadata?.namespace}/${service}`);
    });
    // Its owner, and (NAME-1) whoever's name it stands on, who may be waiting for it to go.
    c.arpAdvertisements.onChange((ad) =>
      ownerKeysOf(ad, 'ServiceLoadBalancer').forEach((k) => q.serviceLoadBalancers.add(k)),
    );
    c.externalNetworks.onChange((n) => {
      q.externalNetworks.add(objectKey(n));
      n.spec.addressPools.forEach((p) => q.addressPools.add(p));
      slbsOfNetwork(objectKey(n));
    });
    c.addressPools.onChange((p) => {
      q.addressPools.add(objectKey(p));
      c.externalNetworks
        .list()
        .filter((n) => n.spec.addressPools.includes(objectKey(p)))
        .forEach((n) => {
          q.externalNetworks.add(objectKey(n));
          slbsOfNetwork(objectKey(n));
        });
    });
    c.allocationPools.onChange((p) => {
      if (objectKey(p) === SUBNET_VNI_REF.name)
        c.externalNetworks
          .list()
          .filter((n) => !n.status?.networkID)
          .forEach((n) => q.externalNetworks.add(objectKey(n)));
    });
    const claimChanged = (claim: AllocationClaim & KubeObject, deleted: boolean) => {
      const record = claimRecordOf(claim);
      if (!record) return;
      // Pool status is batched: a burst of claims is one status write a second.
      if (record.pool.kind === 'AddressPool') q.addressPools.addAfter(record.pool.name, 1000);
      const h = record.holder;
      if (h.kind === 'ServiceLoadBalancer') q.serviceLoadBalancers.add(`${h.namespace}/${h.name}`);
      // A released address may be what a Pending ServiceLoadBalancer waits for (NoFreeAddress, RequestedIPInUse).
      if (deleted && record.pool.kind === 'AddressPool')
        c.serviceLoadBalancers
          .list()
          .filter((s) => s.status?.phase === 'Pending')
          .forEach((s) => q.serviceLoadBalancers.add(objectKey(s)));
      if (h.kind === 'ExternalNetwork') q.externalNetworks.add(h.name);
    };
    c.allocationClaims.addHandlers({
      onAdd: (o) => claimChanged(o, false),
      onUpdate: (_old, o) => claimChanged(o, false),
      onDelete: (o) => claimChanged(o, true),
    });
  }
}
