// L1 on a real API server: a leader whose event loop is blocked past its renew deadline (a long
// synchronous pass, a starved process) has not run the deadline's timer yet, so its leadership
// signal is not aborted and `isLeader` still says true. A write it issues then must not leave the
// process: another replica may hold the Lease by now. The fenced client also asks the elector
// whether the Lease is still held by the clock (`holdsLease`), in send() and again right before
// the transport request.
import { LeaderElector, restLeaseClient } from '../../runtime/kube/leader-election';
import { Resources } from '../../runtime/kube/resources';
import { FencedError, RestClient } from '../../runtime/kube/rest';
import { rejection, testKubeConfig, useNamespace, waitFor } from './fixture';

const configMap = (namespace: string, name: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { written: 'by the leader' },
});

describe('SEC-13 the leader fence refuses writes past lastRenew + renewDeadline', () => {
  const ns = useNamespace();

  it('SEC-13: a write issued after the loop was blocked past the renew deadline is refused before it is sent; one issued before is sent', async () => {
    const admin = new RestClient(testKubeConfig());
    const leadership = new AbortController();
    const elector = new LeaderElector(restLeaseClient(new RestClient(testKubeConfig())), {
      namespace: ns(),
      name: 'juneau-controller',
      identity: 'replica-a',
      leaseDurationMs: 1_500,
      renewDeadlineMs: 1_000,
      retryPeriodMs: 100,
      onStoppedLeading: () => leadership.abort(),
    });
    const fenced = admin.fenced(leadership.signal, () => elector.holdsLease());
    elector.start();
    try {
      await waitFor(() => elector.isLeader, { what: 'replica-a leads', timeoutMs: 10_000 });
      // Positive control: while the Lease is held, the same client writes (and its connection is warm).
      await fenced.create(Resources.configMaps, configMap(ns(), 'before'));

      // A synchronous pass of 2.5 s: past renewDeadline (1 s) and past leaseDuration (1.5 s).
      const until = Date.now() + 2_500;
      while (Date.now() < until) {
        /* blocking the event loop, as a long pass does */
      }
      const stateBefore = { isLeader: elector.isLeader, aborted: leadership.signal.aborted };
      const write = fenced.create(Resources.configMaps, configMap(ns(), 'after'));
      // The deadline timer had not run: only the clock check can refuse this write.
      expect(stateBefore).toEqual({ isLeader: true, aborted: false });
      const refusal = await write.then(
        () => new Error('the write was sent and succeeded'),
        (err: unknown) => err,
      );

      // What the API server has: the write from before the block, not the one after it.
      await expect(admin.get(Resources.configMaps, ns(), 'before')).resolves.toMatchObject({
        data: { written: 'by the leader' },
      });
      expect((await rejection(admin.get(Resources.configMaps, ns(), 'after'))).code).toBe(404);
      // Refused by the fence itself, naming the request (not aborted once sent).
      expect(refusal).toBeInstanceOf(FencedError);
      expect(String(refusal)).toContain(`POST /api/v1/namespaces/${ns()}/configmaps not sent: this client is fenced`);
    } finally {
      await elector.release();
    }
  });
});
