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
 * feed its remote side (EN-9), and one of this node's Pods proves each NIC's Pod runs with its
 * address (H1). Every informer is node-scoped where the objects allow it and trimmed to the fields
 * the pass reads (H4: resources.ts agentViews).
 */
import { Informer, type ListWatchClient } from '../../kube/informer';
import { InformerLoop } from '../informer-loop';
import { silentLogger, type Logger } from '../../kube/log';
import { JuneauResources, Resources } from '../../kube/resources';
import { objectKey, type KubeObject } from '../../kube/types';
import type { DirectBinding, NatBinding, NatEntry, NatSyncResult, RemoteBinding } from '../bpf/nat';
import type { NatReasonName, Prefix } from '../bpf/layout';
import { API_SERVER_SLICE_NAME, clusterPrefixes, prefixesKey, reservedAddresses } from './prefixes';
import {
  AGENT_PAGE_SIZE,
  agentViews,
  nodeFieldSelector,
  type EndpointSliceObject,
  type ServiceCIDRObject,
} from '../resources';
import { localInterfaces } from '../interface';
import {
  desiredNat,
  type AttachmentObject,
  type DesiredNat,
  type ElasticIPObject,
  type ExternalNetworkObject,
  type NetworkInterfaceObject,
  type NodeObject,
  type PodObject,
  type ServedAddress,
} from './desired';
import type { NatMetrics } from './metrics';
import { podAddresses, type PodDeviceReport } from './pod-devices';
import { nodeInternalIPs } from '../interface';
import { formatPrefix } from '../bpf/prefixes';
import type { NgwLoop } from '../ngw/loop';

/** The Kubernetes resources NatSync reads beside its Juneau kinds (which are in JuneauResources). */
export const NatResources = {
  nodes: Resources.nodes,
  pods: Resources.pods,
  endpointSlices: Resources.endpointSlices,
  serviceCIDRs: Resources.serviceCIDRs,
} as const;

/** The `kubernetes` Service's EndpointSlice: its endpoints are the API servers (NAT-2), which a
 * managed or external control plane does not run on Nodes. Only the one kube-apiserver writes is
 * listed and cached (L5: prefixes.ts notApiServerSlice). */
export const API_SERVER_SLICES = {
  namespace: 'default',
  labelSelector: 'kubernetes.io/service-name=kubernetes',
  fieldSelector: `metadata.name=${API_SERVER_SLICE_NAME}`,
};

/** What the agent writes through: the pinned NAT maps (NatMaps of runtime/agent/bpf/nat.ts). */
export interface NatDatapath {
  sync(nat: readonly NatBinding[], direct: readonly DirectBinding[], remote: readonly RemoteBinding[]): NatSyncResult;
  /** Replaces the in-cluster destinations (NAT-2). */
  setInClusterPrefixes(prefixes: readonly Prefix[]): void;
  entries(): NatEntry[];
  stats(): Record<NatReasonName, bigint>;
  /** H3: this node's InternalIP and every Node's, the only VXLAN sources accepted; written before
   * each sync. @default not written */
  setNodes?(self: string | undefined, nodes: readonly string[]): void;
  /** H1/M3: the pods' devices resolved again, at every poll. @default not done */
  refreshDevices?(): number;
  /** NAT-2, NAT-4: tc_nat_pod on the devices this node's pods are reached through (pod-devices.ts),
   * at every pass and poll. @default not done */
  followPods?(addresses: readonly string[]): PodDeviceReport | undefined;
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
  /** H5: this node's interface addresses, read at each pass. @default every IPv4 address of os.networkInterfaces() */
  readonly localAddresses?: () => string[];
  /** The NATGateway loop (ngw/loop.ts), run after each pass with what it shares: the Nodes, this
   * node's Pods (then cached with their labels), the in-cluster ranges and the ElasticIP pods.
   * @default none */
  readonly ngw?: NgwLoop;
  /** BGP-4: after each pass whose maps were written, when the ElasticIPs they serve or the
   * NATGateways this node is the gateway of changed (and after the first): the agent's BGP loop
   * announces those of bgp networks. @default none */
  readonly onServed?: (served: readonly ServedAddress[]) => void;
}

/** Every IPv4 address of this network namespace's interfaces. */
const hostAddresses = () => localInterfaces().flatMap((i) => i.addresses.map((a) => a.address));

export class NatSync {
  readonly elasticIPs: Informer<ElasticIPObject>;
  /** This node's (status.nodeName, H4). */
  readonly attachments: Informer<AttachmentObject>;
  /** This node's (spec.nodeName, H4). */
  readonly networkInterfaces: Informer<NetworkInterfaceObject>;
  /** Every direct one (spec.elasticIP set), for the remote side (EN-9). */
  readonly directNetworkInterfaces: Informer<NetworkInterfaceObject>;
  readonly externalNetworks: Informer<ExternalNetworkObject>;
  readonly nodes: Informer<NodeObject>;
  readonly serviceCIDRs: Informer<ServiceCIDRObject> | undefined;
  readonly apiServerSlices: Informer<EndpointSliceObject>;
  /** This node's Pods (spec.nodeName, H1). */
  readonly pods: Informer<PodObject>;
  private readonly logger: Logger;
  /** The in-cluster prefixes last written (prefixesKey); undefined: not yet, or the write failed. */
  private writtenPrefixes: string | undefined;
  private reportedSkipped = '';
  private reportedWaiting = '';
  private reportedPodDevices = '';
  /** The ElasticIPs last handed to onServed (JSON); undefined before the first. */
  private reportedServed: string | undefined;
  private readonly loop: InformerLoop;

  constructor(private readonly options: NatSyncOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: 'nat' });
    this.loop = new InformerLoop(this, {
      logger: this.logger,
      waiting: 'still waiting for the informers; the pinned NAT maps keep translating meanwhile',
      pollIntervalMs: options.pollIntervalMs,
    });
    // H4: every informer pages, and keeps only what the passes read (resources.ts agentViews).
    const common = { logger: this.logger, pageSize: AGENT_PAGE_SIZE };
    const onNode = nodeFieldSelector(options.nodeName);
    this.elasticIPs = new Informer(options.client, {
      ...common,
      type: JuneauResources.elasticIPs,
      transform: agentViews.elasticIP,
    });
    this.attachments = new Informer(options.client, {
      ...common,
      type: JuneauResources.elasticIPAttachments,
      fieldSelector: `status.nodeName=${options.nodeName}`,
      transform: agentViews.attachment,
    });
    this.networkInterfaces = new Informer(options.client, {
      ...common,
      type: JuneauResources.networkInterfaces,
      fieldSelector: onNode,
      transform: agentViews.networkInterface,
    });
    this.directNetworkInterfaces = new Informer(options.client, {
      ...common,
      type: JuneauResources.networkInterfaces,
      fieldSelector: 'spec.elasticIP!=',
      transform: agentViews.networkInterface,
    });
    this.externalNetworks = new Informer(options.client, {
      ...common,
      type: JuneauResources.externalNetworks,
      transform: agentViews.externalNetwork,
    });
    this.nodes = new Informer(options.client, { ...common, type: NatResources.nodes, transform: agentViews.node });
    this.serviceCIDRs =
      options.serviceCIDRsServed === false
        ? undefined
        : new Informer(options.client, {
            ...common,
            type: NatResources.serviceCIDRs,
            transform: agentViews.serviceCIDR,
          });
    this.apiServerSlices = new Informer(options.client, {
      ...common,
      type: NatResources.endpointSlices,
      ...API_SERVER_SLICES,
      transform: agentViews.endpointSlice,
    });
    this.pods = new Informer(options.client, {
      ...common,
      type: NatResources.pods,
      fieldSelector: onNode,
      transform: options.ngw ? agentViews.labelledPod : agentViews.pod,
    });
    const schedule = { onAdd: () => this.schedule(), onUpdate: () => this.schedule(), onDelete: () => this.schedule() };
    for (const informer of this.informers()) informer.addHandlers(schedule);
    options.ngw?.onChange(() => this.schedule());
  }

  /** Starts the informers, waits for them (the pinned maps translate meanwhile), writes the first
   * pass, then polls. Resolves early when stopped. */
  async start(): Promise<void> {
    await this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop(() => this.options.ngw?.stop() ?? Promise.resolve());
  }

  get informersSynced(): boolean {
    return this.loop.informersSynced;
  }

  get reconciledOnce(): boolean {
    return this.loop.reconciledOnce;
  }

  reconcile(): DesiredNat | undefined {
    if (!this.loop.running) return undefined;
    const nodes = this.nodes.list();
    const local = new Map(this.networkInterfaces.list().map((n) => [objectKey(n), n]));
    const direct = this.directNetworkInterfaces.list().filter((n) => !local.has(objectKey(n)));
    const desired = desiredNat({
      nodeName: this.options.nodeName,
      elasticIPs: this.elasticIPs.list(),
      attachments: this.attachments.list(),
      networkInterfaces: [...local.values(), ...direct],
      pods: this.pods.list(),
      externalNetworks: this.externalNetworks.list(),
      nodes,
      reserved: reservedAddresses({
        nodes,
        serviceCIDRs: this.serviceCIDRs?.list() ?? [],
        apiServerSlices: this.apiServerSlices.list(),
      }),
      localAddresses: (this.options.localAddresses ?? hostAddresses)(),
    });
    this.followPods();
    try {
      // Prefixes first: a binding's first packet to the cluster already keeps the pod address.
      this.writeClusterPrefixes();
      this.writeNodes();
      const r = this.options.datapath.sync(desired.nat, desired.direct, desired.remote);
      if (Object.values(r).some((changed: unknown[]) => changed.length > 0))
        this.logger.info('NAT maps reconciled', { ...r });
      this.options.metrics?.bindings.set({ kind: 'nat' }, desired.nat.length);
      this.options.metrics?.bindings.set({ kind: 'direct' }, desired.direct.length);
      this.options.metrics?.bindings.set({ kind: 'remote' }, desired.remote.length);
      this.loop.passSucceeded();
      this.reportServed([...desired.served, ...(this.options.ngw?.served() ?? [])]);
    } catch (err) {
      this.logger.error('writing the NAT maps failed; retrying at the next poll', { err });
      this.loop.passFailed();
    }
    this.options.ngw?.reconcile({
      nodes,
      pods: this.pods.list(),
      clusterRanges: this.clusterPrefixes().prefixes.map(formatPrefix),
      elasticIPPods: desired.nat.map((b) => b.address),
    });
    const waiting = desired.waiting.join('\n');
    if (waiting && waiting !== this.reportedWaiting)
      this.logger.info('ElasticIPs of this node not translated yet', { waiting: desired.waiting });
    this.reportedWaiting = waiting;
    return desired;
  }

  /** BGP-4: only after a pass that wrote the maps, so what is announced is what they translate. */
  private reportServed(served: readonly ServedAddress[]): void {
    const key = JSON.stringify(served);
    if (key === this.reportedServed) return;
    this.reportedServed = key;
    this.options.onServed?.(served);
  }

  /** NAT-2: the learned and configured in-cluster prefixes, written when they changed. */
  private clusterPrefixes(): ReturnType<typeof clusterPrefixes> {
    return clusterPrefixes({
      nodes: this.nodes.list(),
      serviceCIDRs: this.serviceCIDRs?.list() ?? [],
      apiServerSlices: this.apiServerSlices.list(),
      extra: this.options.extraClusterCidrs ?? [],
    });
  }

  private writeClusterPrefixes(): void {
    const { prefixes, skipped } = this.clusterPrefixes();
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

  /** H3: the Nodes' InternalIPs (the VXLAN sources accepted), and this node's. */
  private writeNodes(): void {
    const nodes = this.nodes.list();
    const self = nodes.find((n) => n.metadata?.name === this.options.nodeName);
    this.options.datapath.setNodes?.(self && nodeInternalIPs(self)[0], nodes.flatMap(nodeInternalIPs));
  }

  /** NAT-2, NAT-4: the pod-side hook on the devices this node's Running pods are routed through;
   * what it is on, and every pod it cannot be on with why, logged when that changes (metrics). */
  private followPods(): void {
    let report: PodDeviceReport | undefined;
    try {
      report = this.options.datapath.followPods?.(podAddresses(this.pods.list()));
    } catch (err) {
      this.logger.error("attaching the pod-side NAT hook to the pods' devices failed; retrying at the next poll", {
        err,
      });
      return;
    }
    if (!report) return;
    this.options.metrics?.observePodDevices(report);
    const devices = report.devices.map((d) => `${d.name}(${d.pods})`);
    const key = JSON.stringify([report.mode, report.devices.map((d) => d.name), report.undetected, report.failed]);
    if (report.attached.length || report.detached.length || key !== this.reportedPodDevices)
      this.logger.info('pod-side NAT hook (tc_nat_pod) on the devices the pods are reached through (NAT-2, NAT-4)', {
        mode: report.mode,
        devices,
        attached: report.attached,
        detached: report.detached,
      });
    if (key !== this.reportedPodDevices && (report.undetected.length || report.failed.length))
      this.logger.warn(
        "pods whose device the pod-side NAT hook is not on: their ElasticIP traffic is translated after the node's netfilter (a CNI masquerade wins, conntrack tracks it); name the devices in natPodInterfaces (--nat-pod-ifaces)",
        { undetected: report.undetected, failed: report.failed },
      );
    this.reportedPodDevices = key;
  }

  poll(): void {
    if (!this.loop.running) return;
    this.options.ngw?.poll();
    if (this.loop.lastPassFailed) this.reconcile();
    else if (this.loop.reconciledOnce) {
      this.followPods();
      try {
        const changed = this.options.datapath.refreshDevices?.() ?? 0;
        if (changed > 0) this.logger.info("NAT bindings follow their pods' devices", { changed });
      } catch (err) {
        this.logger.error("resolving the pods' devices failed", { err });
      }
    }
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
      this.directNetworkInterfaces,
      this.pods,
      this.externalNetworks,
      this.nodes,
      this.apiServerSlices,
      ...(this.serviceCIDRs ? [this.serviceCIDRs] : []),
      ...(this.options.ngw?.informers() ?? []),
    ] as Array<Informer<KubeObject>>;
  }
}
