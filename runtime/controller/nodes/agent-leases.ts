/**
 * FO-3: which nodes' agents are alive, from their Leases `juneau-agent-<node>` (runtime/agent/liveness/lease.ts).
 *
 * Like leader election, a Lease is judged by when this controller *observed* its renewTime change,
 * by its own monotonic clock, never by the renewTime itself: clock skew between a node and the
 * controller cannot make a live agent look dead or a dead one alive. A node whose Lease has not
 * been seen to change for its `leaseDurationSeconds` is unable to answer: its agent is dead, hung
 * or cut off from the API server, and by then its answers have expired (the agent moves its FO-2
 * heartbeat only after a renewal, and its --answer-expiry is at most the lease duration). A node
 * without a Lease (an agent that predates FO-3, or none yet) is not judged: left as it was.
 *
 * A Lease first seen counts as just renewed: a dead node is found out one lease duration after the
 * watch started, never earlier than its answers expired (FO-4). Every replica watches from its own
 * start, the standbys too (JuneauController.warmUp), so a replica that takes over from
 * a leader that died with a node already knows how long that node's Lease has been still.
 */
import { AGENT_LEASE } from '../../../api/constants';
import type { Informer } from '../../kube/informer';
import type { Lease } from '../../kube/leader-election';

export const AGENT_LEASE_PREFIX = AGENT_LEASE.namePrefix;
export const AGENT_LEASE_SELECTOR = `${AGENT_LEASE.label.key}=${AGENT_LEASE.label.value}`;

/** What is known of one agent Lease. */
export interface LeaseRecord {
  readonly node: string;
  /** The renewTime last seen; a change means a renewal. */
  readonly renewTime: string;
  readonly durationMs: number;
  /** Controller-monotonic ms when renewTime was last seen to change. */
  readonly observedAtMs: number;
}

/** Pure: the node's agent is dead when its record has not changed for its duration (plus the
 * controller's `--agent-lease-grace`). */
export function leaseExpired(record: LeaseRecord, nowMs: number, graceMs = 0): boolean {
  return nowMs - record.observedAtMs > record.durationMs + graceMs;
}

/** Pure: the record after seeing `lease` at `nowMs` (a new renewTime restarts the clock). */
export function observeLease(previous: LeaseRecord | undefined, lease: Lease, nowMs: number): LeaseRecord | undefined {
  const name = lease.metadata?.name ?? '';
  if (!name.startsWith(AGENT_LEASE_PREFIX)) return undefined;
  const renewTime = lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '';
  const durationMs = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
  if (previous && previous.renewTime === renewTime && previous.durationMs === durationMs) return previous;
  return { node: name.slice(AGENT_LEASE_PREFIX.length), renewTime, durationMs, observedAtMs: nowMs };
}

/** Why a node was left out, for conditions and Events. */
export function expiryReason(record: LeaseRecord, nowMs: number): string {
  return `its agent Lease ${AGENT_LEASE_PREFIX}${record.node} was not renewed for ${Math.round((nowMs - record.observedAtMs) / 1000)} s (lease duration ${record.durationMs / 1000} s): the node cannot answer (FO-3)`;
}

/** The liveness the reconcilers read. */
export interface AgentLiveness {
  /** Nodes whose agent Lease expired, with the reason. */
  unavailableNodes(): ReadonlyMap<string, string>;
}

export class AgentLeaseTracker implements AgentLiveness {
  private readonly records = new Map<string, LeaseRecord>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly listeners = new Set<(node: string) => void>();

  constructor(
    informer: Pick<Informer<Lease>, 'addHandlers'>,
    private readonly now: () => number = () => performance.now(),
    private readonly graceMs = 0,
  ) {
    informer.addHandlers({
      onAdd: (lease) => this.observe(lease),
      onUpdate: (_old, lease) => this.observe(lease),
      onDelete: (lease) => this.forget(lease),
    });
  }

  /** `fn(node)` whenever a node's liveness changes: it expired, or renewed after expiring. */
  onLivenessChange(fn: (node: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** BGP-3: nodes whose agent Lease is live now (seen, and not expired), sorted. */
  liveNodes(): string[] {
    const now = this.now();
    return [...this.records.values()]
      .filter((r) => !leaseExpired(r, now, this.graceMs))
      .map((r) => r.node)
      .sort();
  }

  unavailableNodes(): ReadonlyMap<string, string> {
    const now = this.now();
    const out = new Map<string, string>();
    for (const record of this.records.values())
      if (leaseExpired(record, now, this.graceMs)) out.set(record.node, expiryReason(record, now));
    return out;
  }

  stop(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private observe(lease: Lease): void {
    const now = this.now();
    const node = (lease.metadata?.name ?? '').slice(AGENT_LEASE_PREFIX.length);
    const previous = this.records.get(node);
    const next = observeLease(previous, lease, now);
    if (!next || next === previous) return;
    const wasExpired = previous !== undefined && leaseExpired(previous, now, this.graceMs);
    this.records.set(node, next);
    if (wasExpired) this.notify(node);
    this.schedule(next);
  }

  private forget(lease: Lease): void {
    const node = (lease.metadata?.name ?? '').slice(AGENT_LEASE_PREFIX.length);
    const record = this.records.get(node);
    if (!record) return;
    this.records.delete(node);
    clearTimeout(this.timers.get(node));
    this.timers.delete(node);
    if (leaseExpired(record, this.now(), this.graceMs)) this.notify(node);
  }

  /** Expiry is a moment, not an event: a timer fires just after it. */
  private schedule(record: LeaseRecord): void {
    clearTimeout(this.timers.get(record.node));
    const delay = Math.max(0, record.observedAtMs + record.durationMs + this.graceMs - this.now()) + 1;
    const timer = setTimeout(() => {
      this.timers.delete(record.node);
      if (this.records.get(record.node) === record) this.notify(record.node);
    }, delay);
    timer.unref();
    this.timers.set(record.node, timer);
  }

  private notify(node: string): void {
    for (const fn of this.listeners) fn(node);
  }
}
