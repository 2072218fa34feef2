/**
 * The shell of ./duplicates.ts (ARP-4): watches EVERY ARPAdvertisement — the controller's own
 * cache holds only those with owner labels, and a duplicate may come from anyone — indexed by
 * `spec.address`; a change queues its address; a pass writes the `Unique` condition of that
 * address's objects, one Event per transition, and the gauge of duplicated addresses.
 *
 * Runs where the reconcilers run (the leader). Key: the address. Errors retry with backoff.
 */
import type { ARPAdvertisement } from '../../../api';
import { applyStatus, FieldManagers } from '../../kube/apply';
import { setCondition, type Condition } from '../../kube/conditions';
import { referenceTo, type EventRecorder } from '../../kube/events';
import type { Informer } from '../../kube/informer';
import { silentLogger, type Logger } from '../../kube/log';
import type { RuntimeMetrics } from '../../kube/metrics';
import { isNotFound, type RestClient } from '../../kube/rest';
import type { Stored } from '../../kube/types';
import { done, WorkQueue, type ReconcileResult } from '../../kube/workqueue';
import { addressKey, CACHE_INDEX } from '../context';
import { JuneauResources } from '../../kube/resources';
import { CONDITIONS, decideUniqueness, isDuplicated, type AdvertisementView } from './duplicates';
import { ownerIdentity } from './names';

type Ad = Stored<ARPAdvertisement>;
const ARP = JuneauResources.arpAdvertisements;

export interface DuplicateDetectorOptions {
  readonly rest: RestClient;
  /**
   * The cache of every ARPAdvertisement (not only those with owner labels: a duplicate may come
   * from anyone) indexed by CACHE_INDEX.byAddress: the controller's own (../context.ts), so the
   * objects are held once.
   */
  readonly informer: Informer<Ad>;
  readonly recorder?: EventRecorder;
  readonly metrics?: RuntimeMetrics;
  readonly logger?: Logger;
}

export class DuplicateDetector {
  private readonly informer: Informer<Ad>;
  private readonly queue = new WorkQueue();
  /** The `Unique` condition this process last wrote, by uid: newer than a cache that lags its own write. */
  private readonly written = new Map<string, Condition>();
  /** Addresses advertised by more than one object after the last pass of each. */
  private readonly duplicated = new Set<string>();
  private readonly gauge: { set(value: number): void } | undefined;
  private readonly logger: Logger;

  constructor(private readonly options: DuplicateDetectorOptions) {
    this.logger = (options.logger ?? silentLogger).child({ detector: 'arp-duplicates' });
    this.informer = options.informer;
    this.gauge = options.metrics?.registerGauge(
      'arp_duplicate_addresses',
      'Addresses advertised by more than one ARPAdvertisement (ARP-4); should be 0.',
    );
    this.gauge?.set(0);
    this.informer.addHandlers({
      onAdd: (a) => this.queue.add(a.spec.address),
      onUpdate: (old, a) => {
        this.queue.add(a.spec.address);
        if (old.spec.address !== a.spec.address) this.queue.add(old.spec.address);
      },
      onDelete: (a) => {
        this.written.delete(a.metadata.uid ?? '');
        this.queue.add(a.spec.address);
      },
    });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync();
    this.queue.run(
      (address) => this.pass(address),
      1,
      (address, err) => this.logger.warn('duplicate check failed; retrying', { address, err: String(err) }),
    );
  }

  /** Stops the passes; the informer is the controller's, stopped with its caches. */
  async stop(): Promise<void> {
    await this.queue.shutdown();
  }

  get hasSynced(): boolean {
    return this.informer.hasSynced;
  }

  /** Addresses currently advertised by more than one ARPAdvertisement, sorted. */
  duplicatedAddresses(): string[] {
    return [...this.duplicated].sort();
  }

  private async pass(address: string): Promise<ReconcileResult> {
    const ads = this.informer
      .byIndex(CACHE_INDEX.byAddress, addressKey(address) ?? '')
      .filter((a) => !a.metadata.deletionTimestamp);
    const views = ads.map((a) => this.viewOf(a));
    if (isDuplicated(views)) this.duplicated.add(address);
    else this.duplicated.delete(address);
    this.gauge?.set(this.duplicated.size);
    const byName = new Map(ads.map((a) => [a.metadata.name, a]));
    for (const decision of decideUniqueness(views)) {
      const ad = byName.get(decision.name)!;
      if (decision.condition) {
        const previous = this.conditionOf(ad);
        const [written] = setCondition(previous ? [previous] : [], decision.condition);
        try {
          await applyStatus(
            this.options.rest,
            ARP,
            { name: decision.name },
            { conditions: [written] },
            FieldManagers.controller,
          );
        } catch (err) {
          if (isNotFound(err)) continue;
          throw err;
        }
        this.written.set(ad.metadata.uid ?? '', written);
      }
      if (decision.event) {
        this.options.recorder?.record({
          regarding: referenceTo(ad, ARP),
          type: decision.event.type,
          reason: decision.event.reason,
          action: 'DetectDuplicates',
          note: decision.event.note,
        });
        const log = decision.event.type === 'Warning' ? this.logger.warn : this.logger.info;
        log.call(this.logger, decision.event.note, { arpAdvertisement: decision.name, address });
      }
    }
    return done();
  }

  private conditionOf(ad: Ad): Condition | undefined {
    return (
      this.written.get(ad.metadata.uid ?? '') ??
      (ad.status?.conditions as Condition[] | undefined)?.find((c) => c.type === CONDITIONS.unique)
    );
  }

  private viewOf(ad: Ad): AdvertisementView {
    const unique = this.conditionOf(ad);
    return {
      name: ad.metadata.name,
      address: ad.spec.address,
      nodeName: ad.spec.nodeName,
      owner: ownerIdentity(ad),
      creationTimestamp: String(ad.metadata.creationTimestamp ?? ''),
      generation: ad.metadata.generation,
      unique: unique && {
        status: unique.status,
        reason: unique.reason,
        message: unique.message,
        observedGeneration: unique.observedGeneration,
      },
    };
  }
}
