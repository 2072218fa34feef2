/**
 * The controller process minus flags: informer caches, the allocation index fed by them, and the
 * reconcilers as a list of registrations (./reconciler.ts), each with its queue and the changes
 * that map to its keys. `start()` waits for every cache before the first reconcile, so a pass
 * never mistakes "not loaded yet" for "gone" (which would release VIPs).
 */
import { SUBNET_VNI_POOL } from '../../api';
import { FieldManagers } from '../kube/apply';
import type { EventRecorder } from '../kube/events';
import { waitForCacheSync } from '../kube/informer';
import { Lifecycle } from '../kube/lifecycle';
import type { Logger } from '../kube/log';
import type { RuntimeMetrics } from '../kube/metrics';
import { isAlreadyExists, type RestClient } from '../kube/rest';
import type { SharedInformers } from '../kube/shared-informers';
import { requeueAfter, TerminalError, type ReconcileResult } from '../kube/workqueue';
import type { AllocatorIndex } from './allocator/allocator-index';
import { controllerHolderKinds, sweepOrphanClaims } from './allocator/claim-sweep';
import { defaultSubnetVniPool } from './allocator/claims';
import { DuplicateDetector } from './arp/duplicate-detector';
import {
  allCaches,
  createControllerContext,
  type Caches,
  type ControllerContext,
  type ControllerContextOptions,
} from './context';
import { elasticIPHolderKind } from './eip/claim-sweep';
import { elasticIPAttachmentReconciler, networkInterfaceReconciler } from './eip/reconcile-dependents';
import { elasticIPReconciler } from './eip/reconcile-elastic-ip';
import { addressPoolReconciler } from './network/reconcile-address-pool';
import { natGatewayReconciler } from './ngw/reconcile';
import { externalNetworkReconciler } from './network/reconcile-external-network';
import { podReconciler } from './pods/reconcile-pod';
import { Registration, type ReconcilerSpec } from './reconciler';
import { JuneauResources } from '../kube/resources';
import { serviceLoadBalancerReconciler } from './slb/reconcile';
import { registerStateMetrics } from './state-metrics';
import { bgpPeerReconciler } from './bgp/reconcile-peer';

export interface ControllerOptions {
  readonly rest: RestClient;
  readonly logger?: Logger;
  readonly recorder?: EventRecorder;
  readonly metrics?: RuntimeMetrics;
  /** Concurrent ServiceLoadBalancer and ElasticIP passes (different keys). @default 4 */
  readonly workers?: number;
  /** How often orphaned claims are swept (ALLOC-2). @default 60_000 */
  readonly sweepIntervalMs?: number;
  /** A claim younger than this is never swept. @default 30_000 */
  readonly sweepGraceMs?: number;
  /** FO-3: added to an agent Lease's duration before its node counts as dead. @default 0 */
  readonly agentLeaseGraceMs?: number;
  /** The process's informers, shared with the webhooks' caches (main.ts). @default a new set over `rest` */
  readonly informers?: SharedInformers;
  /** The webhook's ARP-2/4/5 checks before each ARPAdvertisement create (M1: its own writes skip the webhook). */
  readonly admitAdvertisement?: ControllerContextOptions['admitAdvertisement'];
  /** H5: whether the API server serves ServiceCIDRs (kube/service-cidrs.ts); false leaves their cache out. @default true */
  readonly serviceCIDRsServed?: boolean;
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
  /** Every reconciler, in the order they start; each owns its queue. */
  readonly registrations: readonly Registration[];
  private readonly ctx: ControllerContext;
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
    const workers = options.workers ?? 4;
    const specs: ReconcilerSpec[] = [
      serviceLoadBalancerReconciler(this.ctx, workers),
      externalNetworkReconciler(this.ctx),
      addressPoolReconciler(this.ctx),
      this.housekeeping(),
      elasticIPReconciler(this.ctx, workers),
      elasticIPAttachmentReconciler(this.ctx),
      networkInterfaceReconciler(this.ctx),
      podReconciler(this.ctx),
      bgpPeerReconciler(this.ctx),
      natGatewayReconciler(this.ctx, workers),
    ];
    const run = { logger: this.logger, metrics: options.metrics };
    this.registrations = specs.map((spec) => new Registration(spec, run));
    if (options.metrics) registerStateMetrics(options.metrics, this.ctx);
    this.duplicates = new DuplicateDetector({
      rest,
      informer: this.caches.arpAdvertisements,
      recorder: options.recorder,
      metrics: options.metrics,
      logger: this.logger,
    });
  }

  /**
   * Starts every cache now, before (and whether or not) this replica leads: a warm standby. Read-only
   * (the caches list and watch through the unfenced client), so safe on a standby. At a takeover
   * start() then finds them synced and runs the reconcilers at once. FO-3: an agent Lease is judged
   * by when this process saw its renewTime change, so a tracker started only at takeover would
   * count every Lease as just renewed and find a node that died with the old leader one whole lease
   * duration after the takeover (the 33 s crash failover of bench/peers).
   */
  warmUp(): void {
    if (!this.lifecycle.stopped) allCaches(this.caches).forEach((c) => c.start());
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
    this.registrations.forEach((r) => r.start());
    // It gives up its own wait when stopped; stop() stops it after this start returns.
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
      await Promise.all(this.registrations.map((r) => r.stop({ drop: options.dropQueued })));
      await Promise.all(allCaches(this.caches).map((c) => c.stop()));
    });
  }

  /** True once every cache has listed (for /readyz). */
  get hasSynced(): boolean {
    return (
      allCaches(this.caches).every((c) => c.hasSynced) &&
      this.registrations.every((r) => r.hasSynced) &&
      this.duplicates.hasSynced
    );
  }

  /** HOUSEKEEPING's periodic passes, as one more reconciler whose keys are the passes. */
  private housekeeping(): ReconcilerSpec {
    const period = this.options.sweepIntervalMs ?? 60_000;
    return {
      name: 'housekeeping',
      reconcile: (key) => this.housekeep(key),
      workers: 1,
      initialKeys: () => Object.values(HOUSEKEEPING),
      watches: [],
      // A failing sweep is retried from 1 s, never later than its period.
      retry: { baseDelayMs: 1_000, maxDelayMs: period },
    };
  }

  /** One HOUSEKEEPING pass; it comes back after its period. */
  private async housekeep(key: string): Promise<ReconcileResult> {
    switch (key) {
      case HOUSEKEEPING.tentativeClaims:
        this.index.expireTentative(TENTATIVE_MAX_AGE_MS);
        return requeueAfter(TENTATIVE_CHECK_MS);
      case HOUSEKEEPING.claimSweep: {
        const kinds = { ...controllerHolderKinds(this.ctx), ElasticIP: elasticIPHolderKind(this.caches) };
        await sweepOrphanClaims(this.ctx, this.options.sweepGraceMs ?? 30_000, Date.now(), kinds);
        return requeueAfter(this.options.sweepIntervalMs ?? 60_000);
      }
      default:
        throw new TerminalError(`unknown housekeeping key '${key}'`);
    }
  }

  /** EN-7: creates subnet-vni with the documented default range when absent; never changes one. */
  private async ensureSubnetVniPool(): Promise<void> {
    if (this.caches.allocationPools.get(undefined, SUBNET_VNI_POOL)) return;
    try {
      await this.options.rest.create(JuneauResources.allocationPools, defaultSubnetVniPool(), {
        fieldManager: FieldManagers.controller,
      });
      this.logger.info('created AllocationPool subnet-vni with the default range', { ...defaultSubnetVniPool().spec });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
}
