/**
 * The agent's ElasticIP data plane (EIP-4, NAT-1..NAT-5, DIR-1): informers of ElasticIPs,
 * ElasticIPAttachments and NetworkInterfaces feed one level-triggered pass that computes this node's
 * bindings (desiredNat) and makes the pinned NAT maps equal to them (NatMaps.sync); informers of
 * Nodes, ServiceCIDRs and the `default/kubernetes` EndpointSlices (the API servers) feed the same
 * pass the in-cluster prefixes (NAT-2, prefixes.ts), written to juneau_nat_skip when they change.
 * Same shape as ArpSync (arp/sync.ts): passes coalesced, nothing written before every informer has synced (an agent that
 * restarts with an empty cache must not empty the maps the running programs translate with:
 * NAT-4), and a failed pass retried at the next poll, which also feeds the per-ElasticIP metrics.
 *
 * Which bindings are this node's is desired.ts; two more informers (Nodes, ExternalNetworks)
 * feed its remote side (EN-9).
 */
import { Informer, type ListWatchClient } from '../../kube/informer';
import { InformerLoop } from '../informer-loop';
import { silentLogger, type Logger } from '../../kube/log';
import { JuneauResources, Resources } from '../../kube/resources';
import type { KubeObject } from '../../kube/types';
import type { DirectBinding, NatBinding, NatEntry, NatSyncResult, RemoteBinding } from '../bpf/nat';
import type { NatReasonName, Prefix } from '../bpf/layout';
import { clusterPrefixes, prefixesKey, type EndpointSliceSource, type ServiceCIDRSource } from './prefixes';
import {
  desiredNat,
  type AttachmentObject,
  type DesiredNat,
  type ElasticIPObject,
  type ExternalNetworkObject,
  type NetworkInterfaceObject,
  type NodeObject,
} from './desired';
import type { NatMetrics } from './metrics';

/** The Kubernetes resources NatSync reads beside its Juneau kinds (which are in JuneauResources). */
export const NatResources = {
  nodes: Resources.nodes,
  endpointSlices: Resources.endpointSlices,
  serviceCIDRs: Resources.serviceCIDRs,
} as const;

type ServiceCIDRObject = ServiceCIDRSource & KubeObject;
type EndpointSliceObject = EndpointSliceSource & KubeObject;

/** The `kubernetes` Service's EndpointSlices: its endpoints are the API servers (NAT-2), which a
 * managed or external control plane does not run on Nodes. Only these are listed and cached. */
export const API_SERVER_SLICES = { namespace: 'default', labelSelector: 'kubernetes.io/service-name=kubernetes' };

/** What the agent writes through: the pinned NAT maps (NatMaps of runtime/agent/bpf/nat.ts). */
export interface NatDatapath {
  sync(nat: readonly NatBinding[], direct: readonly DirectBinding[], remote: readonly RemoteBinding[]): NatSyncResult;
  /** Replaces the in-cluster destinations (NAT-2). */
  setInClusterPrefixes(prefixes: readonly Prefix[]): void;
  entries(): NatEntry[];
  stats(): Record<NatReasonName, bigint>;
}

export interface NatSyncOptions {
  readonly client: ListWatchClient;
  readonly nodeName: string;
  readonly datapath: NatDatapath;
  /** @default 5000 */
  readonly pollIntervalMs?: number;
  readonly metrics?: NatMetrics;
  readonly logger?: Logger;
  /** `--nat-cluster-cidrs`, added to what is learned (parseClusterCidrs). @default none */
  readonly extraClusterCidrs?: readonly string[];
  /** Whether the API server serves networking.k8s.io/v1 ServiceCIDRs (1.33+): without them only
   * `extraClusterCidrs` name the Service range. @default true */
  readonly serviceCIDRsServed?: boolean;
}

export class NatSync {
  readonly elasticIPs: Informer<ElasticIPObject>;
  readonly attachments: Informer<AttachmentObject>;
  readonly networkInterfaces: Informer<NetworkInterfaceObject>;
  readonly externalNetworks: Informer<ExternalNetworkObject>;
  readonly nodes: Informer<NodeObject>;
  readonly serviceCIDRs: Informer<ServiceCIDRObject> | undefined;
  readonly apiServerSlices: Informer<EndpointSliceObject>;
  private readonly logger: Logger;
  /** The in-cluster prefixes last written (prefixesKey); undefined: not yet, or the write failed. */
  private writtenPrefixes: string | undefined;
  private reportedSkipped = '';
  private reportedWaiting = '';
  private readonly loop: InformerLoop;

  constructor(private readonly options: NatSyncOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: 'nat' });
    this.loop = new InformerLoop(this, {
      logger: this.logger,
      waiting: 'still waiting for the informers; the pinned NAT maps keep translating meanwhile',
      pollIntervalMs: options.pollIntervalMs,
    });
    const common = { logger: this.logger };
    this.elasticIPs = new Informer(options.client, { ...common, type: JuneauResources.elasticIPs });
    this.attachments = new Informer(options.client, { ...common, type: JuneauResources.elasticIPAttachments });
    this.networkInterfaces = new Informer(options.client, { ...common, type: JuneauResources.networkInterfaces });
    this.externalNetworks = new Informer(options.client, { ...common, type: JuneauResources.externalNetworks });
    this.nodes = new Informer(options.client, { ...common, type: NatResources.nodes });
    this.serviceCIDRs =
      options.serviceCIDRsServed === false
        ? undefined
        : new Informer(options.client, { ...common, type: NatResources.serviceCIDRs });
    this.apiServerSlices = new Informer(options.client, {
      ...common,
      type: NatResources.endpointSlices,
      ...API_SERVER_SLICES,
    });
    const schedule = { onAdd: () => this.schedule(), onUpdate: () => this.schedule(), onDelete: () => this.schedule() };
    for (const informer of this.informers()) informer.addHandlers(schedule);
  }

  /** Starts the informers, waits for them (the pinned maps translate meanwhile), writes the first
   * pass, then polls. Resolves early when stopped. */
  async start(): Promise<void> {
    await this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  get informersSynced(): boolean {
    return this.loop.informersSynced;
  }

  get reconciledOnce(): boolean {
    return this.loop.reconciledOnce;
  }

  reconcile(): DesiredNat | undefined {
    if (!this.loop.running) return undefined;
    const desired = desiredNat({
      nodeName: this.options.nodeName,
      elasticIPs: this.elasticIPs.list(),
      attachments: this.attachments.list(),
      networkInterfaces: this.networkInterfaces.list(),
      externalNetworks: this.externalNetworks.list(),
      nodes: this.nodes.list(),
    });
    try {
      // Prefixes first: a binding's first packet to the cluster already keeps the pod address.
      this.writeClusterPrefixes();
      const r = this.options.datapath.sync(desired.nat, desired.direct, desired.remote);
      if (Object.values(r).some((changed: unknown[]) => changed.length > 0))
        this.logger.info('NAT maps reconciled', { ...r });
      this.options.metrics?.bindings.set({ kind: 'nat' }, desired.nat.length);
      this.options.metrics?.bindings.set({ kind: 'direct' }, desired.direct.length);
      this.options.metrics?.bindings.set({ kind: 'remote' }, desired.remote.length);
      this.loop.passSucceeded();
    } catch (err) {
      this.logger.error('writing the NAT maps failed; retrying at the next poll', { err });
      this.loop.passFailed();
    }
    const waiting = desired.waiting.join('\n');
    if (waiting && waiting !== this.reportedWaiting)
      this.logger.info('ElasticIPs of this node not translated yet', { waiting: desired.waiting });
    this.reportedWaiting = waiting;
    return desired;
  }

  /** NAT-2: the learned and configured in-cluster prefixes, written when they changed. */
  private writeClusterPrefixes(): void {
    const { prefixes, skipped } = clusterPrefixes({
      nodes: this.nodes.list(),
      serviceCIDRs: this.serviceCIDRs?.list() ?? [],
      apiServerSlices: this.apiServerSlices.list(),
      extra: this.options.extraClusterCidrs ?? [],
    });
    const key = prefixesKey(prefixes);
    const notes = skipped.join('\n');
    if (notes && notes !== this.reportedSkipped) this.logger.warn('in-cluster prefixes left out', { skipped });
    this.reportedSkipped = notes;
    if (key === this.writtenPrefixes) return;
    this.writtenPrefixes = undefined;
    this.options.datapath.setInClusterPrefixes(prefixes);
    this.writtenPrefixes = key;
    this.logger.info('in-cluster prefixes written: traffic to them keeps the pod address (NAT-2)', {
      prefixes: key.split(',').filter(Boolean),
    });
  }

  poll(): void {
    if (!this.loop.running) return;
    if (this.loop.lastPassFailed) this.reconcile();
    try {
      this.options.metrics?.observe(this.options.datapath.entries(), this.options.datapath.stats());
    } catch (err) {
      this.logger.error('reading the NAT maps failed', { err });
    }
  }

  private schedule(): void {
    this.loop.schedule(() => this.reconcile());
  }

  /** The loop's informers (InformerLoop starts and stops them). */
  informers(): Array<Informer<KubeObject>> {
    return [
      this.elasticIPs,
      this.attachments,
      this.networkInterfaces,
      this.externalNetworks,
      this.nodes,
      this.apiServerSlices,
      ...(this.serviceCIDRs ? [this.serviceCIDRs] : []),
    ] as Array<Informer<KubeObject>>;
  }
}
