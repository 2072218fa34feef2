// A finished request leaves nothing behind on the long-lived leader fence (no
// abort listener) and no pending timer; the timeout and the fence still abort requests in flight.
// (The old AbortSignal.any/timeout leak — a WeakRef per request among the fence's dependants, a
// timer until it fires — is internal to Node and not observable here; these checks guard the
// listeners and timers the client now manages itself. That the fence aborts a request in flight
// is leader-step-down.test.ts's.) A plain local HTTP server stands in for the API server: only the
// client's bookkeeping is under test.
import { getEventListeners } from 'node:events';
import type { KubeConfig } from '@kubernetes/client-node';
import { RestClient } from '../../../runtime/kube/rest';
import { localApiServer } from '../local-api-server';

let kc: KubeConfig;
let close: () => Promise<void>;

beforeAll(async () => {
  ({ kubeConfig: kc, close } = await localApiServer((req, res) => {
    if (req.url?.startsWith('/hang')) return; // never answers
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"Status"}');
  }));
});
afterAll(() => close());

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('RestClient request bookkeeping', () => {
  it('200 finished requests leave no listener on the fence and no pending timer', async () => {
    const fence = new AbortController();
    const rest = new RestClient(kc, { requestTimeoutMs: 600_000 }).fenced(fence.signal);
    const before = timers();
    await Promise.all(Array.from({ length: 200 }, () => rest.request('GET', '/ok')));
    expect(getEventListeners(fence.signal, 'abort')).toHaveLength(0);
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it('a request past its timeout is aborted (cause: a TimeoutError, as AbortSignal.timeout gave), and unhooked from the fence', async () => {
    const fence = new AbortController();
    const rest = new RestClient(kc).fenced(fence.signal);
    await expect(rest.request('GET', '/hang', { timeoutMs: 100 })).rejects.toMatchObject({
      name: 'AbortError',
      cause: { name: 'TimeoutError' },
    });
    expect(getEventListeners(fence.signal, 'abort')).toHaveLength(0);
  });

  it("the caller's signal aborts a request in flight", async () => {
    const rest = new RestClient(kc);
    const caller = new AbortController();
    const inFlight = rest.request('GET', '/hang', { signal: caller.signal });
    await new Promise((r) => setTimeout(r, 50));
    caller.abort();
    await expect(inFlight).rejects.toMatchObject({ name: 'AbortError' });
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});
