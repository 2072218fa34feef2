/**
 * `juneau-agent`: flags -> kubeconfig -> ingress interface (EN-12) -> attach or adopt the pinned
 * XDP responder -> health/metrics -> each feature's loop (arp/, liveness/) and the NAT process.
 * SIGTERM/SIGINT stop the loops and leave the responder attached with its maps pinned, so the node
 * keeps answering through a restart or an upgrade (ARCHITECTURE.md "Answer"); `--detach-on-exit`
 * is for development.
 *
 * The NAT programs and their loop (nat/) run in a child process of the agent (SEC-4,
 * ./nat-process.ts): `juneau-agent --nat-child` with the same flags, under its own heap limit, so
 * that a NAT failure, an out-of-memory one included, cannot stop ARP answering. The NATGateway
 * loop (ngw/loop.ts) runs there too, inside the NAT loop whose Nodes, Pods and ranges it shares.
 */
import * as path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { EventRecorder } from '../kube/events';
import { HealthServer } from '../kube/health';
import { loadKubeConfig } from '../kube/kubeconfig';
import type { Logger } from '../kube/log';
import { RuntimeMetrics } from '../kube/metrics';
import { secureMetricsFor, type SecureMetrics } from '../kube/metrics-tls';
import { Resources } from '../kube/resources';
import { processIO, processLogger, startupFlags, type MainIO } from '../kube/process';
import { RestClient } from '../kube/rest';
import { serviceCIDRsServedOrLog } from '../kube/service-cidrs';
import { describeStartupError, serverOf } from '../kube/startup-errors';
import type { KubeObject } from '../kube/types';
import {
  attachArpResponder,
  attachedProgram,
  detachArpResponder,
  ifNameToIndex,
  monotonicNowNs,
  removePins,
  type AttachResult,
} from './bpf';
import { ArpSync } from './arp/sync';
import { AGENT_HELP, parseAgentFlags, type AgentFlags } from './flags';
import { AGENT_FLAGS, INSTALL } from '../../api/constants';
import { PIN_ROOT, PIN_SUBDIR } from './bpf/pins';
import { chooseInterface, localInterfaces, nodeInternalIPs, type LocalInterface } from './interface';
import { ArpMetrics } from './arp/metrics';
import { NatSync } from './nat/sync';
import type { ServedAddress } from './nat/desired';
import { NAT_UNAVAILABLE_EXIT, NatChildChannel, NatProcess, familiesWithPrefix } from './nat-process';
import { parseClusterCidrs } from './nat/prefixes';
import { attachNatDataplane, detachNatDataplane, tunnelWithoutFilter, type NatDataplane } from './nat/attach';
import { NatMetrics } from './nat/metrics';
import { natFilters } from './bpf/nat';
import { AnswerHeartbeat } from './liveness/heartbeat';
import { AgentLease } from './liveness/lease';
import { AnnounceMetrics, MoveAnnouncements } from './announce/handovers';
import { ArpPacketSocket } from './announce/packet-socket';
import { AnnounceCounters } from './announce/counters';
import { JuneauResources } from '../kube/resources';
import { referenceTo } from '../kube/events';
import { parseOwnerDaemonSet, UninstallWatch } from './liveness/uninstall';
import { CniServer, CniServerMetrics } from './cni/server';
import { CniInstaller, CniMetrics, findPluginBinary } from './cni/install';
import { BgpSync } from './bgp/sync';
import { NgwLoop } from './ngw/loop';
import { conntrackStats, NgwDataplane } from './ngw/sync';
import { NgwMetrics } from './ngw/metrics';
import { readNgwNode } from './ngw/observe';

/** Runs the agent until stopped; resolves with the exit code (2: bad flags, 1: cannot start). */
export async function main(argv: readonly string[], io: MainIO = processIO()): Promise<number> {
  const flags = startupFlags('juneau-agent', argv, io, parseAgentFlags, AGENT_HELP);
  if (typeof flags === 'number') return flags;
  const logger = processLogger('agent', flags, io).child({
    node: flags.nodeName,
    ...(flags.natChild ? { process: 'nat' } : {}),
  });
  let server: string | undefined;
  try {
    const { kubeConfig, source } = loadKubeConfig({ kubeconfigPath: flags.kubeconfig, env: io.env });
    server = serverOf(kubeConfig);
    if (flags.natChild) return await runNatChild(flags, logger, io, kubeConfig);
    return await run(flags, logger, io, kubeConfig, source, argv);
  } catch (err) {
    // One line naming the problem (an unreachable API server, a missing file), not a stack.
    logger.error(`agent failed: ${describeStartupError(err, server)}`);
    return 1;
  }
}

async function run(
  flags: AgentFlags,
  logger: Logger,
  io: MainIO,
  kubeConfig: KubeConfig,
  source: string,
  argv: readonly string[],
): Promise<number> {
  const rest = new RestClient(kubeConfig);
  const iface = await ingressInterface(flags, rest);
  const ifindex = ifNameToIndex(iface.name);
  const pinDir = path.join(flags.bpffs, PIN_SUBDIR);
  const attached = attachArpResponder({
    ifindex,
    mac: iface.mac,
    pinDir,
    mode: flags.xdpMode,
    guard: flags.guard,
    conflictDetection: flags.conflictDetection,
    answerExpiryMs: flags.answerExpiryMs,
    orphanAfterMs: flags.orphanAfterMs,
  });
  logger.info('responder attached', {
    kubeconfig: source,
    iface: iface.name,
    ifindex,
    mac: iface.mac,
    addresses: iface.addresses,
    mode: attached.mode,
    programId: attached.programId,
    replacedProgramId: attached.replacedProgramId,
    adoptedMaps: attached.adoptedMaps,
    pinDir,
    entries: attached.maps.addresses().size,
  });
  // SEC-4: the NAT data plane and loop in their own process, on the interface chosen here.
  const nat = new NatProcess({
    argv: [...argv, `--${AGENT_FLAGS.nodeIngressIface}=${iface.name}`],
    maxHeapMiB: flags.natMaxHeapMiB,
    logger,
  });
  try {
    return await serve(flags, logger, io, { rest, iface, ifindex, pinDir, attached, nat });
  } finally {
    attached.maps.close();
  }
}

/**
 * SEC-4: the NAT child (`--nat-child`): attaches the ElasticIP NAT data plane on the agent's
 * interface (NAT-1..NAT-5, DIR-1) and runs the NAT loop until SIGTERM or the agent is gone. A
 * failed attach exits NAT_UNAVAILABLE_EXIT: ARP answering goes on, and it is reported, not retried.
 */
async function runNatChild(flags: AgentFlags, logger: Logger, io: MainIO, kubeConfig: KubeConfig): Promise<number> {
  const rest = new RestClient(kubeConfig);
  const iface = await ingressInterface(flags, rest);
  const ifindex = ifNameToIndex(iface.name);
  const pinDir = path.join(flags.bpffs, PIN_SUBDIR);
  const metrics = new RuntimeMetrics({ processMetrics: false });
  const channel = new NatChildChannel(async () =>
    familiesWithPrefix(await metrics.exposition(), [metrics.name('agent_nat_'), metrics.name('agent_ngw_')]),
  );
  let nat: NatDataplane;
  try {
    nat = attachNatDataplane(flags, { ifindex, name: iface.name }, pinDir, (err) =>
      logger.error('VXLAN device not made: direct ElasticIPs of other nodes are not carried here (EN-9)', { err }),
    );
  } catch (err) {
    logger.error('NAT programs not attached: this node translates no ElasticIP', { err });
    channel.send({ type: 'unavailable' });
    return NAT_UNAVAILABLE_EXIT;
  }
  try {
    logger.info('NAT programs attached', {
      iface: iface.name,
      podIfaces: flags.natPodIfaces,
      bindings: nat.maps.bindings().length,
      direct: nat.maps.directBindings().length,
      kernelForward: flags.natKernelForward,
    });
    channel.send({ type: 'attached' });
    // NGW-5: the NATGateway loop's Events (port exhaustion), written from this process.
    const recorder = new EventRecorder(rest, {
      reportingController: 'juneau.loutres.me/agent',
      reportingInstance: flags.nodeName,
      logger,
    });
    const sync = natLoop(
      flags,
      logger,
      rest,
      nat,
      new NgwLoop({
        client: rest,
        nodeName: flags.nodeName,
        datapath: new NgwDataplane({ underlayDevice: await underlayDevice(flags, rest, iface) }),
        portRange: flags.ngwPortRange,
        logger,
        recorder,
        insertFailed: () => conntrackStats().insertFailed,
        // Counted, never listed: a poll's cost is the gateways' conntrack entries parsed, not kept.
        readNode: () => readNgwNode({ listLimit: 0 }),
        metrics: new NgwMetrics(metrics),
      }),
      metrics,
      await serviceCIDRsServedOrLog(
        rest,
        logger,
        'the Service range keeps the pod address only if --nat-cluster-cidrs names it',
      ),
      (addresses) => channel.send({ type: 'served', addresses }),
    );
    // Resolves once the first pass is written, or early when stopped (then reconciledOnce is false).
    void sync.start().then(() => sync.reconciledOnce && channel.send({ type: 'reconciled' }));
    const why = await Promise.race([io.stopSignal, NatChildChannel.parentGone().then(() => 'agent gone')]);
    logger.info('NAT loop stopping', { why });
    await sync.stop();
    await recorder.stop();
    return 0;
  } finally {
    nat.maps.close();
  }
}

interface Running {
  readonly rest: RestClient;
  readonly iface: LocalInterface;
  readonly ifindex: number;
  readonly pinDir: string;
  readonly attached: AttachResult;
  readonly nat: NatProcess;
}

/** A feature's loop (arp/, nat/, liveness/): serve() starts them in the order Parts.loops lists
 * them, and stops them in reverse. */
interface FeatureLoop {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/** The agent's long-running parts, built but not started. */
interface Parts {
  readonly runtimeMetrics: RuntimeMetrics;
  readonly recorder: EventRecorder;
  readonly counters: AnnounceCounters | undefined;
  readonly arp: ArpSync;
  readonly lease: AgentLease | undefined;
  readonly uninstall: UninstallWatch | undefined;
  /** CNI-1: juneau-cni in the node's bin dir and conflist (with --cni-bin-dir/--cni-conf-dir). */
  readonly cniInstaller: CniInstaller | undefined;
  /** Every feature's loop, in start order. */
  readonly loops: readonly FeatureLoop[];
}

async function serve(flags: AgentFlags, logger: Logger, io: MainIO, r: Running): Promise<number> {
  const parts = buildParts(flags, logger, r);
  const { arp, uninstall, recorder, counters, loops } = parts;
  const health = healthServer(flags, r, parts, await secureMetricsFor(flags, r.rest, logger));
  const ports = await health.start();
  logger.info('listening', ports);
  const starts = loops.map((loop) => loop.start());
  // Ready once ARP has written its first pass and the NAT process its own (or cannot attach).
  const started = Promise.all([starts[loops.indexOf(arp)], r.nat.ready]).then(() =>
    logger.info('ready: informers synced and maps reconciled', { entries: r.attached.maps.addresses().size }),
  );
  const signal = await Promise.race([io.stopSignal, started.then(() => io.stopSignal)]);
  // Decided before anything stops: what the watch saw last (liveness/uninstall.ts says why not at SIGTERM).
  const stop = uninstall?.stopKind() ?? { uninstall: false, why: 'no --owner-daemonset' };
  logger.info('stopping', { signal, detach: flags.detachOnExit, uninstall: stop.uninstall, why: stop.why });
  for (const loop of [...loops].reverse()) await loop.stop();
  await recorder.stop();
  await health.stop();
  counters?.close();
  leaveDataplane(flags, logger, r, stop);
  // CNI-1: an uninstall takes juneau-cni out of the chain and the bin dir; a restart leaves it.
  if (stop.uninstall && parts.cniInstaller)
    logger.info('juneau-cni uninstalled', { done: parts.cniInstaller.remove() });
  return 0;
}

/** BIRD's control socket and configuration file in --bgp-dir (the install's bird container, constructs/shared/install/agent.ts). */
const BIRD_SOCKET = 'bird.ctl';
const BIRD_CONFIG_FILE = 'bird.conf';

/** How often the agent checks that the node's conflist still chains juneau-cni (a CNI may rewrite it). */
const CNI_CHAIN_CHECK_MS = 30_000;

/** Every feature's loop, none started: the NAT process, ARP (with its move announcements, FO-1),
 * the node's Lease (FO-3), the answers' heartbeat (FO-2) and the uninstall watch. */
function buildParts(flags: AgentFlags, logger: Logger, r: Running): Parts {
  const runtimeMetrics = new AgentMetrics(r.nat);
  const recorder = new EventRecorder(r.rest, {
    reportingController: 'juneau.loutres.me/agent',
    reportingInstance: flags.nodeName,
    logger,
  });
  const counters = openAnnounceCounters(r.pinDir, logger);
  const arp = arpLoop(flags, logger, r, { runtimeMetrics, recorder, counters });
  const lease = flags.leaseNamespace
    ? new AgentLease({
        rest: r.rest,
        namespace: flags.leaseNamespace,
        nodeName: flags.nodeName,
        leaseDurationMs: flags.leaseDurationMs,
        renewIntervalMs: flags.leaseRenewIntervalMs,
        logger,
      })
    : undefined;
  // FO-2: the heartbeat moves while the agent's view is current, never past the last renewal the
  // API server accepted (liveness/lease.ts says why).
  const heartbeat = new AnswerHeartbeat({
    maps: r.attached.maps,
    ifindex: r.ifindex,
    expiryMs: flags.answerExpiryMs,
    logger,
    provenAtNs: () => (!arp.viewIsCurrent ? undefined : lease ? lease.lastRenewSentNs : monotonicNowNs()),
  });
  const uninstall = flags.ownerDaemonSet
    ? new UninstallWatch(r.rest, parseOwnerDaemonSet(flags.ownerDaemonSet), logger)
    : undefined;
  // CNI-1..CNI-3: the plugin's socket (always: a node chained by hand works too) and its installation.
  const cniServer = new CniServer({
    rest: r.rest,
    socket: flags.cniSocket,
    recorder,
    metrics: new CniServerMetrics(runtimeMetrics),
    logger,
  });
  const cniInstaller =
    flags.cniBinDir && flags.cniConfDir
      ? new CniInstaller({
          binDir: flags.cniBinDir,
          confDir: flags.cniConfDir,
          source: findPluginBinary(),
          intervalMs: CNI_CHAIN_CHECK_MS,
          node: { apiVersion: 'v1', kind: 'Node', name: flags.nodeName },
          recorder,
          metrics: new CniMetrics(runtimeMetrics),
          logger,
        })
      : undefined;
  // BGP mode (docs/bgp.md): BIRD in its own container, configured through its socket in --bgp-dir.
  const bgp = flags.bgpDir
    ? new BgpSync({
        client: r.rest,
        nodeName: flags.nodeName,
        routerId: r.iface.addresses[0]?.address,
        socketPath: path.join(flags.bgpDir, BIRD_SOCKET),
        configFile: path.join(flags.bgpDir, BIRD_CONFIG_FILE),
        secretNamespace: flags.leaseNamespace || INSTALL.namespace,
        recorder,
        logger: logger.child({ loop: 'bgp' }),
        watchIdleTimeoutMs: flags.watchIdleTimeoutMs,
        servedAddresses: r.nat,
      })
    : undefined;
  const loops = [r.nat, arp, lease, heartbeat, uninstall, cniServer, cniInstaller, bgp].filter(
    (l): l is NonNullable<typeof l> => l !== undefined,
  );
  return { runtimeMetrics, recorder, counters, arp, lease, uninstall, cniInstaller, loops };
}

/** The ARP loop and its move announcements (FO-1: an ARP socket open only while an address of an
 * announcing network is being handed over). */
function arpLoop(
  flags: AgentFlags,
  logger: Logger,
  r: Running,
  shared: Pick<Parts, 'runtimeMetrics' | 'recorder' | 'counters'>,
): ArpSync {
  const metrics = new ArpMetrics(shared.runtimeMetrics);
  metrics.setMode(r.attached.mode);
  const announcements: MoveAnnouncements = new MoveAnnouncements({
    nodeName: flags.nodeName,
    ifname: r.iface.name,
    mac: r.iface.mac,
    recorder: shared.recorder,
    logger,
    metrics: new AnnounceMetrics(shared.runtimeMetrics),
    counters: shared.counters,
    openSocket: () => new ArpPacketSocket(r.ifindex),
    advertisementsFor: (address) =>
      arp.advertisements
        .list()
        .filter((ad) => ad.spec?.address === address)
        .map((ad) => referenceTo(ad, JuneauResources.arpAdvertisements)),
  });
  const arp: ArpSync = new ArpSync({
    announcements,
    watchIdleTimeoutMs: flags.watchIdleTimeoutMs,
    client: r.rest,
    nodeName: flags.nodeName,
    datapath: r.attached.maps,
    recorder: shared.recorder,
    iface: r.iface,
    readInterface: () => localInterfaces().find((i) => i.name === r.iface.name),
    pollIntervalMs: flags.pollIntervalMs,
    conflictDetection: flags.conflictDetection,
    metrics,
    logger,
    rewriteMac: (mac) => {
      if (!r.attached.maps.setInterfaceMac(r.ifindex, mac))
        throw new Error(`juneau_config has no entry for ifindex ${r.ifindex} (${r.iface.name})`);
    },
  });
  return arp;
}

/** The agent's metrics, and the NAT child's after them (SEC-4: its registry is in its process). */
class AgentMetrics extends RuntimeMetrics {
  constructor(private readonly nat: NatProcess) {
    super();
  }

  override async exposition(): Promise<string> {
    return (await super.exposition()) + (await this.nat.metricsText());
  }
}

/** The NAT loop over the attached NAT maps, and the NATGateway loop inside it (in the NAT child). */
function natLoop(
  flags: AgentFlags,
  logger: Logger,
  rest: RestClient,
  datapath: NatDataplane,
  ngw: NgwLoop,
  runtimeMetrics: RuntimeMetrics,
  serviceCIDRsServed: boolean,
  onServed: (served: readonly ServedAddress[]) => void,
): NatSync {
  return new NatSync({
    onServed,
    ngw,
    client: rest,
    nodeName: flags.nodeName,
    datapath,
    pollIntervalMs: flags.pollIntervalMs,
    metrics: new NatMetrics(runtimeMetrics),
    logger,
    extraClusterCidrs: parseClusterCidrs(flags.natClusterCidrs),
    serviceCIDRsServed,
  });
}

/** /healthz and /readyz with the agent's checks, and /metrics (HTTPS to authorized callers with `secureMetrics`); not started. */
function healthServer(flags: AgentFlags, r: Running, parts: Parts, secureMetrics?: SecureMetrics): HealthServer {
  const { arp, lease } = parts;
  const nat = r.nat;
  const health = new HealthServer({
    healthAddr: flags.healthAddr,
    metricsAddr: flags.metricsAddr,
    metrics: parts.runtimeMetrics,
    secureMetrics,
  });
  health.addReadinessCheck('informers-synced', () => arp.informersSynced);
  health.addReadinessCheck('maps-reconciled', () => arp.reconciledOnce);
  // SEC-4: a NAT child that cannot attach is reported and leaves the agent ready, as before.
  health.addReadinessCheck('nat-reconciled', () => nat.unavailable || nat.reconciledOnce);
  // Filters removed by someone else (a CNI resetting the qdisc) get the agent restarted, whose NAT child attaches them again.
  health.addLivenessCheck(
    'nat-attached',
    () => !nat.attached || nat.unavailable || (natFilters(r.ifindex).in !== 0 && natFilters(r.ifindex).out !== 0),
  );
  // H3: the VXLAN device, while there is one, never decapsulates without its filter.
  health.addLivenessCheck('nat-tunnel-attached', () => !tunnelWithoutFilter());
  // A responder detached by someone else gets the agent restarted, which attaches it again.
  health.addLivenessCheck('responder-attached', () => attachedProgram(r.ifindex, r.pinDir) !== undefined);
  // FO-3: an agent whose Lease is refused (RBAC, the Lease policy, a token without its node) has
  // nothing to prove its view with, and its answers expire (FO-2): not ready says so at rollout.
  health.addReadinessCheck('lease-renewed', () => !lease || lease.lastRenewSentNs !== undefined);
  return health;
}

/** At exit: uninstall (detach and unpin), detach only (--detach-on-exit), or leave the pinned maps answering. */
function leaveDataplane(
  flags: AgentFlags,
  logger: Logger,
  r: Running,
  stop: { readonly uninstall: boolean; readonly why: string },
): void {
  if (stop.uninstall) {
    const detached = detachArpResponder(r.ifindex, r.pinDir);
    // The NAT child has stopped (the loops stop first); its filters go here, and the NATGateway
    // data path it made (tunnels, rules, routes, nftables).
    if (r.nat.attached) detachNatDataplane(flags, r.ifindex, r.pinDir);
    removeNgwDataplane(logger);
    // Unlinking the pins (every version's) frees the maps once the last descriptor (ours, closed by
    // run()) goes.
    removePins(path.join(flags.bpffs, PIN_ROOT));
    logger.info('uninstalled: responder detached and pins removed', { detached, pinDir: r.pinDir, why: stop.why });
  } else if (flags.detachOnExit) {
    const detached = detachArpResponder(r.ifindex, r.pinDir);
    r.attached.maps.removeInterfaceConfig(r.ifindex);
    if (r.nat.attached) detachNatDataplane(flags, r.ifindex, r.pinDir);
    removeNgwDataplane(logger);
    logger.info('responder detached (--detach-on-exit): this node no longer answers ARP', { detached });
  } else {
    logger.info('responder left attached; the pinned maps keep answering', {
      entries: r.attached.maps.addresses().size,
    });
  }
}

/** What the NAT child's NATGateway loop left (ngw/sync.ts), at an uninstall or --detach-on-exit. */
function removeNgwDataplane(logger: Logger): void {
  try {
    const removed = new NgwDataplane({ underlayDevice: '' }).remove();
    logger.info('NATGateway data path removed', { ...removed });
  } catch (err) {
    logger.error('removing the NATGateway data path failed', { err });
  }
}

/** The NATGateway tunnels' underlay (ngw/sync.ts): the interface holding the Node's InternalIP,
 * which the other nodes' tunnels are addressed to; the ingress interface when none holds it. */
async function underlayDevice(flags: AgentFlags, rest: RestClient, iface: LocalInterface): Promise<string> {
  const node = await rest.get<KubeObject & { status?: { addresses?: Array<{ type?: string; address?: string }> } }>(
    Resources.nodes,
    undefined,
    flags.nodeName,
  );
  const internal = new Set(nodeInternalIPs(node));
  return localInterfaces().find((i) => i.addresses.some((a) => internal.has(a.address)))?.name ?? iface.name;
}

/** FO-1: the pinned per-address announcement counters; without them announcing still works. */
function openAnnounceCounters(pinDir: string, logger: Logger): AnnounceCounters | undefined {
  try {
    return AnnounceCounters.openOrCreate(pinDir);
  } catch (err) {
    logger.error('announcement counters map not pinned: bpf dump announcements shows nothing for this node', { err });
    return undefined;
  }
}

/** NAT-2: whether the API server serves ServiceCIDRs (kube/service-cidrs.ts), logged when not. */
/** `--node-ingress-iface`, else the interface holding the Node's InternalIP (EN-12). */
async function ingressInterface(flags: AgentFlags, rest: RestClient): Promise<LocalInterface> {
  const interfaces = localInterfaces();
  if (flags.nodeIngressIface)
    return chooseInterface({
      requested: flags.nodeIngressIface,
      nodeName: flags.nodeName,
      internalIPs: [],
      interfaces,
    });
  const node = await rest.get<KubeObject & { status?: { addresses?: Array<{ type?: string; address?: string }> } }>(
    Resources.nodes,
    undefined,
    flags.nodeName,
  );
  return chooseInterface({ nodeName: flags.nodeName, internalIPs: nodeInternalIPs(node), interfaces });
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}
