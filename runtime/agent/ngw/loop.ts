// The agent's NATGateway loop (NGW-4, NGW-5, NGW-7; docs/nat-gateway-datapath.md). It runs inside
// the NAT child's loop (nat/sync.ts NatSync, SEC-4), which hands it at each pass what both read:
// the Nodes, this node's Pods (H1), the in-cluster ranges (NAT-2) and this node's ElasticIP pods
// (NAT-2 wins). It watches every NATGateway (they are few), and the Pods of a namespace only while
// this node is the gateway of one of its NATGateways (the gateway translates for pods of every
// node; a pod node steers its own pods only). A failed pass is logged and retried at the next poll;
// it never fails the NAT pass it runs in.
import { referenceTo, type EventRecorder } from '../../kube/events';
import { Informer, type ListWatchClient } from '../../kube/informer';
import { silentLogger, type Logger } from '../../kube/log';
import { JuneauResources, Resources } from '../../kube/resources';
import type { KubeObject } from '../../kube/types';
import type { NodeObject } from '../nat/desired';
import { AGENT_PAGE_SIZE, agentViews } from '../resources';
import { desiredNgw, type NgwDesired } from './desired';
import { EXHAUSTION_REASON, PortExhaustion } from './exhaustion';
import { NGW_PORT_RANGE, ngwInputs, type LabelledPodObject, type NATGatewayObject } from './inputs';
import type { NgwNodeReport } from './observe';
import type { NgwSyncResult } from './sync';
import { servedGateways } from './served';
import type { ServedAddress } from '../nat/desired';

/** What the loop writes through (sync.ts NgwDataplane). */
export interface NgwDatapath {
  sync(desired: NgwDesired): NgwSyncResult;
  remove(): NgwSyncResult;
}

/** What the NAT pass hands the loop. */
export interface NgwShared {
  readonly nodes: readonly NodeObject[];
  /** This node's Pods, with their labels (agentViews.labelledPod). */
  readonly pods: readonly LabelledPodObject[];
  readonly clusterRanges: readonly string[];
  readonly elasticIPPods: readonly string[];
}

export interface NgwLoopOptions {
  readonly client: ListWatchClient;
  readonly nodeName: string;
  readonly datapath: NgwDatapath;
  /** NGW-5 (--ngw-port-range). @default inputs.ts NGW_PORT_RANGE */
  readonly portRange?: { readonly min: number; readonly max: number };
  readonly logger?: Logger;
  /** NGW-5: where the port range's exhaustion is reported (exhaustion.ts). @default not reported */
  readonly recorder?: Pick<EventRecorder, 'warning'>;
  /** The node's conntrack insert_failed counter (sync.ts conntrackStats). @default not read */
  readonly insertFailed?: () => number;
  /** NGW-8: reads what the node translates (observe.ts readNgwNode), at each poll. @default not read */
  readonly readNode?: () => NgwNodeReport;
  /** NGW-8: where that reading goes (metrics.ts NgwMetrics). */
  readonly metrics?: { observe(report: NgwNodeReport): void };
}

export class NgwLoop {
  readonly natGateways: Informer<NATGatewayObject>;
  /** The Pods of each namespace this node is a gateway for. */
  private readonly namespaces = new Map<string, Informer<LabelledPodObject>>();
  private readonly logger: Logger;
  private schedule: () => void = () => undefined;
  private last: NgwShared | undefined;
  private failed = false;
  private stopped = false;
  private reportedWaiting = '';
  /** The desired state last written (for the counters and the test). */
  desired: NgwDesired | undefined;
  private readonly exhaustion: PortExhaustion;
  /** The Ready NATGateways whose gateway is this node, as of the last pass. */
  private servedHere: NATGatewayObject[] = [];
  private reportedCounterError = false;
  private reportedReadError = false;
  private observedOnce = false;

  constructor(private readonly options: NgwLoopOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: 'ngw' });
    this.natGateways = new Informer(options.client, {
      type: JuneauResources.natGateways,
      pageSize: AGENT_PAGE_SIZE,
      logger: this.logger,
      transform: agentViews.natGateway,
    });
    this.exhaustion = new PortExhaustion({ nodeName: options.nodeName });
  }

  /** The owner's pass: called on every change of these informers and of the namespaces' Pods. */
  onChange(schedule: () => void): void {
    this.schedule = schedule;
  }

  /** The informers the owner's loop starts, waits for and stops (the namespaces' are this loop's). */
  informers(): Array<Informer<KubeObject>> {
    return [this.natGateways] as unknown as Array<Informer<KubeObject>>;
  }

  reconcile(shared: NgwShared): void {
    if (this.stopped) return;
    this.last = shared;
    const extra = [...this.namespaces.values()].flatMap((i) => (i.hasSynced ? i.list() : []));
    const r = ngwInputs({
      nodeName: this.options.nodeName,
      nodes: shared.nodes,
      gateways: this.natGateways.list(),
      pods: [...shared.pods, ...extra],
      clusterRanges: shared.clusterRanges,
      elasticIPPods: shared.elasticIPPods,
      portRange: this.options.portRange,
    });
    this.followNamespaces(r.gatewayNamespaces);
    const waiting = r.waiting.join('\n');
    if (waiting && waiting !== this.reportedWaiting) this.logger.info('NATGateways not served here', { waiting });
    this.reportedWaiting = waiting;
    try {
      const desired = r.input ? desiredNgw(r.input) : undefined;
      const result = desired ? this.options.datapath.sync(desired) : this.options.datapath.remove();
      this.desired = desired;
      const here = new Set(
        r.input?.gateways.filter((g) => g.gatewayNodeAddress === r.input?.nodeAddress).map((g) => g.name) ?? [],
      );
      this.servedHere = this.natGateways.list().filter((g) => here.has(keyOf(g)));
      this.checkExhaustion();
      // The metrics' first reading with the exhaustion check's (their baselines match); then at each poll.
      if (!this.observedOnce) this.observeNode();
      if (result.nftReplaced || Object.entries(result).some(([k, v]) => k !== 'nftReplaced' && v !== 0))
        this.logger.info('NATGateway data path reconciled', {
          ...result,
          gateways: r.input?.gateways.map((g) => `${g.name} ${g.address} via ${g.gatewayNodeAddress}`) ?? [],
        });
      this.failed = false;
    } catch (err) {
      this.logger.error('writing the NATGateway data path failed; retrying at the next poll', { err });
      this.failed = true;
    }
  }

  /** Retries a failed pass with the inputs it had. */
  poll(): void {
    if (this.failed && this.last) this.reconcile(this.last);
    else this.checkExhaustion();
    this.observeNode();
  }

  /** NGW-8: the flows, ports and refusals of the node into the metrics (a poll's work, not a scrape's). */
  private observeNode(): void {
    const { readNode, metrics } = this.options;
    if (!readNode || !metrics) return;
    try {
      metrics.observe(readNode());
      this.observedOnce = true;
      this.reportedReadError = false;
    } catch (err) {
      if (!this.reportedReadError)
        this.logger.warn('NATGateway flows not read (conntrack, nftables): their metrics are stale', { err });
      this.reportedReadError = true;
    }
  }

  /** NGW-5: one Warning Event per gateway served here when its new flows start being refused. */
  private checkExhaustion(): void {
    const { recorder, insertFailed } = this.options;
    if (!recorder || !insertFailed) return;
    let count: number;
    try {
      count = insertFailed();
    } catch (err) {
      if (!this.reportedCounterError)
        this.logger.warn('conntrack counters not read: port exhaustion is not reported', { err });
      this.reportedCounterError = true;
      return;
    }
    const portRange = this.options.portRange ?? NGW_PORT_RANGE;
    const served = this.servedHere.map((g) => ({ key: keyOf(g), portRange }));
    for (const n of this.exhaustion.observe(count, served, Date.now())) {
      const g = this.servedHere.find((s) => keyOf(s) === n.key)!;
      this.logger.warn('NATGateway port range exhausted: new flows refused', { natGateway: n.key, note: n.note });
      recorder.warning(referenceTo(g, JuneauResources.natGateways), EXHAUSTION_REASON, 'Translate', n.note);
    }
  }

  /** BGP-4: the addresses this node announces as the gateway of its NATGateways (served.ts). */
  served(): ServedAddress[] {
    return servedGateways(this.options.nodeName, this.natGateways.list());
  }

  get lastPassFailed(): boolean {
    return this.failed;
  }

  /** Stops the namespaces' informers (the owner stops natGateways). The data path stays: the
   * next agent's first pass takes it over, and an uninstall removes it (main.ts leaveDataplane). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.namespaces.values()].map((i) => i.stop()));
    this.namespaces.clear();
  }

  private followNamespaces(wanted: readonly string[]): void {
    for (const [ns, informer] of this.namespaces)
      if (!wanted.includes(ns)) {
        this.namespaces.delete(ns);
        void informer.stop();
        this.logger.info('no longer the gateway of a NATGateway of this namespace: its Pods unwatched', {
          namespace: ns,
        });
      }
    for (const ns of wanted)
      if (!this.namespaces.has(ns)) {
        const informer = new Informer<LabelledPodObject>(this.options.client, {
          type: Resources.pods,
          namespace: ns,
          pageSize: AGENT_PAGE_SIZE,
          logger: this.logger,
          transform: agentViews.labelledPod,
        });
        const schedule = () => this.schedule();
        informer.addHandlers({ onAdd: schedule, onUpdate: schedule, onDelete: schedule });
        this.namespaces.set(ns, informer);
        informer.start();
        this.logger.info('gateway of a NATGateway of this namespace: watching its Pods', { namespace: ns });
      }
  }
}

const keyOf = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
