/**
 * BGP-7: writes the node's own BGPNodeState (named after the node) by server-side apply: the
 * object once (spec.nodeName), then its status whenever it differs from what was last written, at
 * most once per `minIntervalMs` (a router flapping every second costs each node one write per
 * interval, not one per flap: the last state wins, written when the interval is over). An Event
 * on the BGPPeer when this node's session to it becomes Established or stops being it, and when a
 * session that is not up has a new last error (a wrong password said after the session went down).
 */
import { FIELD_MANAGERS } from '../../../api/constants';
import { applyObject, applyStatus } from '../../kube/apply';
import type { EventRecorder, ObjectReference } from '../../kube/events';
import type { Logger } from '../../kube/log';
import { apiVersionOf, JuneauResources } from '../../kube/resources';
import type { RestClient } from '../../kube/rest';
import type { NodeStateStatus } from './node-state';

export const BGP_EVENT_REASONS = {
  established: 'BGPSessionEstablished',
  down: 'BGPSessionDown',
  /** A session that is not up has a new last error (its own reason: the recorder folds Events of one reason into a series that keeps the first note). */
  error: 'BGPSessionError',
  configRefused: 'BGPConfigRefused',
} as const;

export interface NodeStateWriterOptions {
  readonly rest: Pick<RestClient, 'patch'>;
  readonly nodeName: string;
  readonly recorder: Pick<EventRecorder, 'normal' | 'warning'>;
  readonly logger: Logger;
  /** @default 2000 */
  readonly minIntervalMs?: number;
  readonly now?: () => number;
}

export class NodeStateWriter {
  private created = false;
  private written: string | undefined;
  private writtenStatus: NodeStateStatus | undefined;
  private pending: Omit<NodeStateStatus, 'updatedAt'> | undefined;
  private lastWriteAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  /** Writes that reached the API server (for tests and metrics). */
  writes = 0;

  constructor(private readonly options: NodeStateWriterOptions) {}

  /** What was last written, if anything. */
  get status(): NodeStateStatus | undefined {
    return this.writtenStatus;
  }

  /** Records `status` to be written (now, or when the interval since the last write is over). */
  offer(status: Omit<NodeStateStatus, 'updatedAt'>): void {
    if (this.stopped || JSON.stringify(status) === this.written) {
      this.pending = undefined;
      return;
    }
    this.pending = status;
    this.kick();
  }

  private kick(): void {
    if (this.inFlight || this.timer || !this.pending) return;
    const now = (this.options.now ?? Date.now)();
    const wait = this.lastWriteAt + (this.options.minIntervalMs ?? 2000) - now;
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.kick();
      }, wait);
      return;
    }
    const status = this.pending;
    this.pending = undefined;
    this.inFlight = this.write(status).finally(() => {
      this.inFlight = undefined;
      this.kick();
    });
  }

  private async write(status: Omit<NodeStateStatus, 'updatedAt'>): Promise<void> {
    const { rest, nodeName, logger } = this.options;
    const type = JuneauResources.bgpNodeStates;
    this.lastWriteAt = (this.options.now ?? Date.now)();
    try {
      if (!this.created) {
        await applyObject(
          rest as RestClient,
          type,
          { apiVersion: apiVersionOf(type), kind: type.kind, metadata: { name: nodeName }, spec: { nodeName } },
          FIELD_MANAGERS.agent,
        );
        this.created = true;
      }
      const full: NodeStateStatus = { ...status, updatedAt: new Date(this.lastWriteAt).toISOString() };
      await applyStatus(rest as RestClient, type, { name: nodeName }, full, FIELD_MANAGERS.agent);
      this.reportTransitions(this.writtenStatus, full);
      this.written = JSON.stringify(status);
      this.writtenStatus = full;
      this.writes++;
    } catch (err) {
      // Retried by the next offer (the loop's poll): the status is still different.
      this.created = false;
      logger.error(`BGPNodeState ${nodeName} not written`, { err });
    }
  }

  private reportTransitions(before: NodeStateStatus | undefined, after: NodeStateStatus): void {
    const old = new Map((before?.peers ?? []).map((p) => [p.peer, p]));
    for (const p of after.peers ?? []) {
      const was = old.get(p.peer)?.state;
      const errorBefore = old.get(p.peer)?.lastError;
      const peer: ObjectReference = {
        apiVersion: apiVersionOf(JuneauResources.bgpPeers),
        kind: JuneauResources.bgpPeers.kind,
        name: p.peer,
      };
      if (p.state === 'Established' && was !== 'Established')
        this.options.recorder.normal(
          peer,
          BGP_EVENT_REASONS.established,
          'Peer',
          `node ${this.options.nodeName}: session Established, ${p.prefixesSent ?? 0} prefixes sent (BGP-7)`,
        );
      else if (p.state !== 'Established' && was === 'Established')
        this.options.recorder.warning(
          peer,
          BGP_EVENT_REASONS.down,
          'Peer',
          `node ${this.options.nodeName}: session ${p.state}${p.lastError ? `: ${p.lastError}` : ''} (BGP-7)`,
        );
      else if (p.state !== 'Established' && p.lastError !== undefined && p.lastError !== errorBefore)
        this.options.recorder.warning(
          peer,
          BGP_EVENT_REASONS.error,
          'Peer',
          `node ${this.options.nodeName}: session ${p.state}: ${p.lastError} (BGP-7)`,
        );
    }
  }

  /** Stops timers; a write in flight finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }
}
