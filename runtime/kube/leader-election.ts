/**
 * Lease leader election over coordination.k8s.io/v1, after client-go's leaderelection:
 * - a candidate takes the Lease when it is free (no holder, as after `release()`) or when
 *   its record has not changed for `leaseDuration` by the candidate's own clock (observed
 *   time, not the record's renewTime, so clock skew between nodes does not matter);
 * - the leader renews every `retryPeriod`; if it cannot renew for `renewDeadline` it stops
 *   leading, which is before anyone else may take over (renewDeadline < leaseDuration). A timer
 *   enforces the deadline, and every Lease call times out below it, so a hung connection to the
 *   API server cannot keep a replica leading past it (client-go bounds each renew the same way);
 * - every write carries the resourceVersion read, so two candidates never both win;
 * - a candidate that waits on a held Lease tries again at the instant that record would expire by
 *   its clock, if that comes before its next retry: a crashed leader is replaced at the expiry, not
 *   up to 2.2 retry periods after it. Fed the Lease by a watch (`observe`), it counts the expiry from
 *   the leader's last renewal give or take a watch event, not from its own last read.
 */
import { toMicroTime } from './conditions';
import { silentLogger, type Logger } from './log';
import { resourcePath, Resources } from './resources';
import { isAlreadyExists, isConflict, isNotFound, type RestClient } from './rest';
import type { KubeObject } from './types';
import { Sleeper } from './sleep';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

/** What the elector needs from the API; `restLeaseClient` is the real one. Each call must end when `signal` aborts. */
export interface LeaseClient {
  get(namespace: string, name: string, signal?: AbortSignal): Promise<Lease | undefined>;
  create(lease: Lease, signal?: AbortSignal): Promise<Lease>;
  /** Must fail (409) when `lease.metadata.resourceVersion` is stale. */
  update(lease: Lease, signal?: AbortSignal): Promise<Lease>;
}

export function restLeaseClient(rest: RestClient): LeaseClient {
  const path = (lease: Lease, named: boolean) =>
    resourcePath(Resources.leases, lease.metadata?.namespace, named ? lease.metadata?.name : undefined);
  return {
    get: (namespace, name, signal) =>
      rest.request<Lease>('GET', resourcePath(Resources.leases, namespace, name), { signal }).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      }),
    create: (lease, signal) => rest.request<Lease>('POST', path(lease, false), { body: lease, signal }),
    update: (lease, signal) => rest.request<Lease>('PUT', path(lease, true), { body: lease, signal }),
  };
}

export type LeaseDecision =
  | { readonly action: 'create' | 'update'; readonly spec: LeaseSpec }
  | { readonly action: 'wait'; readonly holder: string };

/**
 * Pure: given the Lease as read (undefined if absent), when its current record was first
 * observed, and now, what should `identity` write to acquire or renew it?
 */
export function decideLease(
  current: LeaseSpec | undefined,
  observedAtMs: number,
  identity: string,
  leaseDurationSeconds: number,
  now: Date,
): LeaseDecision {
  const stamp = toMicroTime(now);
  if (current === undefined) {
    return {
      action: 'create',
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds,
        acquireTime: stamp,
        renewTime: stamp,
        leaseTransitions: 0,
      },
    };
  }
  const holder = current.holderIdentity ?? '';
  const duration = (current.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
  const expired = observedAtMs + duration <= now.getTime();
  if (holder !== '' && holder !== identity && !expired) return { action: 'wait', holder };
  if (holder === identity) {
    return { action: 'update', spec: { ...current, leaseDurationSeconds, renewTime: stamp } };
  }
  const transitions = (current.leaseTransitions ?? 0) + 1;
  return {
    action: 'update',
    spec: {
      holderIdentity: identity,
      leaseDurationSeconds,
      acquireTime: stamp,
      renewTime: stamp,
      leaseTransitions: transitions,
    },
  };
}

export interface LeaderElectionOptions {
  readonly namespace: string;
  readonly name: string;
  /** Unique per replica, e.g. the pod name. */
  readonly identity: string;
  /** @default 15_000 (client-go, controller-runtime) */
  readonly leaseDurationMs?: number;
  /** @default 10_000 */
  readonly renewDeadlineMs?: number;
  /** @default 2_000 */
  readonly retryPeriodMs?: number;
  /** Timeout of each Lease call; must be below renewDeadline. @default renewDeadline / 2 */
  readonly callTimeoutMs?: number;
  /** Called on becoming leader; `signal` aborts when leadership is lost or released. */
  readonly onStartedLeading?: (signal: AbortSignal) => void;
  readonly onStoppedLeading?: () => void;
  /** Called when the observed holder changes (including to ''). */
  readonly onNewLeader?: (identity: string) => void;
  /** Called after every attempt to take or renew the Lease: with its error, or undefined when the
   * API server answered (taken, renewed, or held by another). For operator-facing reports. */
  readonly onAttempt?: (err: unknown) => void;
  readonly logger?: Logger;
}

/** client-go's JitterFactor: candidates retry at a random point of [1, 2.2) x retryPeriod. */
const JITTER = 1.2;
/** A candidate waiting for a record to expire wakes this long after the instant, so a timer that fires early still finds it expired. */
const EXPIRY_MARGIN_MS = 5;

export function validateTimings(
  leaseDurationMs: number,
  renewDeadlineMs: number,
  retryPeriodMs: number,
  callTimeoutMs = renewDeadlineMs / 2,
): void {
  if (!(leaseDurationMs > renewDeadlineMs))
    throw new Error(`leaseDuration (${leaseDurationMs} ms) must be greater than renewDeadline (${renewDeadlineMs} ms)`);
  if (!(callTimeoutMs > 0 && callTimeoutMs < renewDeadlineMs))
    throw new Error(
      `callTimeout (${callTimeoutMs} ms) must be greater than 0 and less than renewDeadline (${renewDeadlineMs} ms)`,
    );
  if (!(renewDeadlineMs > JITTER * retryPeriodMs))
    throw new Error(
      `renewDeadline (${renewDeadlineMs} ms) must be greater than ${JITTER} x retryPeriod (${retryPeriodMs} ms)`,
    );
  if (!(retryPeriodMs >= 1)) throw new Error(`retryPeriod (${retryPeriodMs} ms) must be at least 1 ms`);
}

export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly callTimeoutMs: number;
  private readonly logger: Logger;
  /** The Lease as last read or written, and when (our clock) its record last changed. */
  private observed: Lease | undefined;
  private observedAtMs = 0;
  private observedRecord = '';
  private lastRenewMs = 0;
  /** Steps down at lastRenew + renewDeadline even while a Lease call is still in flight. */
  private deadlineTimer: NodeJS.Timeout | undefined;
  private leading: AbortController | undefined;
  private stopped = false;
  private renewedWhileStopping = false;
  private readonly sleeper = new Sleeper();
  private loop: Promise<void> | undefined;
  /** A nudge that came while no sleep was in progress: the next sleep is skipped. */
  private nudged = false;
  /** The last attempt was answered with another holder's live record (so waiting for its expiry is sound). */
  private waitedOnHolder = false;

  constructor(
    private readonly client: LeaseClient,
    private readonly options: LeaderElectionOptions,
  ) {
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.callTimeoutMs = options.callTimeoutMs ?? Math.floor(this.renewDeadlineMs / 2);
    validateTimings(this.leaseDurationMs, this.renewDeadlineMs, this.retryPeriodMs, this.callTimeoutMs);
    this.logger = (options.logger ?? silentLogger).child({
      lease: `${options.namespace}/${options.name}`,
      identity: options.identity,
    });
  }

  get isLeader(): boolean {
    return this.leading !== undefined;
  }

  /**
   * Leading and renewed within renewDeadline, by the clock now. The deadline timer steps down only
   * once the event loop runs it; a pass that blocks the loop past the deadline still sees
   * `isLeader`, so a fenced client asks this before every write leaves (L1, RestClient.fenced).
   */
  holdsLease(): boolean {
    return this.leading !== undefined && Date.now() <= this.lastRenewMs + this.renewDeadlineMs;
  }

  /** The holder as last observed ('' when free, undefined before the first read). */
  get leader(): string | undefined {
    return this.observed?.spec?.holderIdentity;
  }

  /** Starts campaigning in the background. */
  start(): void {
    this.stopped = false;
    this.renewedWhileStopping = false;
    this.loop ??= this.run().finally(() => (this.loop = undefined));
  }

  /**
   * The Lease may have changed (a watch saw it): a candidate tries now instead of at its next
   * retry, so a Lease released by a stopping leader is taken within a watch event's latency, not a
   * retry period later. Ignored while leading: the leader renews on its own schedule.
   */
  nudge(): void {
    if (this.leading || this.stopped) return;
    this.nudged = true;
    this.sleeper.wake();
  }

  /**
   * The Lease as a watch delivered it (undefined: deleted). A candidate counts the record's
   * expiry from when it first saw it, so a watch that delivers each renewal makes that the
   * renewal's instant (a later delivery only delays a takeover, never hastens it); a Lease without a
   * holder, or gone, is tried at once (nudge). Ignored while leading or stopped: the leader's own
   * reads and writes are its record.
   */
  observe(lease: Lease | undefined): void {
    if (this.leading || this.stopped) return;
    if (lease) this.remember(lease);
    if (!lease?.spec?.holderIdentity) this.nudge();
  }

  /**
   * Stops campaigning; if leading, stops leading and clears holderIdentity so a standby
   * takes over at its next retry instead of waiting out the lease.
   */
  async release(): Promise<void> {
    this.stopped = true;
    this.sleeper.wake();
    await this.loop;
    // Also when the write that took the Lease landed as release() began; never after losing it.
    const held = this.leading !== undefined || this.renewedWhileStopping;
    this.stepDown();
    if (!held) return;
    const lease = this.observed;
    if (!lease?.spec || lease.spec.holderIdentity !== this.options.identity) return;
    const stamp = toMicroTime(new Date());
    const spec: LeaseSpec = {
      ...lease.spec,
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: stamp,
      renewTime: stamp,
    };
    try {
      this.remember(await this.client.update({ ...lease, spec }, AbortSignal.timeout(this.callTimeoutMs)));
      this.logger.info('released lease');
    } catch (err) {
      this.logger.warn('could not release lease; a standby takes over when it expires', { err });
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      // The record written carries this instant; others count its lease from when they see it, later.
      const attemptStartMs = Date.now();
      const renewed = await this.tryAcquireOrRenew();
      if (this.stopped) {
        this.renewedWhileStopping = renewed;
        break;
      }
      if (renewed) {
        this.lastRenewMs = attemptStartMs;
        if (!this.leading) this.startLeading();
        this.armDeadline();
      } else if (this.leading && this.leader !== this.options.identity && this.leader !== undefined) {
        this.logger.warn('lost lease: another candidate holds it', { holder: this.leader });
        this.stepDown();
      }
      // Not renewed for renewDeadline: armDeadline()'s timer steps down, even mid-call.
      if (this.nudged && !this.leading) {
        this.nudged = false;
        continue;
      }
      await this.sleeper.sleep(this.leading ? this.retryPeriodMs : this.candidateWaitMs());
      this.nudged = false;
    }
  }

  /**
   * A candidate's sleep: client-go's jittered retry, or less when the record it waits on expires
   * sooner (just past that instant, so the next attempt finds it expired). Only after an attempt
   * the API server answered with another holder: one that failed retries at the jittered period.
   */
  private candidateWaitMs(): number {
    const jittered = this.retryPeriodMs * (1 + Math.random() * JITTER);
    if (!this.waitedOnHolder) return jittered;
    // From the record as observed now: a watch may have delivered a newer one since the attempt.
    return Math.min(jittered, Math.max(0, this.recordExpiresMs() - Date.now()) + EXPIRY_MARGIN_MS);
  }

  /** When the observed record expires by our clock (the duration it states, as decideLease reads it). */
  private recordExpiresMs(): number {
    const seconds = this.observed?.spec?.leaseDurationSeconds ?? Math.ceil(this.leaseDurationMs / 1000);
    return this.observedAtMs + seconds * 1000;
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    this.waitedOnHolder = false;
    try {
      const current = await this.client.get(namespace, name, AbortSignal.timeout(this.callTimeoutMs));
      if (current) this.remember(current);
      const seconds = Math.ceil(this.leaseDurationMs / 1000);
      const decision = decideLease(current?.spec, this.observedAtMs, identity, seconds, new Date());
      if (decision.action === 'wait') {
        this.waitedOnHolder = true;
        this.options.onAttempt?.(undefined);
        return false;
      }
      const lease: Lease = {
        ...current,
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { ...current?.metadata, namespace, name },
        spec: decision.spec,
      };
      const signal = AbortSignal.timeout(this.callTimeoutMs);
      this.remember(
        decision.action === 'create'
          ? await this.client.create(lease, signal)
          : await this.client.update(lease, signal),
      );
      this.options.onAttempt?.(undefined);
      return true;
    } catch (err) {
      // A conflict (a stale update, or a create that lost the race) means another candidate wrote
      // first; anything else is retried the same way.
      this.logger.debug('lease attempt failed', { err });
      this.options.onAttempt?.(isConflict(err) || isAlreadyExists(err) ? undefined : err);
      return false;
    }
  }

  private remember(lease: Lease): void {
    const record = JSON.stringify(lease.spec ?? {});
    const previousHolder = this.observed?.spec?.holderIdentity;
    this.observed = lease;
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAtMs = Date.now();
    }
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== previousHolder) this.options.onNewLeader?.(holder);
  }

  private startLeading(): void {
    this.leading = new AbortController();
    this.logger.info('became leader');
    this.options.onStartedLeading?.(this.leading.signal);
  }

  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    const left = this.lastRenewMs + this.renewDeadlineMs - Date.now();
    this.deadlineTimer = setTimeout(
      () => {
        if (!this.leading) return;
        this.logger.warn('lost lease: not renewed within renewDeadline', { renewDeadlineMs: this.renewDeadlineMs });
        this.stepDown();
      },
      Math.max(0, left),
    );
  }

  private stepDown(): void {
    clearTimeout(this.deadlineTimer);
    const leading = this.leading;
    if (!leading) return;
    this.leading = undefined;
    leading.abort();
    this.options.onStoppedLeading?.();
  }
}
