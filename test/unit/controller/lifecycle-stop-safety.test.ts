// The controller (every reconciler registration with it) and the webhook server share one
// stop-safety (runtime/kube/lifecycle.ts): stop before start starts nothing, stop during a start
// that cannot finish ends it, stop twice tears down once. A local HTTP server stands in for an API
// server that answers 503 to everything (a real one cannot be made to fail on demand); what is
// asserted is what the classes send it.
import { JuneauController } from '../../../runtime/controller/controller';
import { WebhookServer } from '../../../runtime/controller/webhook/start';
import type { WebhookCaches } from '../../../runtime/controller/webhook/views';
import { Lifecycle } from '../../../runtime/kube/lifecycle';
import { RestClient } from '../../../runtime/kube/rest';
import { sleep } from '../../sleep';
import { localApiServer } from '../local-api-server';

/** Every request, as `METHOD path`; each is answered 503. */
let received: string[] = [];
let api: Awaited<ReturnType<typeof localApiServer>>;
let rest: RestClient;

beforeAll(async () => {
  api = await localApiServer((req, res) => {
    received.push(`${req.method} ${req.url?.split('?')[0]}`);
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"kind":"Status","code":503}');
  });
  rest = new RestClient(api.kubeConfig);
});
beforeEach(() => (received = []));
afterAll(() => api.close());

/** Fails if any request arrives during `ms` (the window in which a leaked start would list or watch). */
async function expectNoRequestsFor(ms: number): Promise<void> {
  const before = received.length;
  await sleep(ms);
  expect(received.slice(before)).toEqual([]);
}

interface Part {
  /** Resolves when the part has started (the webhook: once ready, or once stopped before that). */
  start(): Promise<unknown>;
  stop(): Promise<void>;
}

/** The webhook's start only launches its certificate pass; it has started once `ready` settles. */
const untilReady = (webhook: WebhookServer): Part => ({
  start: () => webhook.start().then(async () => webhook.ready.catch(() => undefined)),
  stop: () => webhook.stop(),
});

const parts: Array<[string, () => Part]> = [
  ['JuneauController', () => new JuneauController({ rest })],
  [
    'WebhookServer (url mode)',
    () =>
      untilReady(
        new WebhookServer({
          rest,
          caches: {} as WebhookCaches,
          urlBase: 'https://127.0.0.1:0',
          inCluster: false,
          checkIntervalMs: 1_000,
        }),
      ),
  ],
];

describe.each(parts)('%s stop-safety', (_name, make) => {
  it('stop before start: start afterwards resolves at once and sends nothing', async () => {
    const part = make();
    await part.stop();
    received = [];
    await part.start();
    await expectNoRequestsFor(300);
  });

  it('stop during a start that cannot finish (API answers 503): both resolve, nothing is sent afterwards', async () => {
    const part = make();
    let started = false;
    const starting = part.start().then(() => (started = true));
    while (received.length === 0) await sleep(5);
    expect(started).toBe(false);
    await part.stop();
    await starting;
    await expectNoRequestsFor(300);
  });

  it('stop twice: the same teardown, once', async () => {
    const part = make();
    void part.start();
    while (received.length === 0) await sleep(5);
    const first = part.stop();
    const second = part.stop();
    await Promise.all([first, second]);
    expect(second).toBe(first);
  });
});

describe('WebhookServer teardown', () => {
  it('stopped before ready: ready rejects, the registration is deleted once however often stop is called', async () => {
    const webhook = new WebhookServer({
      rest,
      caches: {} as WebhookCaches,
      urlBase: 'https://127.0.0.1:0',
      inCluster: false,
      configurationName: 'juneau-stop-safety',
      checkIntervalMs: 1_000,
    });
    void webhook.start();
    while (received.length === 0) await sleep(5);
    await Promise.all([webhook.stop(), webhook.stop()]);
    await expect(webhook.ready).rejects.toThrow('stopped before it became ready');
    const deletes = received.filter((r) => r.startsWith('DELETE') && r.endsWith('/juneau-stop-safety'));
    expect(deletes).toHaveLength(1);
    expect(webhook.isReady()).toBe(false);
  });
});

describe('Lifecycle', () => {
  it('runs the start steps once and the teardown once, after a start in flight', async () => {
    const lifecycle = new Lifecycle();
    const order: string[] = [];
    let finishStart!: () => void;
    const steps = jest.fn(async () => {
      order.push('start');
      await new Promise<void>((r) => (finishStart = r));
      order.push('started');
    });
    const teardown = jest.fn(async () => {
      order.push('teardown');
    });
    const a = lifecycle.start(steps);
    expect(lifecycle.start(steps)).toBe(a);
    const stopped = lifecycle.stop(teardown);
    expect(lifecycle.stopped).toBe(true);
    await Promise.resolve();
    expect(teardown).not.toHaveBeenCalled(); // waits for the start in flight
    finishStart();
    await Promise.all([a, stopped, lifecycle.stop(teardown)]);
    expect(order).toEqual(['start', 'started', 'teardown']);
    expect(steps).toHaveBeenCalledTimes(1);
    expect(teardown).toHaveBeenCalledTimes(1);
  });

  it('unlessStopped: false as soon as stop is asked for, without waiting for the step', async () => {
    const lifecycle = new Lifecycle();
    const never = new Promise<void>(() => undefined);
    const waiting = lifecycle.unlessStopped(never);
    void lifecycle.stop(async () => undefined);
    await expect(waiting).resolves.toBe(false);
    await expect(new Lifecycle().unlessStopped(Promise.resolve())).resolves.toBe(true);
  });
});
