// The metrics listener's authentication and authorization (runtime/kube/metrics-auth.ts) with a
// fake API server's reviews: the decisions, what is cached and for how long, that the caches stay
// within their bound whatever a flood of tokens does, and the HTTPS listener of HealthServer
// answering 401/403/200. test/cluster/metrics-auth.test.ts asks a real kube-apiserver.
import * as https from 'node:https';
import { BoundedTtlCache, MetricsAuth, type ReviewedUser, type Reviews } from '../../../runtime/kube/metrics-auth';
import { HealthServer } from '../../../runtime/kube/health';
import { RuntimeMetrics } from '../../../runtime/kube/metrics';
import { readCertificateDir, secureMetricsFor, selfSignedCertificate } from '../../../runtime/kube/metrics-tls';
import { silentLogger } from '../../../runtime/kube/log';
import { RestClient } from '../../../runtime/kube/rest';
import { KubeConfig } from '@kubernetes/client-node';
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../temp-dir';

/** Tokens `good-*` are users; `reader` may get /metrics. Counts the reviews asked. */
function fakeReviews(): Reviews & { tokenReviews: number; accessReviews: number; tokensSeen: string[] } {
  const api = {
    tokenReviews: 0,
    accessReviews: 0,
    tokensSeen: [] as string[],
    async authenticate(token: string): Promise<ReviewedUser | undefined> {
      api.tokenReviews++;
      api.tokensSeen.push(token);
      if (token === 'reader') return { username: 'system:serviceaccount:monitoring:prometheus', groups: ['g'] };
      if (token.startsWith('good-')) return { username: token.slice(5) };
      return undefined;
    },
    async authorize(user: ReviewedUser, p: string, verb: string): Promise<boolean> {
      api.accessReviews++;
      return user.username === 'system:serviceaccount:monitoring:prometheus' && p === '/metrics' && verb === 'get';
    },
  };
  return api;
}

describe('BoundedTtlCache', () => {
  test('never holds more than maxEntries: the least recently used entry goes first', () => {
    const cache = new BoundedTtlCache<number>(3);
    for (let i = 0; i < 1000; i++) {
      cache.set(`k${i}`, i, 60_000);
      expect(cache.size).toBeLessThanOrEqual(3);
    }
    expect([cache.get('k996'), cache.get('k997'), cache.get('k998'), cache.get('k999')]).toEqual([
      undefined,
      997,
      998,
      999,
    ]);
    // A hit makes an entry the most recent: k997 outlives two newer entries.
    cache.get('k997');
    cache.set('a', 1, 60_000);
    cache.set('b', 2, 60_000);
    expect(cache.get('k997')).toBe(997);
    expect(cache.get('k998')).toBeUndefined();
  });

  test('an entry is gone once its TTL has passed, and dropped from the map', () => {
    let now = 0;
    const cache = new BoundedTtlCache<string>(10, () => now);
    cache.set('x', 'v', 1_000);
    now = 999;
    expect(cache.get('x')).toBe('v');
    now = 1_000;
    expect(cache.get('x')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test('refuses a bound below one entry', () => {
    expect(() => new BoundedTtlCache(0)).toThrow('a cache needs room for at least one entry, not 0');
  });
});

describe('MetricsAuth', () => {
  test('401 without a bearer token or with one the API server does not accept; 403 for a user not allowed; 200 for a reader', async () => {
    const api = fakeReviews();
    const auth = new MetricsAuth(api);
    expect(await auth.check(undefined, 'GET', '/metrics')).toMatchObject({ code: 401 });
    expect(await auth.check('Basic dXNlcjpwYXNz', 'GET', '/metrics')).toMatchObject({ code: 401 });
    expect(api.tokenReviews).toBe(0);
    expect(await auth.check('Bearer nope', 'GET', '/metrics')).toMatchObject({ code: 401 });
    expect(await auth.check('Bearer good-tenant', 'GET', '/metrics')).toEqual({
      code: 403,
      message: 'Forbidden: user "tenant" may not get /metrics',
    });
    expect(await auth.check('Bearer reader', 'GET', '/metrics')).toEqual({
      code: 200,
      user: 'system:serviceaccount:monitoring:prometheus',
    });
  });

  test('decisions are cached for their TTL: a scrape every 15 s asks the API server once a minute, a denial is asked again after 10 s', async () => {
    let now = 0;
    const api = fakeReviews();
    const auth = new MetricsAuth(api, { now: () => now });
    for (now = 0; now < 60_000; now += 15_000)
      expect((await auth.check('Bearer reader', 'GET', '/metrics')).code).toBe(200);
    expect([api.tokenReviews, api.accessReviews]).toEqual([1, 1]);
    now = 60_000;
    await auth.check('Bearer reader', 'GET', '/metrics');
    expect([api.tokenReviews, api.accessReviews]).toEqual([2, 2]);
    await auth.check('Bearer good-tenant', 'GET', '/metrics');
    now += 9_999;
    await auth.check('Bearer good-tenant', 'GET', '/metrics');
    expect(api.accessReviews).toBe(3);
    now += 1;
    await auth.check('Bearer good-tenant', 'GET', '/metrics');
    expect(api.accessReviews).toBe(4);
  });

  test('a flood of made-up tokens keeps both caches within maxEntries, and the reader is still served', async () => {
    const api = fakeReviews();
    const auth = new MetricsAuth(api, { maxEntries: 16 });
    let largest = 0;
    for (let i = 0; i < 5_000; i++) {
      await auth.check(`Bearer ${i % 2 ? 'junk' : 'good-user'}-${i}`, 'GET', '/metrics');
      largest = Math.max(largest, auth.cached.users, auth.cached.decisions);
    }
    console.log(`metrics auth cache: ${5_000} tokens, at most ${largest} entries held (bound 16)`);
    expect(largest).toBe(16);
    expect(api.tokenReviews).toBe(5_000);
    expect((await auth.check('Bearer reader', 'GET', '/metrics')).code).toBe(200);
  });

  test('at most maxInFlight reviews at once: the next caller gets 429 and no review is asked for it', async () => {
    const waiting: Array<() => void> = [];
    let asked = 0;
    let hold = true;
    const api: Reviews = {
      authenticate: (token) =>
        new Promise((resolve) => {
          asked++;
          if (hold) waiting.push(() => resolve({ username: token }));
          else resolve({ username: token });
        }),
      authorize: async () => true,
    };
    const auth = new MetricsAuth(api, { maxInFlight: 2 });
    const first = [auth.check('Bearer a', 'GET', '/metrics'), auth.check('Bearer b', 'GET', '/metrics')];
    expect(await auth.check('Bearer c', 'GET', '/metrics')).toMatchObject({ code: 429 });
    expect(asked).toBe(2);
    hold = false;
    waiting.forEach((go) => go());
    expect((await Promise.all(first)).map((d) => d.code)).toEqual([200, 200]);
    expect((await auth.check('Bearer c', 'GET', '/metrics')).code).toBe(200);
  });

  test('a review that fails is 500, not cached, and its cause goes to onError only', async () => {
    let fail = true;
    const errors: unknown[] = [];
    const api: Reviews = {
      authenticate: async () => {
        if (fail) throw new Error('connect ECONNREFUSED 10.0.0.1:6443');
        return { username: 'u' };
      },
      authorize: async () => true,
    };
    const auth = new MetricsAuth(api, { onError: (err) => errors.push(err) });
    expect(await auth.check('Bearer t', 'GET', '/metrics')).toEqual({
      code: 500,
      message: 'the API server did not review the request',
    });
    expect(String(errors[0])).toContain('ECONNREFUSED');
    fail = false;
    expect((await auth.check('Bearer t', 'GET', '/metrics')).code).toBe(200);
  });
});

describe('metrics serving certificates', () => {
  test('--metrics-secure=false or no listener: no secure metrics; --metrics-cert-dir: its pair, and a rotated pair once written whole', async () => {
    const rest = new RestClient(new KubeConfig());
    const off = { metricsAddr: '127.0.0.1:0', metricsSecure: false, metricsCertDir: undefined };
    expect(await secureMetricsFor(off, rest, silentLogger)).toBeUndefined();
    expect(
      await secureMetricsFor({ ...off, metricsAddr: '0', metricsSecure: true }, rest, silentLogger),
    ).toBeUndefined();
    const dir = tempDir('metrics-rotate');
    const a = await selfSignedCertificate(['a']);
    fs.writeFileSync(path.join(dir, 'tls.crt'), a.cert);
    fs.writeFileSync(path.join(dir, 'tls.key'), a.key);
    const secure = (await secureMetricsFor({ ...off, metricsSecure: true, metricsCertDir: dir }, rest, silentLogger))!;
    expect(secure.certificate).toEqual(a);
    expect(secure.reload!()).toBeUndefined();
    const b = await selfSignedCertificate(['b']);
    fs.writeFileSync(path.join(dir, 'tls.crt'), b.cert); // half-written: b's certificate, a's key
    expect(secure.reload!()).toBeUndefined();
    fs.writeFileSync(path.join(dir, 'tls.key'), b.key);
    expect(secure.reload!()).toEqual(b);
    expect(secure.reload!()).toBeUndefined();
  });

  test('a self-signed certificate names the listener host, the hostname and loopback', async () => {
    const { cert, key } = await selfSignedCertificate(['10.1.2.3', 'node-a', 'localhost']);
    const x = new X509Certificate(cert);
    expect(x.checkIP('10.1.2.3')).toBe('10.1.2.3');
    expect(x.checkHost('node-a')).toBe('node-a');
    expect(x.verify(x.publicKey)).toBe(true);
    expect(key).toContain('BEGIN PRIVATE KEY');
  });

  test('--metrics-cert-dir: a missing file and a key of another certificate are errors naming the file', async () => {
    const dir = tempDir('metrics-cert');
    expect(() => readCertificateDir(dir)).toThrow(`--metrics-cert-dir: cannot read ${path.join(dir, 'tls.crt')}`);
    const a = await selfSignedCertificate(['a']);
    const b = await selfSignedCertificate(['b']);
    fs.writeFileSync(path.join(dir, 'tls.crt'), a.cert);
    fs.writeFileSync(path.join(dir, 'tls.key'), b.key);
    expect(() => readCertificateDir(dir)).toThrow(
      `--metrics-cert-dir: ${dir}/tls.key is not the key of ${dir}/tls.crt`,
    );
    fs.writeFileSync(path.join(dir, 'tls.key'), a.key);
    expect(readCertificateDir(dir)).toEqual(a);
  });
});

/** GET over HTTPS (the self-signed certificate is not verified here, as a scraper told to skip it). */
function get(port: number, urlPath: string, token?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: urlPath,
        rejectUnauthorized: false,
        headers: token ? { Authorization: `Bearer ${token}` } : {},
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('HealthServer with secure metrics', () => {
  test('serves /metrics over HTTPS: 401, 403, 200; /healthz stays plain HTTP on its own address', async () => {
    const metrics = new RuntimeMetrics({ processMetrics: false });
    metrics.setPoolUsage('default', 1, 10);
    const api = fakeReviews();
    const server = new HealthServer({
      healthAddr: '127.0.0.1:0',
      metricsAddr: '127.0.0.1:0',
      metrics,
      secureMetrics: { certificate: await selfSignedCertificate(['127.0.0.1']), auth: new MetricsAuth(api) },
    });
    const { healthPort, metricsPort } = await server.start();
    try {
      const none = await get(metricsPort!, '/metrics');
      expect(none).toEqual({ status: 401, text: 'Unauthorized: a bearer token is needed\n' });
      expect((await get(metricsPort!, '/metrics', 'good-tenant')).status).toBe(403);
      const ok = await get(metricsPort!, '/metrics', 'reader');
      expect(ok.status).toBe(200);
      expect(ok.text).toContain('juneau_pool_size_addresses{pool="default"} 10');
      expect((await get(metricsPort!, '/other', 'reader')).status).toBe(404);
      expect(api.tokensSeen).toEqual(['good-tenant', 'reader']);
      expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  test('refuses to serve secure metrics on the health listener, naming the flags', async () => {
    const server = new HealthServer({
      healthAddr: '127.0.0.1:18081',
      metricsAddr: '127.0.0.1:18081',
      metrics: new RuntimeMetrics({ processMetrics: false }),
      secureMetrics: { certificate: await selfSignedCertificate(['127.0.0.1']), auth: new MetricsAuth(fakeReviews()) },
    });
    await expect(server.start()).rejects.toThrow(
      "secure metrics need their own listener: the metrics address '127.0.0.1:18081' is the health address (give --metrics-bind-address another port, or --metrics-secure=false)",
    );
    await server.stop();
  });
});
