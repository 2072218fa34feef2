// Lease leader election with two electors on a real coordination.k8s.io/v1 Lease.
import { LeaderElector, restLeaseClient, type Lease } from '../../runtime/kube/leader-election';
import { Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import { createNamespace, deleteNamespace, testKubeConfig, waitFor } from './fixture';
import { expectNoChangeFor } from './quiet-watch';

describe('LeaderElector on a real Lease', () => {
  const rest = new RestClient(testKubeConfig());
  let ns: string;
  beforeEach(async () => (ns = await createNamespace('kube-leader')));
  afterEach(async () => deleteNamespace(ns));

  const timings = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 300 };

  it('elects one of two, and release() hands over to the standby well before the lease would expire', async () => {
    const events: string[] = [];
    const make = (identity: string): LeaderElector =>
      new LeaderElector(restLeaseClient(rest), {
        namespace: ns,
        name: 'juneau-controller',
        identity,
        ...timings,
        onStartedLeading: () => events.push(`${identity} leads`),
        onStoppedLeading: () => events.push(`${identity} stops`),
      });
    const first = make('replica-a');
    const second = make('replica-b');
    first.start();
    await waitFor(() => first.isLeader, { what: 'replica-a leads', timeoutMs: 10_000 });
    second.start();
    await waitFor(() => second.leader === 'replica-a', { what: 'replica-b sees replica-a', timeoutMs: 10_000 });
    // Several renewals (retry period 300 ms) and not one change of holder: leadership is stable.
    await expectNoChangeFor<Lease>(1_000, {
      type: Resources.leases,
      namespace: ns,
      name: 'juneau-controller',
      project: (l) => l.spec?.holderIdentity,
      rest,
    });
    expect([first.isLeader, second.isLeader]).toEqual([true, false]);

    const lease = await rest.get<Lease>(Resources.leases, ns, 'juneau-controller');
    expect(lease.spec).toMatchObject({ holderIdentity: 'replica-a', leaseDurationSeconds: 4, leaseTransitions: 0 });
    expect(lease.spec?.renewTime).toMatch(/\.\d{6}Z$/); // MicroTime accepted and stored

    const releasedAt = Date.now();
    await first.release();
    await waitFor(() => second.isLeader, { what: 'replica-b takes over', timeoutMs: 10_000, intervalMs: 20 });
    const handover = Date.now() - releasedAt;
    // A standby retries within 2.2 x retryPeriod (660 ms); waiting out the lease would take 4 s.
    expect(handover).toBeLessThan(1_500);
    const after = await rest.get<Lease>(Resources.leases, ns, 'juneau-controller');
    expect(after.spec).toMatchObject({ holderIdentity: 'replica-b', leaseTransitions: 1 });
    await second.release();
    expect(events).toEqual(['replica-a leads', 'replica-a stops', 'replica-b leads', 'replica-b stops']);
    expect((await rest.get<Lease>(Resources.leases, ns, 'juneau-controller')).spec?.holderIdentity).toBe('');
  }, 30_000);

  it('a candidate waits out a Lease whose holder vanished without releasing it', async () => {
    const gone = new LeaderElector(restLeaseClient(rest), {
      namespace: ns,
      name: 'l',
      identity: 'crashed',
      ...timings,
    });
    gone.start();
    await waitFor(() => gone.isLeader, { what: 'crashed leads', timeoutMs: 10_000 });
    // Simulate a crash: stop renewing without release() (stop the loop, keep the Lease).
    (gone as unknown as { stopped: boolean }).stopped = true;
    const standby = new LeaderElector(restLeaseClient(rest), {
      namespace: ns,
      name: 'l',
      identity: 'standby',
      ...timings,
    });
    const start = Date.now();
    standby.start();
    await waitFor(() => standby.isLeader, { what: 'standby takes over', timeoutMs: 15_000, intervalMs: 50 });
    expect(Date.now() - start).toBeGreaterThanOrEqual(timings.leaseDurationMs);
    await standby.release();
  }, 30_000);
});
