/**
 * The agent's ElasticIP data plane (EIP-4, NAT-1..NAT-5, DIR-1): informers of ElasticIPs,
 * ElasticIPAttachments and NetworkInterfaces feed one level-triggered pass that computes this node's
 * bindings (desiredNat) and makes the pinned NAT maps equal to them (NatMaps.sync); informers of
 * Nodes, ServiceCIDRs and the `default/kubernetes` EndpointSlices (the API servers) feed the same
 * pass the in-cluster prefixes (NAT-2, cluster-prefixes.ts),
 * written to juneau_nat_skip when they change. Same shape as
 * NodeAgent: passes coalesced, nothing written before every informer has synced (an agent that
 * restarts with an empty cache must not empty the maps the running programs translate with:
 * NAT-4), and a failed pass retried at the next poll, which also feeds the per-ElasticIP metrics.
 *
 * A binding is on this node when the cluster says so, each side from its owner:
 *  - NAT: an ElasticIPAttachment in phase Attached whose status.nodeName is this node; the
 *    ElasticIP's status names that attachment (EIP-7) and has an address; the NetworkInterface
 *    has an address. An attachment moved to another node leaves this node's maps at the next pass.
 *  - direct: a Ready NetworkInterface of this node with spec.elasticIP, the ElasticIP's status
 *    naming that NetworkInterface, and the NIC's address as the next hop; its VXLAN device accepts
 *    the ExternalNetwork's status.networkID (EN-9).
 *  - remote (EN-9): the same, for a NetworkInterface of ANOTHER node: what reaches this node for the
 *    ElasticIP (an upstream router that still has this node's MAC for it, ARP-8) is carried by VXLAN
 *    with the ExternalNetwork's status.networkID to that node's InternalIP. Not while the networkID
 *    is 0 (EN-8: such a NIC should not exist) or the Node has no InternalIP; the reason is logged.
 * Two more informers (Nodes, ExternalNetworks) feed the remote side.
 */
import { elasticIPAttachmentKind, elasticIPKind, externalNetworkKind, networkInterfaceKind } from '../../api';
import type { ElasticIP, ElasticIPAttachment, ExternalNetwork, NetworkInterface } from '../../api';
import { Informer, type ListWatchClient } from '../kube/informer';
import { InformerLoop } from './informer-loop';
import { silentLogger, type Logger } from '../kube/log';
import { juneauResource, Resources, type ResourceType } from '../kube/resources';
import type { KubeObject } from '../kube/types';
import type { DirectBinding, NatBinding, NatEntry, NatSyncResult, RemoteBinding } from './bpf/nat';
import type { NatReasonName, Prefix } from './bpf/layout';
import {
  clusterPrefixes,
  prefixesKey,
  type EndpointSliceSource,
  type NodePrefixSource,
  type ServiceCIDRSource,
} from './cluster-prefixes';
import { nodeInternalIPs } from './interface';
import type { NatMetrics } from './nat-metrics';

export const NatResources = {
  elasticIPs: juneauResource(elasticIPKind),
  attachments: juneauResource(elasticIPAttachmentKind),
  networkInterfaces: juneauResource(networkInterfaceKind),
  externalNetworks: juneauResource(externalNetworkKind),
  nodes: Resources.nodes,
  endpointSlices: Resources.endpointSlices,
  /** GA in Kubernetes 1.33; an older API server does not serve it (serviceCIDRsServed). */
  serviceCIDRs: {
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'servicecidrs',
    kind: 'ServiceCIDR',
    namespaced: false,
  } satisfies ResourceType,
} as const;

type ServiceCIDRObject = ServiceCIDRSource & KubeObject;
type EndpointSliceObject = EndpointSliceSource & KubeObject;

/** The `kubernetes` Service's EndpointSlices: its endpoints are the API servers (NAT-2), which a
 * managed or external control plane does not run on Nodes. Only these are listed and cached. */
export const API_SERVER_SLICES = { namespace: 'default', labelSelector: 'kubernetes.io/service-name=kubernetes' };

export type ElasticIPObject = ElasticIP & KubeObject;
export type AttachmentObject = ElasticIPAttachment & KubeObject;
export type NetworkInterfaceObject = NetworkInterface & KubeObject;
export type ExternalNetworkObject = ExternalNetwork & KubeObject;
/** What the agent reads of a Node: its name, pod ranges (NAT-2) and addresses (NAT-2, EN-9). */
export type NodeObject = NodePrefixSource & KubeObject;

/** What the agent writes through: the pinned NAT maps (bpf/nat.ts NatMaps). */
export interface NatDatapath {
  sync(nat: readonly NatBinding[], direct: readonly DirectBinding[], remote: readonly RemoteBinding[]): NatSyncResult;
  /** Replaces the in-cluster destinations (NAT-2). */
  setInClusterPrefixes(prefixes: readonly Prefix[]): void;
  entries(): NatEntry[];
  stats(): Record<NatReasonName, bigint>;
}

export interface DesiredNat {
  readonly nat: NatBinding[];
  readonly direct: DirectBinding[];
  /** EN-9: direct ElasticIPs held on other nodes, carried there by VXLAN. */
  readonly remote: RemoteBinding[];
  /** Objects of this node left out, with why (logged once per change). */
  readonly waiting: string[];
}

export interface NatInputs {
  readonly nodeName: string;
  readonly elasticIPs: readonly ElasticIP[];
  readonly attachments: readonly ElasticIPAttachment[];
  readonly networkInterfaces: readonly NetworkInterface[];
  /** For the VNIs (status.networkID) of direct ElasticIPs (EN-9). @default [] */
  readonly externalNetworks?: readonly ExternalNetwork[];
  /** For the InternalIP of the node holding a remote direct ElasticIP (EN-9). @default [] */
  readonly nodes?: readonly NodeObject[];
}

const keyOf = (o: { metadata?: { namespace?: string; name?: string } }, name = o.metadata?.name ?? '') =>
  `${o.metadata?.namespace ?? ''}/${name}`;

/** This node's bindings, from the cluster's objects. Pure. */
export function desiredNat(input: NatInputs): DesiredNat {
  const eips = new Map(input.elasticIPs.map((e) => [keyOf(e), e]));
  const nics = new Map(input.networkInterfaces.map((n) => [keyOf(n), n]));
  const nat: NatBinding[] = [];
  const direct: NatBinding[] = [];
  const waiting: string[] = [];
  const usedAddresses = new Map<string, string>();
  const take = (list: NatBinding[], what: string, binding: NatBinding) => {
    // One NIC address, one ElasticIP: a second claim waits (the controller's EIP-5/EIP-10 keep
    // this from happening; the maps must never hold it).
    const holder = usedAddresses.get(binding.address) ?? usedAddresses.get(binding.elasticIP);
    if (holder)
      return waiting.push(
        `${what}: address ${binding.address} or ElasticIP ${binding.elasticIP} already used by ${holder}`,
      );
    usedAddresses.set(binding.address, what);
    usedAddresses.set(binding.elasticIP, what);
    list.push(binding);
  };
  const sorted = <T extends { metadata?: { namespace?: string; name?: string } }>(items: readonly T[]) =>
    [...items].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  for (const a of sorted(input.attachments)) {
    if (a.status?.phase !== 'Attached' || a.status.nodeName !== input.nodeName) continue;
    const what = `ElasticIPAttachment ${keyOf(a)}`;
    const eip = eips.get(keyOf(a, a.spec?.elasticIP));
    const nic = nics.get(keyOf(a, a.spec?.networkInterface));
    const holder = eip?.status?.attachment;
    if (!eip?.status?.address || holder?.kind !== 'ElasticIPAttachment' || holder.name !== a.metadata?.name) {
      waiting.push(
        `${what}: ElasticIP ${a.spec?.elasticIP} has no address or does not name this attachment in status.attachment`,
      );
    } else if (!nic?.spec?.address) {
      waiting.push(`${what}: NetworkInterface ${a.spec?.networkInterface} has no address`);
    } else {
      take(nat, what, { elasticIP: eip.status.address, address: nic.spec.address });
    }
  }
  const networkIDs = new Map((input.externalNetworks ?? []).map((e) => [e.metadata?.name, e.status?.networkID ?? 0]));
  const remoteNics: Array<{ nic: NetworkInterface; elasticIP: string; vni: number }> = [];
  for (const n of sorted(input.networkInterfaces)) {
    if (!n.spec?.elasticIP || !n.spec.nodeName || n.status?.phase !== 'Ready') continue;
    const what = `NetworkInterface ${keyOf(n)}`;
    const eip = eips.get(keyOf(n, n.spec.elasticIP));
    const holder = eip?.status?.attachment;
    const vni = networkIDs.get(eip?.spec?.externalNetwork) ?? 0;
    if (!eip?.status?.address || holder?.kind !== 'NetworkInterface' || holder.name !== n.metadata?.name) {
      if (n.spec.nodeName === input.nodeName)
        waiting.push(
          `${what}: ElasticIP ${n.spec.elasticIP} has no address or does not name this NetworkInterface in status.attachment`,
        );
    } else if (n.spec.nodeName !== input.nodeName) {
      remoteNics.push({ nic: n, elasticIP: eip.status.address, vni });
    } else if (!n.spec.address) {
      waiting.push(`${what}: no address to reach the pod by`);
    } else {
      take(direct, what, { elasticIP: eip.status.address, address: n.spec.address, ...(vni ? { vni } : {}) });
    }
  }
  const remote = remoteDirect(remoteNics, input.nodes ?? [], usedAddresses, waiting);
  return { nat, direct, remote, waiting };
}

/** EN-9: where each direct ElasticIP of another node is carried; a reason for each one that is not. */
function remoteDirect(
  nics: ReadonlyArray<{ nic: NetworkInterface; elasticIP: string; vni: number }>,
  nodes: readonly NodeObject[],
  used: ReadonlyMap<string, string>,
  waiting: string[],
): RemoteBinding[] {
  const nodeIPs = new Map(nodes.map((n) => [n.metadata?.name, nodeInternalIPs(n)[0]]));
  const remote: RemoteBinding[] = [];
  const seen = new Map<string, string>();
  for (const { nic, elasticIP, vni } of nics) {
    const what = `NetworkInterface ${keyOf(nic)} (ElasticIP ${elasticIP}, node ${nic.spec?.nodeName})`;
    const node = nodeIPs.get(nic.spec?.nodeName);
    const holder = used.get(elasticIP) ?? seen.get(elasticIP);
    if (holder) waiting.push(`${what}: not carried to its node (EN-9): the ElasticIP is also held by ${holder}`);
    else if (vni === 0)
      waiting.push(`${what}: not carried to its node (EN-9): its ExternalNetwork's status.networkID is 0 (EN-8)`);
    else if (!node) waiting.push(`${what}: not carried to its node (EN-9): the Node has no IPv4 InternalIP`);
    else {
      seen.set(elasticIP, what);
      remote.push({ elasticIP, node, vni });
    }
  }
  return remote;
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
    this.elasticIPs = new Informer(options.client, { ...common, type: NatResources.elasticIPs });
    this.attachments = new Informer(options.client, { ...common, type: NatResources.attachments });
    this.networkInterfaces = new Informer(options.client, { ...common, type: NatResources.networkInterfaces });
    this.externalNetworks = new Informer(options.client, { ...common, type: NatResources.externalNetworks });
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
