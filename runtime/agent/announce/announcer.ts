/**
 * FO-1: announcements on move, in the order that makes them safe.
 *
 * When this node gains an address on a network with `spec.arp.announceOnMove`, the upstream
 * router still caches the previous node's MAC (ARP-8). An RFC 5227 section 3 announcement (a
 * broadcast request with sender IP = target IP = the address) makes every host that caches the
 * address switch to our MAC at once. Sent while the previous node still answers, it would only
 * start a race between two answering MACs (the incident behind OPS-1), so it must come after the
 * previous node has stopped.
 *
 * The order we rely on, and why it is observed rather than assumed: the controller moves an
 * address by changing the ARPAdvertisement's `spec.nodeName`; the previous node's agent watches
 * its node's ARPAdvertisements by field selector, so the change reaches it as a delete and it
 * removes the address from its map; our agent sees an add. The two agents learn of the move
 * independently, and the previous one may be slow, partitioned from the API server, or dead with
 * its program still pinned and answering until its heartbeat expires (FO-2). No message from the
 * API server proves that it has stopped, but the wire does: before announcing, we send an RFC
 * 5227 probe (sender IP 0.0.0.0, so no cache learns from it) and listen for `answerWaitMs`. Any ARP
 * packet from another MAC claiming the address means someone still answers: probe again, soon
 * (the previous node learns of the move when we do), backing off to one probe per window. Only a
 * probe nobody answers is followed by the announcements: ANNOUNCE_NUM (2) of them,
 * ANNOUNCE_INTERVAL (2 s) apart, as RFC 5227 section 3 and its table 1 say. The second one also
 * lands after a Linux router's neighbour locktime (1 s), within which it ignores a new MAC for an
 * entry it just updated. When another host still answers after `giveUpAfterMs` (longer than the
 * FO-2 expiry, so it is no stale Juneau node), nothing is announced and a Warning says who.
 *
 * Knows no Kubernetes: addresses in, outcomes out (handovers.ts turns them into Events and metrics).
 */
import { announcementFrame, claimsAddress, parseArpFrame, probeFrame, type ArpPacket } from './frames';
import type { FrameSocket } from './packet-socket';

/** An XDP responder answers in microseconds and a kernel in a few milliseconds on a LAN; 50 ms of
 * silence is ten times a slow kernel's answer while costing a move only 50 ms (a failover budget is
 * a few hundred ms from unready to the router). */
export const DEFAULT_ANSWER_WAIT_MS = 50;
/** How often the socket is read while waiting for an answer (an answer ends the wait). */
export const CLAIM_POLL_MS = 5;
/** The first pause before probing again after an answer; doubles up to the answer window. */
export const REPROBE_FIRST_GAP_MS = 10;

/** RFC 5227 section 1.1 table, the announcement part. */
export const RFC5227 = { ANNOUNCE_NUM: 2, ANNOUNCE_INTERVAL_MS: 2000 } as const;

export interface AnnounceTimings {
  /** How long a probe waits for an answer: silence this long means nobody else answers.
   * @default DEFAULT_ANSWER_WAIT_MS */
  readonly answerWaitMs?: number;
  /** Stop probing (and announce nothing) when the address is still answered after this long.
   * @default 30000 */
  readonly giveUpAfterMs?: number;
  /** @default RFC5227.ANNOUNCE_INTERVAL_MS */
  readonly announceIntervalMs?: number;
}

export type AnnounceOutcome =
  | {
      readonly address: string;
      readonly result: 'announced';
      readonly probes: number;
      readonly waitedMs: number;
      readonly announcements: number;
    }
  | {
      readonly address: string;
      readonly result: 'gave-up';
      readonly probes: number;
      readonly waitedMs: number;
      readonly holderMac: string;
    }
  | { readonly address: string; readonly result: 'cancelled'; readonly probes: number; readonly announcements: number };

export interface AnnouncerOptions extends AnnounceTimings {
  /** The interface's MAC: sender of probes and announcements. */
  readonly mac: string;
  /** Opens the socket; called when the first handover starts, closed when the last ends. */
  readonly openSocket: () => FrameSocket;
  /** Called when an announcement is sent, with its number (1-based) and ms since the start. */
  readonly onAnnouncement?: (address: string, n: number, sinceStartMs: number, probes: number) => void;
  readonly onOutcome?: (outcome: AnnounceOutcome) => void;
  readonly onError?: (address: string, err: unknown) => void;
  /** Injected for tests. @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @default performance.now */
  readonly now?: () => number;
}

interface Handover {
  cancelled: boolean;
  readonly inbox: Buffer[];
}

export class Announcer {
  private socket: FrameSocket | undefined;
  private readonly active = new Map<string, Handover>();
  private readonly running = new Set<Promise<void>>();
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;

  constructor(private readonly options: AnnouncerOptions) {
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.now = options.now ?? (() => performance.now());
  }

  /** Starts the handover of `address` unless one is running. */
  start(address: string): void {
    if (this.active.has(address)) return;
    const handover: Handover = { cancelled: false, inbox: [] };
    this.active.set(address, handover);
    const run = this.run(address, handover)
      .then((outcome) => this.options.onOutcome?.(outcome))
      .catch((err) => this.options.onError?.(address, err))
      .finally(() => {
        this.active.delete(address);
        this.running.delete(run);
        if (this.active.size === 0) this.closeSocket();
      });
    this.running.add(run);
  }

  /** The address left this node: whatever is left of its handover is not sent. */
  cancel(address: string): void {
    const handover = this.active.get(address);
    if (handover) handover.cancelled = true;
  }

  get inProgress(): readonly string[] {
    return [...this.active.keys()];
  }

  /** Cancels every handover and waits for them to end. */
  async stop(): Promise<void> {
    for (const handover of this.active.values()) handover.cancelled = true;
    await Promise.all([...this.running]);
  }

  private async run(address: string, handover: Handover): Promise<AnnounceOutcome> {
    const started = this.now();
    const socket = this.openSocket();
    const answerWaitMs = this.options.answerWaitMs ?? DEFAULT_ANSWER_WAIT_MS;
    let probes = 0;
    let gapMs = REPROBE_FIRST_GAP_MS;
    this.pump(socket);
    handover.inbox.length = 0; // what arrived before the first probe answers nothing
    for (;;) {
      if (handover.cancelled) return { address, result: 'cancelled', probes, announcements: 0 };
      socket.send(probeFrame(this.options.mac, address));
      probes++;
      const holder = await this.awaitClaim(socket, handover, address, answerWaitMs);
      if (!holder) break;
      const waitedMs = this.now() - started;
      if (waitedMs >= (this.options.giveUpAfterMs ?? 30_000))
        return { address, result: 'gave-up', probes, waitedMs, holderMac: holder.senderMac };
      // Still answered: the previous node is about to remove the address (it learns of the move
      // when we do), so probe again soon, backing off to one probe per answer window.
      await this.sleep(gapMs);
      gapMs = Math.min(gapMs * 2, answerWaitMs);
    }
    const waitedMs = this.now() - started;
    for (let n = 1; n <= RFC5227.ANNOUNCE_NUM; n++) {
      if (handover.cancelled) return { address, result: 'cancelled', probes, announcements: n - 1 };
      socket.send(announcementFrame(this.options.mac, address));
      this.options.onAnnouncement?.(address, n, this.now() - started, probes);
      if (n < RFC5227.ANNOUNCE_NUM) await this.sleep(this.options.announceIntervalMs ?? RFC5227.ANNOUNCE_INTERVAL_MS);
    }
    return { address, result: 'announced', probes, waitedMs, announcements: RFC5227.ANNOUNCE_NUM };
  }

  /**
   * Waits up to `windowMs` for another MAC to claim `address`, looking every CLAIM_POLL_MS, so an
   * answer ends the wait at once and silence costs exactly one window. A stalled event loop only
   * lengthens the wait: frames queue in the socket and are read after it. Claims seen are consumed;
   * one that arrives between probes counts against the next one (someone still answers).
   */
  private async awaitClaim(
    socket: FrameSocket,
    handover: Handover,
    address: string,
    windowMs: number,
  ): Promise<ArpPacket | undefined> {
    const sent = this.now();
    for (;;) {
      const left = windowMs - (this.now() - sent);
      if (left > 0) await this.sleep(Math.min(CLAIM_POLL_MS, left));
      this.pump(socket);
      const holder = handover.inbox
        .map(parseArpFrame)
        .find((p): p is ArpPacket => p !== undefined && claimsAddress(p, address, this.options.mac));
      handover.inbox.length = 0;
      if (holder || left <= 0) return holder;
    }
  }

  /** One socket for every handover: what it received goes to each handover's inbox. */
  private pump(socket: FrameSocket): void {
    const frames = socket.drain();
    if (frames.length === 0) return;
    for (const handover of this.active.values()) handover.inbox.push(...frames);
  }

  private openSocket(): FrameSocket {
    this.socket ??= this.options.openSocket();
    return this.socket;
  }

  private closeSocket(): void {
    this.socket?.close();
    this.socket = undefined;
  }
}
