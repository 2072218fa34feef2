/**
 * The ARP loop, ArpSync (ARCHITECTURE.md "Answer"): three informers (this node's
 * ARPAdvertisements by field selector, AddressPools, ExternalNetworks) feed a level-triggered
 * pass that recomputes the desired state (desired.ts) and writes only the difference to the
 * pinned maps (writer.ts). Passes are coalesced: a burst of events costs one pass. A change of
 * ARPAdvertisements alone takes the per-event path instead (answered.ts): only the changed
 * advertisements' addresses are written, because a full pass over 10,000 of them and the table
 * took a hundred milliseconds or more per event (bench/scale). A poll timer reads the maps'
 * counters (conflicts -> Warning Events, metrics) and re-reads the interface; a table that no
 * longer matches what the passes wrote (another writer, a lost write) gets a full pass there.
 *
 * Nothing is written before every informer has synced: an agent that starts (or restarts) with
 * an empty cache must not empty a map the previous agent filled, or the node would stop
 * answering for a moment (ARP-10, OPS-1). No packet is ever sent from here (ARP-8).
 */
import { referenceTo, type EventRecorder } from '../../kube/events';
import { Informer, type ListWatchClient } from '../../kube/informer';
import { InformerLoop } from '../informer-loop';
import { silentLogger, type Logger } from '../../kube/log';
import { ConflictTracker, type ConflictReport } from './conflicts';
import { AnsweredAddresses } from './answered';
import { announcingNetworks, contributionOf, desiredState, type DesiredState, type Refusal } from './desired';
import { interfaceSubnets, sameInterface, type LocalInterface } from '../interface';
import type { ArpMetrics } from './metrics';
import { JuneauResources } from '../../kube/resources';
import {
  advertisementView,
  AGENT_PAGE_SIZE,
  agentViews,
  type AddressPoolObject,
  type AdvertisementObject,
  type ExternalNetworkObject,
  networkView,
  nodeFieldSelector,
  poolView,
} from '../resources';
import { writeDesired, type ArpDatapath } from './writer';
import type { MoveAnnouncements } from '../announce/handovers';

export const EVENT_REASONS = {
  conflict: 'AddressConflict',
} as const;

export interface ArpSyncOptions {
  readonly client: ListWatchClient;
  readonly nodeName: string;
  readonly datapath: ArpDatapath;
  readonly recorder: Pick<EventRecorder, 'warning'>;
  readonly iface: LocalInterface;
  /** Re-reads the ingress interface (addresses can change); undefined when it is gone. */
  readonly readInterface: () => LocalInterface | undefined;
  /** @default 5000 */
  readonly pollIntervalMs?: number;
  /** Report conflicts as Events. @default true */
  readonly conflictDetection?: boolean;
  readonly metrics?: ArpMetrics;
  readonly logger?: Logger;
  /** FO-2: a watch silent for this long (no event, no bookmark) is broken: relist. @default none */
  readonly watchIdleTimeoutMs?: number;
  /** FO-1: announces addresses this node gains on networks that ask for it. @default none */
  readonly announcements?: Pick<MoveAnnouncements, 'observe' | 'stop'>;
  /** SEC-14: writes the ingress interface's new MAC into the responder's config (ArpMaps
   * setInterfaceMac) when the poll sees it change. @default none: the config keeps its MAC */
  readonly rewriteMac?: (mac: string) => void;
}

export class ArpSync {
  readonly advertisements: Informer<AdvertisementObject>;
  readonly pools: Informer<AddressPoolObject>;
  readonly networks: Informer<ExternalNetworkObject>;
  private readonly logger: Logger;
  private readonly conflicts = new ConflictTracker();
  /** Advertisement name -> `reason address` last reported, so a refusal is reported once. */
  private readonly reportedRefusals = new Map<string, string>();
  /** What the last full pass decided, kept current by the per-event path. */
  private readonly answered = new AnsweredAddresses();
  /** ARPAdvertisements changed since the last pass, by name; the per-event path's input. */
  private readonly changedAdvertisements = new Set<string>();
  /** FO-1: networks with announceOnMove, as of the last full pass (networks change only by one). */
  private announcing: ReadonlySet<string> = new Set();
  private fullPassPending = false;
  /** The per-event path deleted entries whose filter bits the next poll clears. */
  private filterStale = false;
  private iface: LocalInterface;
  private interfaceMissing = false;
  private reportedGuardProblems = '';
  private readonly loop: InformerLoop;

  constructor(private readonly options: ArpSyncOptions) {
    this.logger = options.logger ?? silentLogger;
    this.loop = new InformerLoop(this, {
      logger: this.logger,
      waiting: 'still waiting for the informers; the pinned maps keep answering meanwhile',
      pollIntervalMs: options.pollIntervalMs,
    });
    this.iface = options.iface;
    const common = { logger: this.logger, idleTimeoutMs: options.watchIdleTimeoutMs, pageSize: AGENT_PAGE_SIZE };
    this.advertisements = new Informer(options.client, {
      ...common,
      type: JuneauResources.arpAdvertisements,
      fieldSelector: nodeFieldSelector(options.nodeName),
      transform: agentViews.arpAdvertisement,
    });
    this.pools = new Informer(options.client, {
      ...common,
      type: JuneauResources.addressPools,
      transform: agentViews.addressPool,
    });
    this.networks = new Informer(options.client, {
      ...common,
      type: JuneauResources.externalNetworks,
      transform: agentViews.externalNetwork,
    });
    const full = { onAdd: () => this.schedule(), onUpdate: () => this.schedule(), onDelete: () => this.schedule() };
    const one = (ad: AdvertisementObject) => this.schedule(ad.metadata?.name ?? '');
    this.advertisements.addHandlers({ onAdd: one, onUpdate: (_old, ad) => one(ad), onDelete: one });
    this.pools.addHandlers(full);
    this.networks.addHandlers(full);
  }

  /** Starts the informers, waits for them (however long: the pinned maps answer meanwhile), writes
   * the first pass, then polls. Resolves early when stopped. */
  async start(): Promise<void> {
    await this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop(async () => {
      await this.options.announcements?.stop();
    });
  }

  get informersSynced(): boolean {
    return this.loop.informersSynced;
  }

  /**
   * FO-2: the maps hold what the API server says now: every informer is current (synced, its
   * watch open and not idle) and the last pass wrote its result. The heartbeat moves only then.
   */
  get viewIsCurrent(): boolean {
    const loop = this.loop;
    return loop.reconciledOnce && !loop.lastPassFailed && !loop.stopped && this.informers().every((i) => i.isCurrent);
  }

  /** True once a pass has made the maps equal to the desired state (readiness). */
  get reconciledOnce(): boolean {
    return this.loop.reconciledOnce;
  }

  get ingressInterface(): LocalInterface {
    return this.iface;
  }

  /** One full pass: desired state from the caches, difference written, refusals reported. */
  reconcile(): DesiredState | undefined {
    if (!this.loop.running) return undefined;
    // Everything changed so far is read now.
    this.fullPassPending = false;
    this.changedAdvertisements.clear();
    const advertisements = this.advertisements.list().map(advertisementView);
    const networks = this.networks.list().map(networkView);
    const desired = desiredState({
      nodeName: this.options.nodeName,
      advertisements,
      pools: this.pools.list().map(poolView),
      networks,
      iface: this.iface,
    });
    this.answered.reset(
      desired,
      new Map(advertisements.map((ad) => [ad.name, { network: ad.externalNetwork, expiryClass: ad.expiryClass }])),
    );
    this.announcing = announcingNetworks(networks);
    try {
      const result = writeDesired(this.options.datapath, desired);
      const changed = [result.added, result.removed, result.guard.added, result.guard.removed, result.held.added];
      if (changed.some((c) => c.length > 0) || result.held.removed.length) {
        this.logger.info('maps reconciled', {
          added: result.added,
          removed: result.removed,
          held: result.held.added,
          unheld: result.held.removed,
          guardAdded: result.guard.added,
          guardRemoved: result.guard.removed,
          entries: result.entries,
        });
      }
      // FO-1: after the write, so the address is answered before it is announced.
      this.options.announcements?.observe(result.added, result.removed, desired.announce);
      this.options.metrics?.reconciles.inc({ result: 'success' });
      this.options.metrics?.tableEntries.set(result.entries);
      this.options.metrics?.guardEntries.set(desired.guard.drop.length + desired.guard.allow.length);
      this.loop.passSucceeded();
      // writeDesired rebuilt the filter after its removals.
      this.filterStale = false;
    } catch (err) {
      this.writeFailed(err);
    }
    const problems = desired.guardProblems.join('\n');
    if (problems && problems !== this.reportedGuardProblems)
      this.logger.warn('pool items not guarded', { problems: desired.guardProblems });
    this.reportedGuardProblems = problems;
    this.reportRefusals(desired.refused);
    return desired;
  }

  /**
   * The per-event path: the ARPAdvertisements changed since the last pass, each read from the
   * cache and applied to what the last pass decided; only the addresses that gain their first or
   * lose their last advertisement are written (removals first, as in writer.ts).
   */
  private reconcileAdvertisements(): void {
    if (!this.loop.running) return;
    const subnets = interfaceSubnets(this.iface);
    const names = [...this.changedAdvertisements];
    this.changedAdvertisements.clear();
    const parts = names.map((name) => {
      const ad = this.advertisements.get(undefined, name);
      return [
        name,
        ad && contributionOf(advertisementView(ad), this.options.nodeName, subnets, this.iface.name),
      ] as const;
    });
    const { gained, lost, classes } = this.answered.apply(parts);
    try {
      const removed = lost.filter((a) => this.options.datapath.removeAddress(a));
      const added = gained.filter((a) => this.options.datapath.addAddress(a));
      // SEC-11: as in writer.ts, a class after its address is added, and cleared after it is removed.
      for (const [address, expiryClass] of classes) this.options.datapath.setExpiryClass(address, expiryClass);
      // A removed address's filter bit stays until the poll rebuilds the filter: a stale bit only
      // costs the program the table lookup it made before the filter existed.
      if (removed.length > 0) this.filterStale = true;
      if (added.length || removed.length)
        this.logger.info('maps reconciled', { added, removed, entries: this.answered.size });
      this.options.announcements?.observe(
        added,
        removed,
        new Set(added.filter((a) => this.answered.onNetwork(a, this.announcing))),
      );
      this.options.metrics?.reconciles.inc({ result: 'success' });
      this.options.metrics?.tableEntries.set(this.answered.size);
    } catch (err) {
      this.writeFailed(err);
    }
    for (const name of names) {
      const refusal = this.answered.refusal(name);
      if (refusal) this.reportRefusal(refusal);
      else this.reportedRefusals.delete(name);
    }
    this.options.metrics?.refusedAdvertisements.set(this.answered.refusedCount);
  }

  /** The poll retries with a full pass; a map write fails only on a broken pin or a full map. */
  private writeFailed(err: unknown): void {
    this.options.metrics?.reconciles.inc({ result: 'error' });
    this.logger.error('writing the maps failed; retrying at the next poll', { err });
    this.loop.passFailed();
  }

  /** Reads the counters (conflicts, metrics) and the interface; retries a failed pass. */
  poll(): void {
    if (!this.loop.running) return;
    const current = this.options.readInterface();
    // A link that is down is absent; the last known subnets stay in force meanwhile, so a flap
    // never empties the table.
    if (!current !== this.interfaceMissing) {
      if (!current)
        this.logger.error('ingress interface is down, gone, or has no IPv4 address; keeping its last known addresses', {
          iface: this.iface.name,
        });
      else this.logger.info('ingress interface is back', { iface: current.name });
    }
    this.interfaceMissing = !current;
    if (current && !sameInterface(current, this.iface) && this.macFollowed(current)) {
      this.logger.info('ingress interface changed; reconciling', { iface: current.name, addresses: current.addresses });
      this.iface = current;
      this.reconcile();
    } else if (this.loop.lastPassFailed) {
      this.reconcile();
    }
    try {
      let entries = this.options.datapath.addresses();
      if (this.drifted(entries)) {
        this.logger.warn('external_arp_table differs from what the agent wrote; reconciling', {
          entries: entries.size,
          answered: this.answered.size,
        });
        this.reconcile();
        entries = this.options.datapath.addresses();
      } else if (this.filterStale) {
        this.options.datapath.rebuildFilter(entries.keys());
        this.filterStale = false;
      }
      this.options.metrics?.observeEntries(entries);
      this.options.metrics?.observeStats(this.options.datapath.stats());
      const reports = this.conflicts.observe(entries);
      if (this.options.conflictDetection ?? true) for (const report of reports) this.reportConflict(report);
    } catch (err) {
      this.logger.error('reading the maps failed', { err });
    }
  }

  /** SEC-14: the responder's config given the interface's new MAC, if it changed; false when the
   * write failed (the next poll tries again, the interface still reading as changed). */
  private macFollowed(current: LocalInterface): boolean {
    if (current.mac === this.iface.mac || !this.options.rewriteMac) return true;
    try {
      this.options.rewriteMac(current.mac);
      this.logger.info('ingress interface MAC changed; replies carry the new one', {
        iface: current.name,
        from: this.iface.mac,
        to: current.mac,
      });
      return true;
    } catch (err) {
      this.logger.error('writing the new MAC into the responder config failed; retrying at the next poll', { err });
      return false;
    }
  }

  /** Whether the table holds other addresses than the passes wrote (checked when none is due). */
  private drifted(entries: ReadonlyMap<string, unknown>): boolean {
    if (this.loop.scheduled || this.loop.lastPassFailed) return false;
    if (entries.size !== this.answered.size) return true;
    for (const address of entries.keys()) if (!this.answered.has(address)) return true;
    return false;
  }

  /** Coalesces changes into one pass: per-event when only the named ARPAdvertisements changed,
   * full otherwise (no name: a pool or network changed). */
  private schedule(advertisement?: string): void {
    if (!this.loop.running) return;
    if (advertisement === undefined) this.fullPassPending = true;
    else this.changedAdvertisements.add(advertisement);
    this.loop.schedule(() => {
      if (this.fullPassPending || this.loop.lastPassFailed) this.reconcile();
      else this.reconcileAdvertisements();
    });
  }

  private reportRefusals(refused: readonly Refusal[]): void {
    const current = new Set<string>();
    for (const refusal of refused) {
      current.add(refusal.advertisement);
      this.reportRefusal(refusal);
    }
    for (const name of [...this.reportedRefusals.keys()]) if (!current.has(name)) this.reportedRefusals.delete(name);
    this.options.metrics?.refusedAdvertisements.set(refused.length);
  }

  /** One Warning Event per refusal, not one per pass. */
  private reportRefusal(refusal: Refusal): void {
    const key = `${refusal.reason} ${refusal.address} ${this.iface.addresses.map((a) => a.address).join(',')}`;
    if (this.reportedRefusals.get(refusal.advertisement) === key) return;
    this.reportedRefusals.set(refusal.advertisement, key);
    this.logger.warn('ARPAdvertisement refused', { ...refusal });
    const ad = this.advertisements.get(undefined, refusal.advertisement);
    if (ad)
      this.options.recorder.warning(
        referenceTo(ad, JuneauResources.arpAdvertisements),
        refusal.reason,
        'Answer',
        `node ${this.options.nodeName}: ${refusal.message}`,
      );
  }

  private reportConflict(report: ConflictReport): void {
    const mac = report.foreignMac ?? 'unknown';
    const note =
      `node ${this.options.nodeName} answers ARP for ${report.address} on ${this.iface.name} (MAC ${this.iface.mac}), and another host ` +
      `with MAC ${mac} claimed it in ${report.count} ARP packet(s) since the last report (${report.total} in all; RFC 5227 2.4). ` +
      'Two hosts answering one address split its traffic (EN-11): find the host with that MAC.';
    this.logger.warn('address conflict', { address: report.address, foreignMac: mac, count: Number(report.count) });
    this.options.metrics?.conflictReports.inc({ address: report.address });
    const owners = this.advertisements.list().filter((ad) => ad.spec?.address === report.address);
    for (const ad of owners)
      this.options.recorder.warning(
        referenceTo(ad, JuneauResources.arpAdvertisements),
        EVENT_REASONS.conflict,
        'DetectConflict',
        note,
      );
  }

  /** The loop's informers (InformerLoop starts and stops them). */
  informers(): Array<Informer<AdvertisementObject> | Informer<AddressPoolObject> | Informer<ExternalNetworkObject>> {
    return [this.advertisements, this.pools, this.networks];
  }
}
