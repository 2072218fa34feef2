/**
 * The BGP loop, BgpSync (docs/bgp.md): informers of the BGPPeers, BGPAdvertisements,
 * ExternalNetworks, ServiceLoadBalancers and the agent's own Node, and the ElasticIPs and NATGateways the NAT
 * process reports served here (BGP-4; it holds the tenants' objects, SEC-4), feed a level-triggered pass:
 * decide (decide.ts) -> render (bird-config.ts) -> apply to BIRD over its control socket
 * (birdc.ts) when the text differs from what BIRD runs, or when BIRD restarted since -> read the
 * sessions -> report them in the node's BGPNodeState (node-state.ts, node-state-writer.ts).
 *
 * Nothing is applied before every informer has synced: a restarted agent with an empty cache would
 * otherwise withdraw every route BIRD still announces (BGP-6). The agent never stops BIRD, and
 * stopping the agent leaves BIRD's configuration as it is: BIRD keeps the sessions and routes
 * through an agent restart or upgrade. A VIP whose ServiceLoadBalancer stops listing the node is
 * withdrawn at the next pass (BGP-5); a configuration BIRD refuses leaves the running one in force,
 * said in the log and in a Warning Event on the Node (BGP-7).
 */
import type { BGPAdvertisement, BGPPeer, ServiceLoadBalancer } from '../../../api';
import { advertisementView, peerView } from '../../../api/validation';
import type { EventRecorder } from '../../kube/events';
import { Informer, trimmedObject, type ListWatchClient } from '../../kube/informer';
import { silentLogger, type Logger } from '../../kube/log';
import { JuneauResources, Resources } from '../../kube/resources';
import { getOrUndefined, type RestClient } from '../../kube/rest';
import type { KubeObject } from '../../kube/types';
import { InformerLoop } from '../informer-loop';
import { AGENT_PAGE_SIZE, agentViews, type ExternalNetworkObject } from '../resources';
import { renderBirdConfig } from './bird-config';
import { applyBirdConfig, bgpSessions, birdBootTime, type BgpSessionState } from './birdc';
import { decideBgp, type BgpDecision, type DecidedAddress, type PeerWithSecret, type SlbView } from './decide';
import { nodeStateStatus, type NodeStateStatus } from './node-state';
import { BGP_EVENT_REASONS, NodeStateWriter } from './node-state-writer';
import { DEFAULT_PASSWORD_KEY, PeerPasswords } from './passwords';
import { Md5Drops, readMd5Counters, type Md5Peer } from './tcp-md5';
import type { ServedAddress } from '../nat/desired';

type PeerObject = BGPPeer & KubeObject;
type BgpAdvertisementObject = BGPAdvertisement & KubeObject;
type SlbObject = ServiceLoadBalancer & KubeObject;
type NodeObject = KubeObject & { metadata?: { labels?: Record<string, string> } };

export interface BgpSyncOptions {
  readonly client: ListWatchClient & Pick<RestClient, 'get' | 'patch'>;
  readonly nodeName: string;
  /** BIRD's router id: the node's address on the ingress interface. */
  readonly routerId?: string;
  /** BIRD's control socket. */
  readonly socketPath: string;
  /** The configuration file BIRD was started with (the agent rewrites it). */
  readonly configFile: string;
  /** Where the BGPPeers' password Secrets are (the install namespace). */
  readonly secretNamespace: string;
  readonly recorder: Pick<EventRecorder, 'normal' | 'warning'>;
  readonly logger?: Logger;
  /** How often BIRD's sessions are read (and a failed apply retried). @default 2000 */
  readonly pollIntervalMs?: number;
  /** At most one BGPNodeState write per this interval. @default 2000 */
  readonly minWriteIntervalMs?: number;
  readonly watchIdleTimeoutMs?: number;
  /** The kernel's TCP counters of the node's network namespace (tcp-md5.ts). @default /proc/net/netstat */
  readonly netstatFile?: string;
  /** BGP-4: the ElasticIPs and NATGateways this node serves (the NAT process, nat-process.ts). Until it
   * has reported them nothing is applied, as for the informers. @default none are announced */
  readonly servedAddresses?: ServedAddresses;
}

/** What the BGP loop reads of the NAT process. */
export interface ServedAddresses {
  readonly served: readonly ServedAddress[] | undefined;
  onServedChange(listener: () => void): void;
}

export class BgpSync {
  readonly peers: Informer<PeerObject>;
  readonly advertisements: Informer<BgpAdvertisementObject>;
  readonly networks: Informer<ExternalNetworkObject>;
  readonly serviceLoadBalancers: Informer<SlbObject>;
  readonly node: Informer<NodeObject>;
  readonly writer: NodeStateWriter;
  private readonly logger: Logger;
  private readonly loop: InformerLoop;
  private readonly passwords: PeerPasswords;
  private readonly md5 = new Md5Drops();
  /** The text BIRD runs (as far as the agent knows) and the boot it was applied in. */
  private applied: { text: string; boot: string; addresses: readonly DecidedAddress[] } | undefined;
  private refused = '';
  private reportedProblems = '';
  private birdUnreachable = '';
  private waitingForNat = false;
  private previous: NodeStateStatus | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** Passes that applied a configuration BIRD accepted (tests, logs). */
  applies = 0;

  constructor(private readonly options: BgpSyncOptions) {
    this.logger = options.logger ?? silentLogger;
    this.loop = new InformerLoop(this, {
      logger: this.logger,
      waiting: 'still waiting for the BGP informers; BIRD keeps announcing what it announced meanwhile',
      pollIntervalMs: options.pollIntervalMs ?? 2000,
    });
    const common = { logger: this.logger, idleTimeoutMs: options.watchIdleTimeoutMs, pageSize: AGENT_PAGE_SIZE };
    this.peers = new Informer<PeerObject>(options.client, { ...common, type: JuneauResources.bgpPeers });
    this.advertisements = new Informer<BgpAdvertisementObject>(options.client, {
      ...common,
      type: JuneauResources.bgpAdvertisements,
    });
    this.networks = new Informer<ExternalNetworkObject>(options.client, {
      ...common,
      type: JuneauResources.externalNetworks,
      transform: agentViews.externalNetwork,
    });
    this.serviceLoadBalancers = new Informer<SlbObject>(options.client, {
      ...common,
      type: JuneauResources.serviceLoadBalancers,
      transform: (slb) =>
        trimmedObject(slb, {
          spec: { externalNetwork: slb.spec?.externalNetwork },
          ...(slb.status ? { status: { vip: slb.status.vip, advertisingNodes: slb.status.advertisingNodes } } : {}),
        } as Partial<SlbObject>),
    });
    this.node = new Informer<NodeObject>(options.client, {
      ...common,
      type: Resources.nodes,
      fieldSelector: `metadata.name=${options.nodeName}`,
      transform: (n) => trimmedObject(n, { metadata: { labels: n.metadata?.labels } } as Partial<NodeObject>),
    });
    this.passwords = new PeerPasswords(options.client, options.secretNamespace);
    this.writer = new NodeStateWriter({
      rest: options.client,
      nodeName: options.nodeName,
      recorder: options.recorder,
      logger: this.logger,
      minIntervalMs: options.minWriteIntervalMs,
    });
    const any = () => this.reconcile();
    for (const informer of this.informers()) informer.addHandlers({ onAdd: any, onUpdate: any, onDelete: any });
    options.servedAddresses?.onServedChange(any);
  }

  informers(): ReadonlyArray<Informer<KubeObject>> {
    return [this.peers, this.advertisements, this.networks, this.serviceLoadBalancers, this.node] as unknown as Array<
      Informer<KubeObject>
    >;
  }

  async start(): Promise<void> {
    await this.loop.start();
  }

  /** Stops the loop; BIRD keeps its configuration, sessions and routes (BGP-6). */
  async stop(): Promise<void> {
    await this.loop.stop(async () => {
      await this.running;
      await this.writer.stop();
    });
  }

  get informersSynced(): boolean {
    return this.loop.informersSynced;
  }

  /** A pass: once the informers synced, and then again for every change (coalesced). */
  reconcile(): void {
    this.loop.schedule(() => this.pass());
  }

  poll(): void {
    this.pass();
  }

  /** Resolves when no pass is running or asked for (tests). */
  async settled(): Promise<void> {
    while (this.running || this.loop.scheduled) await (this.running ?? new Promise((r) => setImmediate(r)));
  }

  private pass(): void {
    if (!this.loop.running) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.runPass()
      .catch((err) => {
        this.logger.error('BGP pass failed; retrying at the next poll', { err });
        this.loop.passFailed();
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.pass();
        }
      });
  }

  private async runPass(): Promise<void> {
    const source = this.options.servedAddresses;
    if (source && source.served === undefined) {
      // BGP-6: an agent that restarted must not withdraw the addresses BIRD still announces
      // before its NAT process has said which it serves.
      if (!this.waitingForNat)
        this.logger.info(
          'waiting for the NAT process to report the ElasticIPs and NATGateways it serves; BIRD keeps announcing what it announced meanwhile',
        );
      this.waitingForNat = true;
      return;
    }
    this.waitingForNat = false;
    const decision = await this.decide();
    const problems = decision.problems.join('\n');
    if (problems !== this.reportedProblems && problems)
      this.logger.warn('BGP: left out', { problems: decision.problems });
    this.reportedProblems = problems;
    const sessions = await this.applyAndRead(decision);
    if (!this.loop.running) return;
    if (this.previous === undefined) this.previous = await this.existingStatus();
    const md5Peers = this.md5Peers(decision, sessions);
    this.md5.update(await readMd5Counters(this.options.netstatFile), md5Peers);
    const status = nodeStateStatus(
      decision.config.peers.map((p) => p.name),
      sessions,
      this.applied?.addresses ?? [],
      this.previous,
      new Date(),
      this.md5.explanations(md5Peers),
    );
    this.previous = { ...status };
    this.writer.offer(status);
    this.loop.passSucceeded();
  }

  /** The node's peers for tcp-md5.ts: up or not, and where a password comes from. */
  private md5Peers(decision: BgpDecision, sessions: readonly BgpSessionState[]): Md5Peer[] {
    const up = new Set(sessions.filter((s) => s.state === 'Established').map((s) => s.peer));
    return decision.config.peers.map((p) => {
      const ref = this.peers.get(undefined, p.name)?.spec?.passwordSecretRef;
      const where = ref
        ? `Secret ${this.options.secretNamespace}/${ref.name} key ${ref.key ?? DEFAULT_PASSWORD_KEY} (spec.passwordSecretRef)`
        : undefined;
      return { name: p.name, established: up.has(p.name), ...(p.password !== undefined ? { password: where } : {}) };
    });
  }

  private async decide(): Promise<BgpDecision> {
    const node = this.node.get(undefined, this.options.nodeName);
    const peers: PeerWithSecret[] = [];
    const refs = new Set<string>();
    for (const p of this.peers.list()) {
      const view = peerView(p);
      const ref = p.spec?.passwordSecretRef;
      if (ref) refs.add(ref.name);
      peers.push(ref ? { ...view, password: await this.passwords.password(ref) } : view);
    }
    this.passwords.retain(refs);
    const slbs: SlbView[] = this.serviceLoadBalancers.list().map((s) => ({
      key: `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`,
      externalNetwork: s.spec?.externalNetwork ?? '',
      vip: s.status?.vip,
      advertisingNodes: s.status?.advertisingNodes ?? [],
      deleting: !!s.metadata?.deletionTimestamp,
    }));
    return decideBgp({
      node: { name: this.options.nodeName, labels: node?.metadata?.labels },
      routerId: this.options.routerId,
      peers,
      advertisements: this.advertisements.list().map((a) => advertisementView(a)),
      bgpNetworks: new Set(
        this.networks
          .list()
          .filter((n) => n.spec?.type === 'bgp')
          .map((n) => n.metadata?.name ?? ''),
      ),
      serviceLoadBalancers: slbs,
      served: this.options.servedAddresses?.served ?? [],
    });
  }

  /** Applies the decision when BIRD runs something else, then reads BIRD's sessions ([] when BIRD is not reachable). */
  private async applyAndRead(decision: BgpDecision): Promise<BgpSessionState[]> {
    const { socketPath, configFile } = this.options;
    let text: string;
    try {
      text = renderBirdConfig(decision.config);
    } catch (err) {
      this.reportRefusal(`not rendered: ${(err as Error).message}`);
      return this.sessions();
    }
    let boot: string;
    try {
      boot = await birdBootTime(socketPath);
    } catch (err) {
      const why = (err as Error).message;
      if (why !== this.birdUnreachable)
        this.logger.error('BIRD not reachable on its control socket; nothing is configured until it is', {
          socket: socketPath,
          err: why,
        });
      this.birdUnreachable = why;
      this.loop.passFailed();
      return [];
    }
    if (this.birdUnreachable) this.logger.info('BIRD reachable again', { socket: socketPath });
    this.birdUnreachable = '';
    if (this.applied?.text !== text || this.applied.boot !== boot) {
      const restarted = this.applied !== undefined && this.applied.boot !== boot;
      const result = await applyBirdConfig(socketPath, configFile, text);
      if (result.ok) {
        this.applied = { text, boot, addresses: decision.addresses };
        this.applies++;
        this.refused = '';
        this.logger.info('BIRD configured', {
          peers: decision.config.peers.map((p) => p.name),
          prefixes: decision.addresses.length,
          ...(restarted ? { why: 'BIRD restarted' } : {}),
          bird: result.message,
        });
      } else {
        this.reportRefusal(result.error);
      }
    }
    return this.sessions();
  }

  private async sessions(): Promise<BgpSessionState[]> {
    try {
      return await bgpSessions(this.options.socketPath);
    } catch (err) {
      this.logger.error('BIRD sessions not read', { err });
      return [];
    }
  }

  /** BGP-7: once per distinct refusal: an error line and a Warning Event on the Node. */
  private reportRefusal(error: string): void {
    this.loop.passFailed();
    if (error === this.refused) return;
    this.refused = error;
    this.logger.error('BIRD refused the configuration; it keeps running the previous one', { error });
    this.options.recorder.warning(
      { apiVersion: 'v1', kind: 'Node', name: this.options.nodeName },
      BGP_EVENT_REASONS.configRefused,
      'Configure',
      `BIRD refused the configuration the agent rendered and keeps the previous one (BGP-7): ${error}`,
    );
  }

  /** The status a previous agent wrote (its transition times carry over a restart). */
  private async existingStatus(): Promise<NodeStateStatus | undefined> {
    try {
      const existing = await getOrUndefined<KubeObject & { status?: NodeStateStatus }>(
        this.options.client as RestClient,
        JuneauResources.bgpNodeStates,
        undefined,
        this.options.nodeName,
      );
      return existing?.status ?? {};
    } catch (err) {
      this.logger.warn('BGPNodeState not read; transition times start now', { err });
      return {};
    }
  }
}
