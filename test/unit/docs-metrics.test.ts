// docs/metrics.md and docs/grafana-dashboard.json against the metrics the binaries register: the
// page's table is the one rendered from the registries (scripts/metrics-reference.ts), every
// metric name written in runtime/ is on it, and the dashboard's and the alerts' queries name only
// metrics that exist.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { JUNEAU_ALERTS } from '../../constructs/shared/install/monitoring';
import { metricsCatalog, withMetricsReference } from '../../scripts/metrics-reference';

const ROOT = path.join(__dirname, '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const catalog = metricsCatalog();

/** The series names a metric gives: a histogram's `_bucket`, `_sum` and `_count`. */
const seriesNames = new Set(
  catalog.flatMap((m) => (m.type === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => m.name + s) : [m.name])),
);

/** The `juneau_*` metric names in a PromQL expression. */
const metricsIn = (expr: string) => [...expr.matchAll(/\bjuneau_[a-z0-9_]+/g)].map((m) => m[0]);

describe('docs/metrics.md', () => {
  test('its table is the one rendered from the registries (run `npx tsx scripts/metrics-reference.ts` after adding a metric)', () => {
    const page = read('docs/metrics.md');
    expect(withMetricsReference(page)).toBe(page);
  });

  test('every metric name written in runtime/ is registered, so on the page', () => {
    const files = fs
      .readdirSync(path.join(ROOT, 'runtime'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'));
    const written = files.flatMap((f) =>
      [
        ...read(path.join('runtime', f)).matchAll(
          /\b(?:counter|gauge|registerCounter|registerGauge|registerGaugeOnScrape|registerHistogram)\(\s*'([a-z0-9_]+)'/g,
        ),
      ].map((m) => `juneau_${m[1]}`),
    );
    expect(written.length).toBeGreaterThan(20);
    const names = new Set(catalog.map((m) => m.name));
    expect(written.filter((n) => !names.has(n))).toEqual([]);
  });

  test('names every alert of the PrometheusRule', () => {
    const page = read('docs/metrics.md');
    expect(JUNEAU_ALERTS.map((a) => a.alert).filter((a) => !page.includes(`\`${a}\``))).toEqual([]);
  });
});

describe('the alerts and the Grafana dashboard', () => {
  test("every alert's expression names only existing metrics", () => {
    const unknown = JUNEAU_ALERTS.flatMap((a) => metricsIn(a.expr).filter((n) => !seriesNames.has(n)));
    expect(JUNEAU_ALERTS.every((a) => metricsIn(a.expr).length > 0)).toBe(true);
    expect(unknown).toEqual([]);
  });

  test("docs/grafana-dashboard.json parses, and every panel's queries name only existing metrics", () => {
    const dashboard = JSON.parse(read('docs/grafana-dashboard.json')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));
    expect(exprs.length).toBeGreaterThanOrEqual(10);
    expect(exprs.filter((e) => metricsIn(e.expr).length === 0)).toEqual([]);
    expect(
      exprs.flatMap((e) =>
        metricsIn(e.expr)
          .filter((n) => !seriesNames.has(n))
          .map((n) => `${e.panel}: ${n}`),
      ),
    ).toEqual([]);
  });
});
