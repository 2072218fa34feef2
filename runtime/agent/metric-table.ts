/**
 * The agent's metric classes (ArpMetrics, NatMetrics, AnnounceMetrics) declare their metrics as
 * one table each, `field: counter(name, labels, help)` (the name and label names first, as the
 * exposition and the README write them: `juneau_agent_arp_probes_total{address}`), and extend
 * `metricsOf(table)`: its constructor registers every entry on the process's RuntimeMetrics
 * registry, and each field's type (a Counter or a Gauge with the entry's label names) comes from
 * its entry.
 */
import type { Counter, Gauge } from 'prom-client';
import type { RuntimeMetrics } from '../kube/metrics';

interface MetricSpec<K extends 'counter' | 'gauge', L extends string> {
  readonly kind: K;
  /** The name after the registry's prefix (`juneau_`). */
  readonly name: string;
  readonly help: string;
  readonly labels: readonly L[];
}

type AnySpec = MetricSpec<'counter', string> | MetricSpec<'gauge', string>;

export function counter<L extends string>(name: string, labels: readonly L[], help: string) {
  return { kind: 'counter', name, help, labels } as const satisfies MetricSpec<'counter', L>;
}

export function gauge<L extends string>(name: string, labels: readonly L[], help: string) {
  return { kind: 'gauge', name, help, labels } as const satisfies MetricSpec<'gauge', L>;
}

/** The registered metrics of a table, field by field. */
export type MetricsOf<T extends Record<string, AnySpec>> = {
  readonly [F in keyof T]: T[F] extends MetricSpec<'counter', infer L>
    ? Counter<L>
    : T[F] extends MetricSpec<'gauge', infer L>
      ? Gauge<L>
      : never;
};

/** A base class whose constructor registers `table` and sets one field per entry. */
export function metricsOf<T extends Record<string, AnySpec>>(table: T): new (metrics: RuntimeMetrics) => MetricsOf<T> {
  return class {
    constructor(metrics: RuntimeMetrics) {
      for (const [field, spec] of Object.entries(table)) {
        const metric =
          spec.kind === 'counter'
            ? metrics.registerCounter(spec.name, spec.help, spec.labels)
            : metrics.registerGauge(spec.name, spec.help, spec.labels);
        (this as Record<string, unknown>)[field] = metric;
      }
    }
  } as new (metrics: RuntimeMetrics) => MetricsOf<T>;
}
