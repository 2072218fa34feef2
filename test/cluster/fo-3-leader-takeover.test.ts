// FO-3 when the leader dies with the node (bench/peers' unexplained 33 s crash failover): in the
// box the controller replicas run on the nodes, so a crashed node can take the leading replica
// with it. The standby takes over after the leader-election Lease, and must then hand the dead
// node's address over at once, since its agent Lease expired meanwhile. A standby that started
// watching the agent Leases only at the takeover counted every Lease as just renewed and moved
// the address one agent lease duration later (leader Lease + agent Lease + takeover: 15 + 2 + 15 s
// with the defaults of the day). Two controller binaries as child processes with --leader-elect
// (the leader is SIGKILLed: no release), agent Leases renewed by the agent's own Lease code.
// Then the stopped leader (SIGTERM): it releases the Lease and the warm standby, whose every
// request goes through a recording proxy (./api-proxy.ts), leads without having written anything
// while it waited and without listing anything again once it leads.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { INSTALL, type ARPAdvertisement } from '../../api';
import { agentLeaseName } from '../../runtime/agent/liveness/lease';
import { advertisementName } from '../../runtime/controller/arp/names';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { RestClient, isNotFound } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import {
  createLoadBalancerService,
  createRunningPod,
  ignoreNotFound,
  testKubeConfig,
  useNamespace,
  waitFor,
} from './fixture';
import { resourcePath } from '../../runtime/kube/resources';
import type { Lease } from '../../runtime/kube/leader-election';
import { spawnController, type ControllerProcess } from './controller-process';
import { LeasedNodes } from './agent-leases';
import { ApiProxy, proxyKubeconfig, type Forwarded } from './api-proxy';

jest.setTimeout(120_000);

const rest = new RestClient(testKubeConfig());
/** The agent Lease is shorter than the leader's, as with the defaults (10 s against 15 s). */
const AGENT_LEASE_MS = 6_000;
const fleet = new LeasedNodes(rest, 'fo3lt', {
  count: 2,
  leaseMs: AGENT_LEASE_MS,
  firstHost: 171,
  cidr: '198.18.94.0/29',
});
const { network: NET, nodes, leases } = fleet;
const LEADER_LEASE = `juneau-fo3lt-${fleet.suffix}`;
const LEADER_FLAGS = [
  '--leader-election-lease-duration=12s',
  '--leader-election-renew-deadline=8s',
  '--leader-election-retry-period=1s',
];
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-fo3lt-'));

const replicas: ControllerProcess[] = [];

function startReplica(podName: string): ControllerProcess {
  const replica = spawnController({
    podName,
    logDir,
    leaseNamespace: INSTALL.namespace,
    lease: LEADER_LEASE,
    args: LEADER_FLAGS,
  });
  replicas.push(replica);
  return replica;
}

/** The leader-election Lease's holder (its identity starts with the replica's POD_NAME). */
const holder = async (): Promise<string | undefined> => {
  try {
    const lease = await rest.get<KubeObject & { spec?: { holderIdentity?: string } }>(
      Resources.leases,
      INSTALL.namespace,
      LEADER_LEASE,
    );
    return lease.spec?.holderIdentity || undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
};

/** One version of the leader-election Lease as this test's own watch delivered it, and when. */
interface LeaseRecord {
  readonly at: number;
  readonly holder: string;
  readonly durationSeconds?: number;
  readonly renewTime?: string;
  readonly acquireTime?: string;
}

/**
 * Every version of the leader-election Lease from now on, from a watch opened at the list's
 * resourceVersion (so none is missed between two polls); `ended` says when the watch ended early.
 */
async function recordLease(): Promise<{ records: LeaseRecord[]; ended: () => string | undefined; stop: () => void }> {
  const fieldSelector = `metadata.name=${LEADER_LEASE}`;
  const list = await rest.list<Lease & KubeObject>(Resources.leases, { namespace: INSTALL.namespace, fieldSelector });
  const records: LeaseRecord[] = [];
  const push = (l: Lease) =>
    records.push({
      at: Date.now(),
      holder: l.spec?.holderIdentity ?? '',
      durationSeconds: l.spec?.leaseDurationSeconds,
      renewTime: l.spec?.renewTime,
      acquireTime: l.spec?.acquireTime,
    });
  list.items.forEach(push);
  let stopped = false;
  let ended: string | undefined;
  const handle = await rest.watch<Lease & KubeObject>(
    resourcePath(Resources.leases, INSTALL.namespace),
    { resourceVersion: list.metadata?.resourceVersion, fieldSelector },
    (e) => {
      if (e.type === 'ADDED' || e.type === 'MODIFIED') push(e.object);
      else if (e.type !== 'BOOKMARK') ended ??= `watch ${e.type}: ${JSON.stringify(e.object).slice(0, 200)}`;
    },
  );
  void handle.done.then((err) => {
    if (!stopped) ended ??= `the Lease watch ended early: ${err?.message ?? 'closed by the server'}`;
  });
  return {
    records,
    ended: () => ended,
    stop: () => {
      stopped = true;
      handle.abort();
    },
  };
}

/** A request as `METHOD /path` without its query. */
const line = (f: Forwarded) => `${f.method} ${f.path.split('?')[0]}`;
const query = (f: Forwarded) => new URLSearchParams(f.path.split('?')[1] ?? '');

const logs = () =>
  replicas
    .map((r) => `--- ${r.podName} ---\n${fs.readFileSync(path.join(logDir, `${r.podName}.log`), 'utf8').trim()}`)
    .join('\n');

beforeAll(async () => {
  await fleet.setUp();
});

afterAll(async () => {
  for (const r of replicas) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGTERM');
  await Promise.all(replicas.map((r) => r.exited));
  await rest.delete(Resources.leases, INSTALL.namespace, LEADER_LEASE).catch(ignoreNotFound);
  await fleet.tearDown();
});

describe('FO-3 leader takeover (controller binaries, real API server)', () => {
  const ns = useNamespace();

  test('FO-3 FO-4: the leader dies with the answering node; the standby hands the address over at the agent Lease expiry, not one lease duration after it took over', async () => {
    const namespace = ns();
    const lease = await recordLease();
    const a = startReplica('fo3lt-a');
    await waitFor(async () => (await holder())?.startsWith(`${a.podName}_`), { what: `${a.podName} leading` });
    // The standby runs from here on: everything below happens while it only watches.
    const b = startReplica('fo3lt-b');
    await createLoadBalancerService(namespace, 'web', { network: NET });
    for (const [i, nodeName] of nodes.entries())
      await createRunningPod({
        namespace,
        name: `web-${i}`,
        nodeName,
        podIP: `10.244.${i}.10`,
        labels: { app: 'web' },
        ports: [{ name: 'http', containerPort: 8080 }],
      });
    const adName = advertisementName({ kind: 'ServiceLoadBalancer', namespace, name: 'web' });
    const answering = async () =>
      (
        await rest
          .get<KubeObject & ARPAdvertisement>(JuneauResources.arpAdvertisements, undefined, adName)
          .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)))
      )?.spec.nodeName;
    const chosen = await waitFor(answering, { what: 'an answering node', timeoutMs: 60_000 });
    const survivor = nodes.find((n) => n !== chosen)!;
    expect(nodes).toContain(chosen);

    // The standby has read the Lease: it sees the leader's renewals from here on (one that starts
    // after the last renewal counts the Lease from its first read, later than the renewal).
    await waitFor(() => fs.readFileSync(b.logFile, 'utf8').includes('"standing by"'), {
      what: 'the standby standing by',
    });
    // The crash: the leader SIGKILLed (its Lease not released) and the answering node's agent gone.
    const crashed = Date.now();
    a.child.kill('SIGKILL');
    await leases.get(chosen)!.stop();
    const agentRenewal = new Date(
      (
        await rest.get<KubeObject & { spec: { renewTime: string } }>(
          Resources.leases,
          INSTALL.namespace,
          agentLeaseName(chosen),
        )
      ).spec.renewTime,
    ).getTime();
    const tookOver = await waitFor(async () => ((await holder())?.startsWith('fo3lt-b_') ? Date.now() : undefined), {
      what: 'the standby leading',
      timeoutMs: 30_000,
      intervalMs: 50,
    }).catch((err: Error) => Promise.reject(new Error(`${err.message}\n${logs()}`)));
    const moved = await waitFor(async () => ((await answering()) === survivor ? Date.now() : undefined), {
      what: `the ARPAdvertisement moved to ${survivor}`,
      timeoutMs: 30_000,
      intervalMs: 50,
    }).catch((err: Error) => Promise.reject(new Error(`${err.message}\n${logs()}`)));
    lease.stop();
    expect(lease.ended()).toBeUndefined();
    // The leader's last renewal (its own stamp) and the standby's take (its stamp): the Lease
    // expired at the former plus 12 s; never taken before that, and taken how long after it.
    const taken = lease.records.find((r) => r.holder.startsWith('fo3lt-b_'))!;
    // Its last version, even one the watch delivered after the kill (a renewal in flight lands).
    const last = lease.records.filter((r) => r.holder.startsWith(`${a.podName}_`)).at(-1)!;
    const lastRenewal = Date.parse(last.renewTime!);
    const expiry = lastRenewal + 12_000;
    process.stdout.write(
      `FO-3 leader takeover: crash -> standby leading ${tookOver - crashed} ms (the Lease expired ${expiry - crashed} ms after the crash, 12 s after the last renewal, which this test's watch saw ${last.at - lastRenewal} ms after its stamp; taken ${Date.parse(taken.acquireTime!) - expiry} ms after the expiry), -> ARPAdvertisement moved ${moved - crashed} ms (${moved - tookOver} ms after the takeover; agent Lease ${AGENT_LEASE_MS} ms, leader ${LEADER_FLAGS.join(' ')})\n`,
    );
    expect(Date.parse(taken.acquireTime!)).toBeGreaterThanOrEqual(expiry);
    // Never before the node's answers expired (FO-4): the Lease ran its whole duration.
    expect(moved - agentRenewal).toBeGreaterThanOrEqual(AGENT_LEASE_MS);
    // The agent Lease expired before the takeover (a leader Lease of 12 s against 6 s), so the new
    // leader moves the address as soon as its caches are synced, not a whole agent Lease later.
    expect(tookOver - agentRenewal).toBeGreaterThan(AGENT_LEASE_MS);
    expect(moved - tookOver).toBeLessThan(AGENT_LEASE_MS / 2);
  });

  test('FO-3: a stopped leader (SIGTERM) releases its Lease (holder cleared) and the warm standby, which wrote nothing while it waited, leads at once without listing again and serves a Service created during the handover', async () => {
    const namespace = ns();
    // A long retry period: without the Lease watch the standby would take the released Lease only at
    // its next retry, 10-22 s after its last one (the default 2 s makes that 2-4.4 s).
    const args = [
      '--leader-election-lease-duration=30s',
      '--leader-election-renew-deadline=20s',
      '--leader-election-retry-period=10s',
    ];
    const spawn = (podName: string, kubeconfig?: string) => {
      const r = spawnController({
        podName,
        logDir,
        leaseNamespace: INSTALL.namespace,
        lease: LEADER_LEASE,
        args,
        kubeconfig,
      });
      replicas.push(r);
      return r;
    };
    // The previous test's replicas stop first (their SIGTERM releases the Lease).
    for (const r of [...replicas])
      if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGTERM');
    await Promise.all(replicas.map((r) => r.exited));
    const lease = await recordLease();
    const proxy = new ApiProxy();
    try {
      const c = spawn('fo3lt-c');
      await waitFor(async () => (await holder())?.startsWith(`${c.podName}_`), { what: `${c.podName} leading` });
      // The standby reaches the API server only through the proxy: its every request is seen.
      const d = spawn('fo3lt-d', proxyKubeconfig(await proxy.start()));
      for (const [i, nodeName] of nodes.entries())
        await createRunningPod({
          namespace,
          name: `api-${i}`,
          nodeName,
          podIP: `10.244.${i}.20`,
          labels: { app: 'api' },
          ports: [{ name: 'http', containerPort: 8080 }],
        });
      await createLoadBalancerService(namespace, 'api', { network: NET, selector: { app: 'api' } });
      const adOf = (name: string) => advertisementName({ kind: 'ServiceLoadBalancer', namespace, name });
      const advertised = async (name: string) =>
        rest
          .get<KubeObject & ARPAdvertisement>(JuneauResources.arpAdvertisements, undefined, adOf(name))
          .then(() => Date.now())
          .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
      await waitFor(() => advertised('api'), { what: 'the first leader answering for api', timeoutMs: 60_000 });
      // The standby has read the Lease (and is waiting out its retry period) before the SIGTERM.
      await waitFor(() => fs.readFileSync(d.logFile, 'utf8').includes('"standing by"'), {
        what: 'the standby standing by',
      });

      const stopped = Date.now();
      c.child.kill('SIGTERM');
      await createLoadBalancerService(namespace, 'api2', { network: NET, selector: { app: 'api' } });
      const tookOver = await waitFor(
        async () => ((await holder())?.startsWith(`${d.podName}_`) ? Date.now() : undefined),
        { what: 'the standby leading', timeoutMs: 30_000, intervalMs: 20 },
      ).catch((err: Error) => Promise.reject(new Error(`${err.message}\n${logs()}`)));
      const served = await waitFor(() => advertised('api2'), {
        what: 'the new leader answering for api2',
        timeoutMs: 30_000,
        intervalMs: 20,
      });
      expect(await c.exited).toBe(0);
      lease.stop();
      expect(lease.ended()).toBeUndefined();

      // The old leader released the Lease: the version after its last one has no holder (and a
      // 1 s duration, as client-go's ReleaseOnCancel writes), and the standby's is the next.
      const records = lease.records.filter((r) => r.at >= stopped || r.holder !== '');
      const took = records.findIndex((r) => r.holder.startsWith(`${d.podName}_`));
      expect(took).toBeGreaterThan(1);
      expect(records[took - 2].holder).toMatch(new RegExp(`^${c.podName}_`));
      expect(records[took - 1]).toMatchObject({ holder: '', durationSeconds: 1 });
      const released = records[took - 1].at;

      // The standby's requests, as the proxy forwarded them: its Lease write that took the Lease...
      const leasePath = `${resourcePath(Resources.leases, INSTALL.namespace, LEADER_LEASE)}`;
      const requests = [...proxy.forwarded];
      const take = requests.find((f) => f.method === 'PUT' && line(f) === `PUT ${leasePath}` && f.status === 200);
      expect(take).toBeDefined();
      const before = requests.filter((f) => f.at < take!.at);
      // ...before it, nothing but reads: its one non-GET is the SelfSubjectReview that tells the
      // webhooks who this controller is (a review, answered and never stored).
      expect(before.filter((f) => f.method !== 'GET').map(line)).toEqual([
        'POST /apis/authentication.k8s.io/v1/selfsubjectreviews',
      ]);
      // Its caches were listed and watched while it waited...
      const watched = new Set(before.filter((f) => query(f).get('watch') === 'true').map((f) => line(f)));
      expect(watched).toContain(`GET ${resourcePath(JuneauResources.serviceLoadBalancers)}`);
      expect(watched).toContain(`GET ${resourcePath(JuneauResources.arpAdvertisements)}`);
      // ...and none was listed again once it led, up to its serving api2 (a relist would be a GET of
      // a watched collection without watch=true).
      const after = requests.filter((f) => f.at >= take!.at && f.at <= served);
      expect(
        after.filter((f) => f.method === 'GET' && query(f).get('watch') !== 'true' && watched.has(line(f))).map(line),
      ).toEqual([]);
      // The proxy does see its writes: it applied api2's ServiceLoadBalancer once leading.
      expect(after.filter((f) => f.method !== 'GET').map(line)).toContain(
        `PATCH ${resourcePath(JuneauResources.serviceLoadBalancers, namespace, 'api2')}`,
      );
      process.stdout.write(
        `FO-3 handover: SIGTERM -> Lease released ${released - stopped} ms -> standby leading ${tookOver - stopped} ms (its Lease write ${take!.at - stopped} ms); -> api2 advertised ${served - stopped} ms (${served - tookOver} ms after the takeover); the standby before leading: ${before.length} requests (${watched.size} watches opened), 0 writes; after: 0 lists\n`,
      );
    } finally {
      lease.stop();
      await proxy.stop();
    }
  });
});
