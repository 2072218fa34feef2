/**
 * FO-1 glue between the agent's passes and the Announcer: which addresses this node just gained
 * on a network with `spec.arp.announceOnMove` (and which it lost), and what is reported about
 * them — a counter per address (metrics, and the pinned map juneau_announce), a Normal Event `Announced` on the ARPAdvertisement when the first
 * announcement leaves, a Warning `AnnouncementSkipped` when another host kept answering.
 *
 * "Gained" is what a pass inserted into external_arp_table. An agent that restarts adopts the
 * pinned table, so addresses it already answered for are not gained and not announced (a restart
 * moves nothing). With every network's announceOnMove absent or false nothing is started, no
 * socket is opened and no unsolicited ARP leaves the node (ARP-8).
 */
import type { EventRecorder, ObjectReference } from '../../kube/events';
import { silentLogger, type Logger } from '../../kube/log';
import { counter, metricsOf } from '../metric-table';
import { Announcer, RFC5227, type AnnounceOutcome, type AnnounceTimings } from './announcer';
import type { FrameSocket } from './packet-socket';
import type { AnnounceCounters } from './counters';
import { monotonicNowNs } from '../bpf/clock';

export const ANNOUNCE_EVENT_REASONS = { announced: 'Announced', skipped: 'AnnouncementSkipped' } as const;

const ANNOUNCE_METRICS = {
  announcements: counter(
    'agent_arp_announcements_total',
    ['address'],
    'RFC 5227 announcements sent for an address this node gained (FO-1).',
  ),
  probes: counter(
    'agent_arp_probes_total',
    ['address'],
    'RFC 5227 probes sent before announcing an address (FO-1: wait until the previous node stopped answering).',
  ),
  handovers: counter(
    'agent_arp_handovers_total',
    ['result'],
    'Announcement handovers by outcome: announced, gave-up (another host kept answering), cancelled (the address left).',
  ),
};

export class AnnounceMetrics extends metricsOf(ANNOUNCE_METRICS) {
  forget(address: string): void {
    this.announcements.remove({ address });
    this.probes.remove({ address });
  }
}

export interface MoveAnnouncementsOptions extends AnnounceTimings {
  readonly nodeName: string;
  readonly ifname: string;
  readonly mac: string;
  readonly openSocket: () => FrameSocket;
  readonly recorder: Pick<EventRecorder, 'normal' | 'warning'>;
  /** The ARPAdvertisement(s) this node holds for `address`, for Events. */
  readonly advertisementsFor: (address: string) => readonly ObjectReference[];
  readonly metrics?: AnnounceMetrics;
  /** The pinned per-address counters (`kubectl juneau bpf dump announcements`). */
  readonly counters?: Pick<AnnounceCounters, 'add' | 'forget'>;
  readonly logger?: Logger;
}

export class MoveAnnouncements {
  private readonly announcer: Announcer;
  private readonly logger: Logger;

  constructor(private readonly options: MoveAnnouncementsOptions) {
    this.logger = options.logger ?? silentLogger;
    this.announcer = new Announcer({
      ...options,
      onAnnouncement: (address, n, sinceStartMs, probes) => this.announced(address, n, sinceStartMs, probes),
      onOutcome: (outcome) => this.finished(outcome),
      onError: (address, err) => this.logger.error('announcing failed', { address, err }),
    });
  }

  /** After a pass: `added` addresses of announcing networks start a handover; `removed` ones stop. */
  observe(added: readonly string[], removed: readonly string[], announce: ReadonlySet<string>): void {
    for (const address of removed) {
      this.announcer.cancel(address);
      this.options.metrics?.forget(address);
      this.count(address, (c) => c.forget(address));
    }
    for (const address of added) if (announce.has(address)) this.announcer.start(address);
  }

  get inProgress(): readonly string[] {
    return this.announcer.inProgress;
  }

  stop(): Promise<void> {
    return this.announcer.stop();
  }

  /** A counter write that fails is logged: the announcement itself has been sent. */
  private count(address: string, write: (c: Pick<AnnounceCounters, 'add' | 'forget'>) => void): void {
    if (!this.options.counters) return;
    try {
      write(this.options.counters);
    } catch (err) {
      this.logger.error('writing the announcement counters failed', { address, err });
    }
  }

  private announced(address: string, n: number, sinceStartMs: number, probes: number): void {
    this.options.metrics?.announcements.inc({ address });
    if (n === 1) this.options.metrics?.probes.inc({ address }, probes);
    this.count(address, (c) =>
      c.add(address, { announcements: 1, probes: n === 1 ? probes : 0, announcedAtNs: monotonicNowNs() }),
    );
    this.logger.info('announced', { address, n, sinceStartMs: Math.round(sinceStartMs), probes });
    if (n !== 1) return;
    const note =
      `node ${this.options.nodeName} gained ${address} and announced it on ${this.options.ifname} (MAC ${this.options.mac}) ` +
      `${Math.round(sinceStartMs)} ms later, after ${probes} probe(s) showed no other host answering; ${RFC5227.ANNOUNCE_NUM} RFC 5227 ` +
      `announcements ${RFC5227.ANNOUNCE_INTERVAL_MS / 1000} s apart (FO-1)`;
    for (const ref of this.options.advertisementsFor(address))
      this.options.recorder.normal(ref, ANNOUNCE_EVENT_REASONS.announced, 'Announce', note);
  }

  private finished(outcome: AnnounceOutcome): void {
    this.options.metrics?.handovers.inc({ result: outcome.result });
    if (outcome.result !== 'gave-up') return;
    this.count(outcome.address, (c) => c.add(outcome.address, { probes: outcome.probes, gaveUp: 1 }));
    const note =
      `node ${this.options.nodeName} gained ${outcome.address} but MAC ${outcome.holderMac} still answered ${outcome.probes} probe(s) over ` +
      `${Math.round(outcome.waitedMs / 1000)} s, so no announcement was sent (it would start a race between two answering hosts, EN-11): find the host with that MAC`;
    this.logger.warn('announcement skipped', {
      address: outcome.address,
      holderMac: outcome.holderMac,
      probes: outcome.probes,
    });
    for (const ref of this.options.advertisementsFor(outcome.address))
      this.options.recorder.warning(ref, ANNOUNCE_EVENT_REASONS.skipped, 'Announce', note);
  }
}
