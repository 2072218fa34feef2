/**
 * `juneau-controller`: flags -> kubeconfig -> health/metrics -> (Lease) -> JuneauController.
 * Losing the Lease exits with 1 so the Pod restarts as a clean standby (controller-runtime does
 * the same); SIGTERM/SIGINT stop the reconcilers, release the Lease and exit 0.
 * The reconcilers and their Events write through a client fenced by the leadership: the instant
 * the Lease is lost, requests in flight are aborted and no new one leaves the process, before the
 * new leader can start (it waits out leaseDuration; we step down at renewDeadline).
 */
import * as os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { EventRecorder } from '../kube/events';
import { HealthServer } from '../kube/health';
import { LeaderElector, restLeaseClient, type Lease } from '../kube/leader-election';
import { loadKubeConfig } from '../kube/kubeconfig';
import type { Logger } from '../kube/log';
import { RuntimeMetrics } from '../kube/metrics';
import { secureMetricsFor } from '../kube/metrics-tls';
import { processIO, processLogger, startupFlags, type MainIO } from '../kube/process';
import { Resources } from '../kube/resources';
import { Sleeper } from '../kube/sleep';
import { RestClient } from '../kube/rest';
import { serviceCIDRsServedOrLog } from '../kube/service-cidrs';
import type { Informer } from '../kube/informer';
import { SharedInformers } from '../kube/shared-informers';
import { describeStartupError, serverOf } from '../kube/startup-errors';
import { JuneauController, type ControllerOptions } from './controller';
import { HELP, parseFlags, type ControllerFlags } from './flags';
import { leaseProblemReporter } from './lease-report';
import { informerWebhookCaches, type WebhookCacheSet } from './webhook/listers';
import { arpAdvertisementAdmitter } from './webhook/handlers';
import { resolveWebhookMode, startWebhookServer, type WebhookServerHandle } from './webhook/start';

/** How long a stopping leader lets its passes in flight finish before it releases the Lease anyway. */
const PASSES_GRACE_MS = 5_000;

/**
 * Runs the controller until stopped; resolves with the exit code (2: bad flags, 1: cannot start or
 * lost the Lease). Whatever stops it from starting is one log line naming the problem.
 */
export async function main(argv: readonly string[], io: MainIO = processIO()): Promise<number> {
  const flags = startupFlags('juneau-controller', argv, io, parseFlags, HELP);
  if (typeof flags === 'number') return flags;
  const logger = processLogger('controller', flags, io);
  let kubeConfig: KubeConfig | undefined;
  try {
    kubeConfig = loadKubeConfig({ kubeconfigPath: flags.kubeconfig, env: io.env }).kubeConfig;
    return await run(flags, kubeConfig, logger, io);
  } catch (err) {
    logger.error(`cannot start: ${describeStartupError(err, kubeConfig && serverOf(kubeConfig))}`);
    return 1;
  }
}

async function run(flags: ControllerFlags, kubeConfig: KubeConfig, logger: Logger, io: MainIO): Promise<number> {
  const rest = new RestClient(kubeConfig);
  const leadership = new AbortController();
  // L1: also refused past lastRenew + renewDeadline, before the deadline's timer has had a chance to run.
  const leaderRest = flags.leaderElect ? rest.fenced(leadership.signal, () => !!elector?.holdsLease()) : rest;
  const identity = `${io.env.POD_NAME || os.hostname()}_${randomBytes(4).toString('hex')}`;
  const metrics = new RuntimeMetrics();
  // One informer per kind for the reconcilers and the webhooks. Reads go through the unfenced
  // client: every replica serves admission from them, and the fence is about writes.
  const informers = new SharedInformers(rest, logger);
  const serviceCIDRs = await serviceCIDRsServedOrLog(
    rest,
    logger,
    'no Service range is skipped by the allocator or warned about in AddressPools',
  );
  const webhookCaches = informerWebhookCaches(rest, logger, informers, serviceCIDRs);
  const { controller, recorder } = buildController(flags, leaderRest, informers, identity, metrics, logger, {
    // M1: the controller's ARPAdvertisement writes skip the webhook; it runs its ARP-2/4/5 checks itself.
    admitAdvertisement: servesWebhooks(flags) ? arpAdvertisementAdmitter(webhookCaches.caches) : undefined,
    serviceCIDRsServed: serviceCIDRs,
  });
  const health = await healthServer(flags, rest, metrics, logger);
  let elector: LeaderElector | undefined;
  let leaderLease: Informer<Lease> | undefined;
  const webhook = await startWebhooks(flags, rest, webhookCaches, metrics, logger, io);
  // Every replica serves the webhooks; it is ready once the API server can call it (caBundle set) and its caches synced.
  health.addReadinessCheck('webhook', () => webhook.isReady());
  // A standby is ready (it is a healthy candidate); the leader once its caches are synced.
  health.addReadinessCheck('caches-synced', () => (elector && !elector.isLeader) || controller.hasSynced);
  await health.start();
  let stopping = false;
  let lostLease = false;
  const lost = new Promise<number>((resolve) => {
    const startController = () =>
      controller.start().catch((err: unknown) => {
        logger.error('controller failed to start', { err: String(err) });
        resolve(1);
      });
    if (!flags.leaderElect) {
      void startController();
      return;
    }
    controller.warmUp(); // a standby's caches are synced when it takes over (FO-3, controller.ts)
    // Its own client and connections, apart from the shared informers' lists and watches on `rest`
    // (as before they were shared). On a machine at load 20+ a starved leader still misses the
    // 10 s renew deadline at times, with or without this (bench/README.md, scale).
    elector = new LeaderElector(restLeaseClient(new RestClient(kubeConfig)), {
      namespace: flags.leaderElectionNamespace,
      name: flags.leaderElectionId,
      identity,
      leaseDurationMs: flags.leaderElectionLeaseDurationMs,
      renewDeadlineMs: flags.leaderElectionRenewDeadlineMs,
      retryPeriodMs: flags.leaderElectionRetryPeriodMs,
      logger,
      onAttempt: leaseProblemReporter(logger, {
        namespace: flags.leaderElectionNamespace,
        name: flags.leaderElectionId,
        server: serverOf(kubeConfig),
      }),
      onStartedLeading: () => void startController(),
      // Who leads, as this replica sees it: a standby says so once per change of leader.
      onNewLeader: (leader) => leader && leader !== identity && logger.info('standing by', { leader }),
      onStoppedLeading: () => {
        leadership.abort();
        if (stopping) return;
        lostLease = true;
        logger.error('lost the Lease; exiting so a clean standby takes over');
        resolve(1);
      },
    });
    elector.start();
    leaderLease = watchLeaderLease(informers, flags, elector);
  });
  const { leaderElect, healthAddr, metricsAddr, metricsSecure } = flags;
  logger.info('started', { identity, leaderElect, healthAddr, metricsAddr, metricsSecure });
  const code = await Promise.race([lost, io.stopSignal.then((signal) => (logger.info('stopping', { signal }), 0))]);
  stopping = true;
  await stopThenRelease(controller, elector, lostLease || flags.leaderElect);
  await leaderLease?.stop();
  await webhook.stop({ keepRegistration: true });
  await webhookCaches.stop();
  await recorder.stop();
  await health.stop();
  logger.info('stopped', { code });
  return code;
}

/**
 * Under leader election the queued keys are the next leader's work (its caches are warm; it queues
 * every object when it starts): `dropQueued` drops them rather than drain, so a stopping leader
 * hands the Lease over within a second. Passes in flight finish first, for PASSES_GRACE_MS at most:
 * a pass stuck on a slow API server must not keep the Lease until the kubelet's SIGKILL (30 s
 * grace), which would leave the standby waiting out the Lease. Releasing fences the client first
 * (onStoppedLeading), so nothing a pass still runs is written after the release.
 */
async function stopThenRelease(
  controller: JuneauController,
  elector: LeaderElector | undefined,
  dropQueued: boolean,
): Promise<void> {
  const stopped = controller.stop({ dropQueued });
  if (elector) {
    const grace = new Sleeper();
    await Promise.race([stopped, grace.sleep(PASSES_GRACE_MS)]);
    grace.wake();
    await elector.release();
  }
  await stopped;
}

/**
 * The leader-election Lease as a watch delivers it, fed to the candidate (LeaderElector.observe): a
 * Lease released by a stopping leader (SIGTERM, a rolling update, a drain) is taken within a watch
 * event, not at the candidate's next retry (up to 2.2 retry periods later), and a crashed leader's
 * record is counted from its last renewal as the watch delivered it, so the candidate takes it at
 * its expiry. Read through the unfenced client, like every cache.
 */
function watchLeaderLease(informers: SharedInformers, flags: ControllerFlags, elector: LeaderElector): Informer<Lease> {
  const { leaderElectionNamespace: namespace, leaderElectionId: name } = flags;
  const lease = informers.informer<Lease>({
    type: Resources.leases,
    namespace,
    fieldSelector: `metadata.name=${name}`,
  });
  lease.addHandlers({
    onAdd: (l) => elector.observe(l),
    onUpdate: (_old, l) => elector.observe(l),
    onDelete: () => elector.observe(undefined),
  });
  lease.start();
  return lease;
}

/** H5: whether the ServiceCIDRs' Service ranges can be read (kube/service-cidrs.ts), logged when not. */
/** The reconcilers and their Events, writing through the leader's fenced client. */
function buildController(
  flags: ControllerFlags,
  leaderRest: RestClient,
  informers: SharedInformers,
  identity: string,
  metrics: RuntimeMetrics,
  logger: Logger,
  checks: Pick<ControllerOptions, 'admitAdvertisement' | 'serviceCIDRsServed'>,
): { controller: JuneauController; recorder: EventRecorder } {
  const recorder = new EventRecorder(leaderRest, {
    reportingController: 'juneau.loutres.me/controller',
    reportingInstance: identity,
    logger,
  });
  const controller = new JuneauController({
    rest: leaderRest,
    informers,
    logger,
    recorder,
    metrics,
    workers: flags.workers,
    agentLeaseGraceMs: flags.agentLeaseGraceMs,
    ...checks,
  });
  return { controller, recorder };
}

/**
 * The admission webhooks, read from their own informers (every replica serves them, leader or not,
 * so they cannot lean on the leader's caches; they run on standbys too, and are not started when no
 * webhook is served). Only this controller's own identity, learned from a SelfSubjectReview, may
 * write ServiceLoadBalancers (SLB-1) and ARPAdvertisements (ARP-11).
 */
async function startWebhooks(
  flags: ControllerFlags,
  rest: RestClient,
  webhookCaches: WebhookCacheSet,
  metrics: RuntimeMetrics,
  logger: Logger,
  io: MainIO,
): Promise<WebhookServerHandle> {
  const self = await rest.request<{ status?: { userInfo?: { username?: string } } }>(
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    },
  );
  const username = self.status?.userInfo?.username;
  if (!username)
    throw new Error('the API server did not say who this controller is (SelfSubjectReview without a username)');
  if (servesWebhooks(flags)) webhookCaches.start();
  return startWebhookServer({
    rest,
    metrics,
    logger,
    caches: {
      ...webhookCaches.caches,
      serviceLoadBalancerWriters: () => [username],
      arpAdvertisementWriters: () => [username],
    },
    addr: flags.webhookAddr,
    urlBase: flags.webhookUrlBase,
    certificates: flags.webhookCertificates,
    certDir: flags.webhookCertDir,
    namespace: io.env.POD_NAMESPACE || flags.leaderElectionNamespace,
  });
}

/** Whether this process serves the webhooks, and so starts their caches. */
const servesWebhooks = (flags: ControllerFlags): boolean =>
  resolveWebhookMode({ urlBase: flags.webhookUrlBase, inCluster: !!process.env.KUBERNETES_SERVICE_HOST }) !==
  'disabled';

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}

/** /healthz, /readyz and /metrics (HTTPS to authorized callers unless --metrics-secure=false); not started. */
async function healthServer(
  flags: ControllerFlags,
  rest: RestClient,
  metrics: RuntimeMetrics,
  logger: Logger,
): Promise<HealthServer> {
  const secureMetrics = await secureMetricsFor(flags, rest, logger);
  const health = new HealthServer({
    healthAddr: flags.healthAddr,
    metricsAddr: flags.metricsAddr,
    metrics,
    secureMetrics,
  });
  health.addLivenessCheck('ping', () => true);
  return health;
}
