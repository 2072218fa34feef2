/**
 * One prom-client Registry per process with the metrics every Juneau component shares;
 * other modules add theirs with `registerCounter`/`registerGauge`/... on the same registry.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { TerminalError, type Reconciler } from './workqueue';

export interface RuntimeMetricsOptions {
  /** Metric name prefix. @default 'juneau' */
  readonly prefix?: string;
  /** Process metrics (CPU, memory, event loop lag). @default true */
  readonly processMetrics?: boolean;
}

export class RuntimeMetrics {
  readonly registry = new Registry();
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileDuration: Histogram<'controller'>;
  readonly queueDepth: Gauge<'queue'>;
  readonly poolAllocated: Gauge<'pool'>;
  readonly poolSize: Gauge<'pool'>;
  private readonly prefix: string;

  constructor(options: RuntimeMetricsOptions = {}) {
    this.prefix = options.prefix ?? 'juneau';
    const registers = [this.registry];
    this.reconcileTotal = new Counter({
      name: this.name('reconcile_total'),
      help: 'Reconcile passes by controller and result (success, requeue, error, terminal).',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileDuration = new Histogram({
      name: this.name('reconcile_duration_seconds'),
      help: 'Time spent in one reconcile pass, by controller.',
      labelNames: ['controller'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.queueDepth = new Gauge({
      name: this.name('workqueue_depth'),
      help: 'Keys waiting in a work queue.',
      labelNames: ['queue'],
      registers,
    });
    this.poolAllocated = new Gauge({
      name: this.name('pool_allocated_addresses'),
      help: 'Addresses allocated from a pool.',
      labelNames: ['pool'],
      registers,
    });
    this.poolSize = new Gauge({
      name: this.name('pool_size_addresses'),
      help: 'Addresses a pool can hand out.',
      labelNames: ['pool'],
      registers,
    });
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: `${this.prefix}_` });
  }

  /** `<prefix>_<suffix>`; use it for metrics other modules register. */
  name(suffix: string): string {
    return `${this.prefix}_${suffix}`;
  }

  registerCounter<L extends string>(suffix: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name: this.name(suffix), help, labelNames, registers: [this.registry] });
  }

  registerGauge<L extends string>(suffix: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge({ name: this.name(suffix), help, labelNames, registers: [this.registry] });
  }

  /**
   * A gauge whose series are read at each scrape: `read` sets them from the caches through `set`
   * (the series of the previous scrape are dropped first, so a gone object's series goes too).
   */
  registerGaugeOnScrape<L extends string>(
    suffix: string,
    help: string,
    labelNames: readonly L[],
    read: (set: (labels: Partial<Record<L, string>>, value: number) => void) => void,
  ): Gauge<L> {
    return new Gauge({
      name: this.name(suffix),
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        read((labels, value) => this.set(labels, value));
      },
    });
  }

  registerHistogram<L extends string>(
    suffix: string,
    help: string,
    labelNames: readonly L[] = [],
    buckets?: number[],
  ): Histogram<L> {
    return new Histogram({ name: this.name(suffix), help, labelNames, buckets, registers: [this.registry] });
  }

  /** A WorkQueue `onDepthChange` hook for the queue named `queue`. */
  queueDepthHook(queue: string): (depth: number) => void {
    return (depth) => this.queueDepth.set({ queue }, depth);
  }

  /** Wraps a reconciler to count its results (ReconcileResult, or what it threw) and time each pass. */
  instrument(controller: string, reconcile: Reconciler): Reconciler {
    return async (key) => {
      const stop = this.reconcileDuration.startTimer({ controller });
      try {
        const result = await reconcile(key);
        this.reconcileTotal.inc({ controller, result: result.kind === 'requeueAfter' ? 'requeue' : 'success' });
        return result;
      } catch (err) {
        this.reconcileTotal.inc({ controller, result: err instanceof TerminalError ? 'terminal' : 'error' });
        throw err;
      } finally {
        stop();
      }
    };
  }

  /** Sets the allocation gauges of one pool (AP-3's size and used). */
  setPoolUsage(pool: string, allocated: number, size: number): void {
    this.poolAllocated.set({ pool }, allocated);
    this.poolSize.set({ pool }, size);
  }

  /** Text exposition for `/metrics`. */
  exposition(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
