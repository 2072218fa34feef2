/**
 * An Event recorder writing events.k8s.io/v1 Events, aggregated like client-go's
 * tools/events: repeats of one (regarding, related, action, reason) within `seriesWindowMs`
 * become one Event whose `series.count` grows. The second occurrence is written at once;
 * later ones only in memory, flushed every `flushIntervalMs`, so a hot loop costs at most
 * one write per interval per key. The `note` of the first occurrence is kept.
 */
import { toMicroTime } from './conditions';
import { Resources, apiVersionOf, type ResourceType } from './resources';
import { isNotFound, type RestClient } from './rest';
import { silentLogger, type Logger } from './log';
import type { KubeObject } from './types';

export interface ObjectReference {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly uid?: string;
}

export type EventType = 'Normal' | 'Warning';

export interface EventSpec {
  readonly regarding: ObjectReference;
  readonly related?: ObjectReference;
  readonly type: EventType;
  /** CamelCase, e.g. `Allocated`. */
  readonly reason: string;
  /** What was done or failed, CamelCase, e.g. `Allocate`. */
  readonly action: string;
  /** Human-readable, at most 1 kB (the API server's limit). */
  readonly note: string;
}

/**
 * An Event a pure plan asks for; the reconcile shell (controller/shell.ts) records it about the
 * object the plan is for, with the action of that reconciler.
 */
export interface PlannedEvent {
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
}

/**
 * The Event of a phase transition: the reason and message of the condition that explains the new
 * phase (or the phase itself), a Warning when the phase is one a person should look at.
 */
export function phaseEvent(
  phase: string,
  cause: { readonly reason: string; readonly message: string } | undefined,
  warning: boolean,
): PlannedEvent {
  return {
    type: warning ? 'Warning' : 'Normal',
    reason: cause?.reason ?? phase,
    message: `phase ${phase}: ${cause?.message ?? ''}`.trim(),
  };
}

/** The wire shape of events.k8s.io/v1 Event (times as MicroTime strings). */
export interface KubeEvent extends KubeObject, Omit<EventSpec, 'note'> {
  note: string;
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  series?: { count: number; lastObservedTime: string };
}

/** A reference to `object` for `regarding`/`related`. */
export function referenceTo(object: KubeObject, type?: ResourceType): ObjectReference {
  return {
    apiVersion: object.apiVersion ?? (type ? apiVersionOf(type) : undefined),
    kind: object.kind ?? type?.kind,
    namespace: object.metadata?.namespace,
    name: object.metadata?.name,
    uid: object.metadata?.uid,
  };
}

/** What to write for one observation: nothing, a new Event, or a series patch. */
export type RecordDecision =
  | { readonly op: 'create'; readonly key: string; readonly event: KubeEvent }
  | { readonly op: 'patch'; readonly key: string; readonly event: KubeEvent }
  | { readonly op: 'none' };

interface CachedEvent {
  event: KubeEvent;
  lastObserved: number;
  /** Series changed since it was last written. */
  dirty: boolean;
}

/** The pure aggregation core: decides writes from observations and the clock. */
export class EventSeriesCache {
  private readonly entries = new Map<string, CachedEvent>();

  constructor(
    private readonly reporter: { readonly controller: string; readonly instance: string },
    /** client-go's finishTime: a quiet key this old starts a new Event. */
    private readonly seriesWindowMs = 6 * 60_000,
  ) {}

  observe(spec: EventSpec, now: Date): RecordDecision {
    const key = seriesKey(spec);
    const cached = this.entries.get(key);
    if (!cached || now.getTime() - cached.lastObserved > this.seriesWindowMs) {
      const event = this.newEvent(spec, now);
      this.entries.set(key, { event, lastObserved: now.getTime(), dirty: false });
      return { op: 'create', key, event };
    }
    cached.lastObserved = now.getTime();
    const count = (cached.event.series?.count ?? 1) + 1;
    cached.event = { ...cached.event, series: { count, lastObservedTime: toMicroTime(now) } };
    if (count === 2) return { op: 'patch', key, event: cached.event };
    cached.dirty = true;
    return { op: 'none' };
  }

  /** Series with unwritten counts; marks them written. Drops keys past the window. */
  takeDirty(now: Date): Array<{ key: string; event: KubeEvent }> {
    const out: Array<{ key: string; event: KubeEvent }> = [];
    for (const [key, entry] of this.entries) {
      if (entry.dirty) out.push({ key, event: entry.event });
      entry.dirty = false;
      if (now.getTime() - entry.lastObserved > this.seriesWindowMs) this.entries.delete(key);
    }
    return out;
  }

  /** The Event was gone on the server (TTL): forget it so the next repeat creates one. */
  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  private newEvent(spec: EventSpec, now: Date): KubeEvent {
    const namespace = spec.regarding.namespace || 'default';
    // client-go's naming: <regarding name>.<unix nanos in hex>; unique enough per reporter.
    const nanos = BigInt(now.getTime()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
    return {
      apiVersion: apiVersionOf(Resources.events),
      kind: 'Event',
      metadata: { name: `${spec.regarding.name ?? 'unknown'}.${nanos.toString(16)}`, namespace },
      ...spec,
      note: spec.note.length > 1024 ? spec.note.slice(0, 1021) + '...' : spec.note,
      eventTime: toMicroTime(now),
      reportingController: this.reporter.controller,
      reportingInstance: this.reporter.instance,
    };
  }
}

function seriesKey(spec: EventSpec): string {
  const ref = (r: ObjectReference | undefined): string =>
    r ? [r.apiVersion, r.kind, r.namespace, r.name, r.uid].join('/') : '';
  return [ref(spec.regarding), ref(spec.related), spec.action, spec.reason].join('|');
}

export interface EventRecorderOptions {
  /** e.g. `juneau.io/controller`. */
  readonly reportingController: string;
  /** e.g. the pod name; distinguishes replicas. */
  readonly reportingInstance: string;
  /** @default 30_000 */
  readonly flushIntervalMs?: number;
  /** @default 6 minutes (client-go) */
  readonly seriesWindowMs?: number;
  readonly logger?: Logger;
  readonly clock?: () => Date;
}

/** The two writes the recorder needs; a RestClient is one. */
export type EventSink = Pick<RestClient, 'create' | 'patch'>;

export class EventRecorder {
  private readonly cache: EventSeriesCache;
  private readonly clock: () => Date;
  private readonly logger: Logger;
  private readonly timer: NodeJS.Timeout;
  /** The last write per series key: writes of one key run in order (create before patch). */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(
    private readonly sink: EventSink,
    options: EventRecorderOptions,
  ) {
    this.cache = new EventSeriesCache(
      { controller: options.reportingController, instance: options.reportingInstance },
      options.seriesWindowMs,
    );
    this.clock = options.clock ?? (() => new Date());
    this.logger = options.logger ?? silentLogger;
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 30_000);
    this.timer.unref();
  }

  normal(regarding: ObjectReference, reason: string, action: string, note: string): void {
    this.record({ regarding, type: 'Normal', reason, action, note });
  }

  warning(regarding: ObjectReference, reason: string, action: string, note: string): void {
    this.record({ regarding, type: 'Warning', reason, action, note });
  }

  /** Fire and forget: an Event that cannot be written is logged, never thrown. */
  record(spec: EventSpec): void {
    const decision = this.cache.observe(spec, this.clock());
    if (decision.op === 'create') this.enqueue(decision.key, () => this.create(decision.event));
    else if (decision.op === 'patch') this.enqueue(decision.key, () => this.patchSeries(decision.key, decision.event));
  }

  /** Writes series counts observed since the last flush, and waits for writes in flight. */
  async flush(): Promise<void> {
    for (const { key, event } of this.cache.takeDirty(this.clock()))
      this.enqueue(key, () => this.patchSeries(key, event));
    await Promise.all([...this.writes.values()]);
  }

  /** Flushes and stops the timer. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private enqueue(key: string, write: () => Promise<void>): void {
    const next = (this.writes.get(key) ?? Promise.resolve()).then(write);
    this.writes.set(key, next);
    void next.then(() => {
      if (this.writes.get(key) === next) this.writes.delete(key);
    });
  }

  private async create(event: KubeEvent): Promise<void> {
    try {
      await this.sink.create(Resources.events, event);
    } catch (err) {
      this.logger.warn('event not recorded', { reason: event.reason, regarding: event.regarding.name, err });
    }
  }

  private async patchSeries(key: string, event: KubeEvent): Promise<void> {
    const { namespace, name } = event.metadata ?? {};
    try {
      await this.sink.patch(Resources.events, namespace, name ?? '', 'merge', { series: event.series });
    } catch (err) {
      // Events expire (kube-apiserver --event-ttl, 1h by default); start a new one next time.
      if (isNotFound(err)) this.cache.forget(key);
      else this.logger.warn('event series not updated', { reason: event.reason, regarding: event.regarding.name, err });
    }
  }
}
