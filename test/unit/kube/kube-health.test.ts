import { HealthServer, type HealthCheck, parseListenAddress, runChecks } from '../../../runtime/kube/health';
import { RuntimeMetrics } from '../../../runtime/kube/metrics';

async function fetchText(port: number, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: await res.text() };
}

describe('parseListenAddress', () => {
  it('accepts :port, host:port and [v6]:port', () => {
    expect(parseListenAddress(':8081')).toEqual({ host: undefined, port: 8081 });
    expect(parseListenAddress('127.0.0.1:0')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseListenAddress('[::1]:9090')).toEqual({ host: '::1', port: 9090 });
  });
  it('names a bad value', () => {
    expect(() => parseListenAddress('8081')).toThrow("listen address '8081' is not host:port");
    expect(() => parseListenAddress(':70000')).toThrow("listen address ':70000'");
  });
});

describe('runChecks', () => {
  it('fails if any check returns false or throws, listing each', async () => {
    const checks = new Map<string, HealthCheck>([
      ['informers-synced', () => true],
      ['leader-or-standby', async () => false],
      [
        'webhook-cert',
        () => {
          throw new Error('certificate not loaded');
        },
      ],
    ]);
    const { ok, body } = await runChecks(checks);
    expect(ok).toBe(false);
    expect(body).toBe(
      '[+]informers-synced ok\n[-]leader-or-standby failed\n[-]webhook-cert failed: certificate not loaded\ncheck failed\n',
    );
  });
});

/** Starts `server`, hands its ports to `use`, and stops it, also when `use` fails. */
async function serving(
  server: HealthServer,
  use: (ports: Awaited<ReturnType<HealthServer['start']>>) => Promise<void>,
): Promise<void> {
  const ports = await server.start();
  try {
    await use(ports);
  } finally {
    await server.stop();
  }
}

describe('HealthServer', () => {
  it('serves /healthz, /readyz and /metrics on one address', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    metrics.setPoolUsage('default', 1, 10);
    const server = new HealthServer({ healthAddr: '127.0.0.1:0', metrics });
    let synced = false;
    server.addReadinessCheck('informers-synced', () => synced);
    await serving(server, async ({ healthPort, metricsPort }) => {
      expect(metricsPort).toBe(healthPort);
      expect(await fetchText(healthPort!, '/healthz')).toEqual({ status: 200, text: 'ok\n' });
      expect((await fetchText(healthPort!, '/readyz')).status).toBe(503);
      synced = true;
      expect(await fetchText(healthPort!, '/readyz')).toEqual({ status: 200, text: '[+]informers-synced ok\nok\n' });
      expect((await fetchText(healthPort!, '/metrics')).text).toContain(
        'juneau_pool_size_addresses{pool="default"} 10',
      );
      expect((await fetchText(healthPort!, '/nope')).status).toBe(404);
    });
  });

  it('serves /metrics on a separate address when asked, and not on the health one', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    const server = new HealthServer({ healthAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', metrics });
    await serving(server, async ({ healthPort, metricsPort }) => {
      expect(metricsPort).not.toBe(healthPort);
      expect((await fetchText(metricsPort!, '/metrics')).status).toBe(200);
      expect((await fetchText(healthPort!, '/metrics')).status).toBe(404);
    });
  });

  it("'0' turns a listener off: both off starts nothing; metrics off keeps /metrics off the health address", async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    const none = new HealthServer({ healthAddr: '0', metricsAddr: '0', metrics });
    expect(await none.start()).toEqual({});
    await none.stop();
    const healthOnly = new HealthServer({ healthAddr: '127.0.0.1:0', metricsAddr: '0', metrics });
    await serving(healthOnly, async ({ healthPort, metricsPort }) => {
      expect(metricsPort).toBeUndefined();
      expect((await fetchText(healthPort!, '/healthz')).status).toBe(200);
      expect((await fetchText(healthPort!, '/metrics')).status).toBe(404);
    });
  });
});
