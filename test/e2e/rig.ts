// The e2e rig: "a cluster in a box". Its own real control plane (kube-apiserver, etcd,
// kube-controller-manager from test/cluster), two juneau-controller replicas, and three "node"
// network namespaces, each with its juneau-agent, a Node object whose InternalIP is its eth0
// address, and pods as objects whose status the rig sets (there is no kubelet: the one mock, and
// it says so). An "upstream router" namespace resolves addresses with ARP on the shared bridge.
// The controllers and agents run as the install manifest makes them (./install-identity.ts): with
// its ServiceAccounts' tokens and RBAC, and the agents with only the DaemonSet's capabilities.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { ANNOTATIONS, API_VERSION, GROUP, LOAD_BALANCER_CLASS, VERSION } from '../../api';
import { OWNER_LABELS } from '../../runtime/controller/resources';
import { ensureBpffs, removePins } from '../../runtime/agent/bpf/responder';
import { INSTALL } from '../../api/constants';
import { agentCapabilities, installManifest, rbacObjects, serviceAccountKubeconfig } from '../shared/install-identity';
import { startCluster, type Cluster } from '../cluster/harness';
import { CRD_MANIFEST } from '../cluster/paths';
import { sleep } from '../sleep';
import { E2ENetwork, POOL_RANGE } from './network';
import {
  AGENT_BIN,
  ApiForwarder,
  CLI_BIN,
  CONTROLLER_BIN,
  startLogged,
  stopProcess,
  tailOf,
  type Managed,
} from './processes';

const exec = promisify(execFile);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const NETWORK = 'e2e-net';
export const POOL = 'e2e-pool';
export const APP_NAMESPACE = 'shop';

/** The ServiceLoadBalancer of the app namespace's Service `name`, as an ARPAdvertisement owner. */
export const serviceLoadBalancerRef = (name: string) =>
  ({ kind: 'ServiceLoadBalancer', namespace: APP_NAMESPACE, name }) as const;
export const CONTROLLER_NAMESPACE = INSTALL.namespace;
const RBAC_NAMESPACED = new Set(['ServiceAccount', 'Role', 'RoleBinding']);

/** Whose address an ARPAdvertisement advertises. */
export interface AdvertisementOwner {
  readonly kind: 'ElasticIP' | 'ServiceLoadBalancer';
  readonly namespace: string;
  readonly name: string;
}

export interface RigOptions {
  readonly nodes?: number;
  readonly controllers?: number;
  /** Agents drop ARP for guarded addresses they do not own (default true). */
  readonly guard?: boolean;
  /** Create the rig's own AddressPool e2e-pool and ExternalNetwork e2e-net (default true; the demo brings its own). */
  readonly network?: boolean;
  readonly log?: (line: string) => void;
}

export class E2ERig {
  readonly net: E2ENetwork;
  cluster!: Cluster;
  kc!: KubeConfig;
  core!: CoreV1Api;
  custom!: CustomObjectsApi;
  private forwarder!: ApiForwarder;
  readonly agents: Array<Managed | undefined> = [];
  readonly controllers: Array<Managed | undefined> = [];
  private readonly logDir: string;
  /** Kubeconfigs holding the install ServiceAccounts' tokens, and the agent's capabilities. */
  private identity!: { controllerKubeconfig: string; agentKubeconfigs: string[]; agentCaps: string[] };

  constructor(readonly options: RigOptions = {}) {
    this.net = new E2ENetwork(options.nodes ?? 3);
    this.logDir = path.join(this.net.tmp, 'logs');
  }

  /** worker-1, worker-2, ... as in the seeds' examples. */
  nodeName(i: number): string {
    return `worker-${i + 1}`;
  }
  nodeIndex(name: string | undefined): number {
    const n = name ? /^worker-(\d+)$/.exec(name)?.[1] : undefined;
    return n === undefined ? -1 : Number(n) - 1;
  }
  pinRoot(i: number): string {
    return `/sys/fs/bpf/juneau-e2e-${this.net.id}-n${i}`;
  }
  private log(line: string): void {
    this.options.log?.(line);
  }

  async start(): Promise<this> {
    for (const bin of [CONTROLLER_BIN, AGENT_BIN, CLI_BIN]) {
      if (!fs.existsSync(bin))
        throw new Error(`${bin} is missing: run \`npm run build\` (the e2e rig runs the bundled binaries)`);
    }
    fs.mkdirSync(this.logDir, { recursive: true });
    const manifest = installManifest();
    this.cluster = await startCluster({
      crdFiles: [CRD_MANIFEST],
      log: (l) => this.log(`cluster: ${l}`),
    });
    this.kc = this.cluster.kubeConfig;
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.custom = this.kc.makeApiClient(CustomObjectsApi);
    await this.net.setup();
    this.forwarder = new ApiForwarder(this.cluster.ports.apiserver, path.join(this.net.tmp, 'api.sock'));
    await this.forwarder.start();
    for (let i = 0; i < this.net.nodeCount; i++) {
      await this.forwarder.into(this.net.node(i), path.join(this.logDir, `forward-${i}.log`));
      await this.core.createNode({
        body: { metadata: { name: this.nodeName(i), labels: { 'kubernetes.io/hostname': this.nodeName(i) } } },
      });
      await this.core.patchNodeStatus(
        {
          name: this.nodeName(i),
          body: { status: { addresses: [{ type: 'InternalIP', address: this.net.nodeIp(i) }] } },
        },
        mergePatch,
      );
    }
    for (const ns of [APP_NAMESPACE, CONTROLLER_NAMESPACE])
      await this.core.createNamespace({ body: { metadata: { name: ns } } });
    await this.installIdentities(manifest);
    if (this.options.network !== false) await this.createNetwork();
    for (let k = 0; k < (this.options.controllers ?? 2); k++) this.startController(k);
    for (let i = 0; i < this.net.nodeCount; i++) this.startAgent(i);
    // Every guard in place before a scenario puts its VIP on the nodes' kube-ipvs0: a scenario that
    // started first once saw a bystander's kernel answer the router (seed 004) until its agent was up.
    await this.waitFor('every agent ready (maps reconciled, guards written)', async () =>
      this.agents.every((p) => p && fs.readFileSync(p.logFile, 'utf8').includes('"msg":"ready: ')),
    );
    this.log(
      `rig ${this.net.id}: ${this.net.nodeCount} nodes, ${this.controllers.length} controllers; logs in ${this.logDir}`,
    );
    return this;
  }

  /**
   * The manifest's ServiceAccounts, roles and bindings, applied as they are; a token for each
   * ServiceAccount from the TokenRequest API (the control plane signs with its service-account
   * key); and the host's bpffs with each agent's directory, as the kubelet's DirectoryOrCreate
   * hostPath finds it on a node (the agent cannot mount bpffs without CAP_SYS_ADMIN).
   */
  private async installIdentities(manifest: ReturnType<typeof installManifest>): Promise<void> {
    if (
      manifest.some(
        (o) => o.metadata.namespace && o.metadata.namespace !== CONTROLLER_NAMESPACE && RBAC_NAMESPACED.has(o.kind),
      )
    ) {
      throw new Error(
        `the install manifest's RBAC is not in namespace ${CONTROLLER_NAMESPACE}, the rig's controller namespace`,
      );
    }
    const rbacFile = path.join(this.net.tmp, 'install-rbac.json');
    fs.writeFileSync(rbacFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rbacObjects(manifest) }));
    await this.kubectl('apply', '--server-side', '-f', rbacFile);
    const controllerKubeconfig = path.join(this.net.tmp, 'controller.kubeconfig');
    await serviceAccountKubeconfig(
      this.core,
      this.kc,
      CONTROLLER_NAMESPACE,
      INSTALL.controllerName,
      controllerKubeconfig,
    );
    // One token per node, bound to a stand-in for the DaemonSet's pod on that node (never run: the
    // rig has no kubelet), so the agent's token names its node as in a cluster (FO-3 Lease policy).
    const agentKubeconfigs: string[] = [];
    for (let i = 0; i < this.net.nodeCount; i++) {
      const pod = await this.core.createNamespacedPod({
        namespace: CONTROLLER_NAMESPACE,
        body: {
          metadata: { name: `${INSTALL.agentName}-${this.nodeName(i)}` },
          spec: {
            nodeName: this.nodeName(i),
            serviceAccountName: INSTALL.agentName,
            containers: [{ name: 'agent', image: 'registry.invalid/juneau-agent' }],
          },
        },
      });
      agentKubeconfigs[i] = path.join(this.net.tmp, `agent-${i}.kubeconfig`);
      await serviceAccountKubeconfig(this.core, this.kc, CONTROLLER_NAMESPACE, INSTALL.agentName, agentKubeconfigs[i], {
        name: pod.metadata!.name!,
        uid: pod.metadata!.uid!,
      });
    }
    this.identity = {
      controllerKubeconfig,
      agentKubeconfigs,
      agentCaps: agentCapabilities(manifest),
    };
    for (let i = 0; i < this.net.nodeCount; i++) ensureBpffs(this.pinRoot(i));
  }

  private async createNetwork(): Promise<void> {
    const cluster = (plural: string, body: object) =>
      this.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body });
    await cluster('addresspools', {
      apiVersion: API_VERSION,
      kind: 'AddressPool',
      metadata: { name: POOL },
      spec: { advertiseMode: 'arp', addresses: [POOL_RANGE] },
    });
    await cluster('externalnetworks', {
      apiVersion: API_VERSION,
      kind: 'ExternalNetwork',
      metadata: { name: NETWORK },
      spec: { type: 'arp', addressPools: [POOL] },
    });
  }

  startController(k: number): Managed {
    const args = [
      CONTROLLER_BIN,
      `--kubeconfig=${this.identity.controllerKubeconfig}`,
      '--leader-elect=true',
      `--leader-election-namespace=${CONTROLLER_NAMESPACE}`,
      '--metrics-addr=0',
      '--health-addr=0',
      '--log-level=debug',
    ];
    // POD_NAME makes the Lease holder identity (`controller-<k>_<random>`) say which replica leads.
    const p = startLogged(`controller-${k}`, process.execPath, args, path.join(this.logDir, `controller-${k}.log`), {
      POD_NAME: `controller-${k}`,
    });
    this.controllers[k] = p;
    return p;
  }

  startAgent(i: number, extra: string[] = []): Managed {
    // Only the DaemonSet's capabilities: setpriv empties the bounding set but for them, so root
    // keeps exactly those across exec (no CAP_SYS_ADMIN, no CAP_DAC_OVERRIDE, ...).
    const caps = `-all,${this.identity.agentCaps.map((c) => `+${c}`).join(',')}`;
    const args = [
      `--net=/var/run/netns/${this.net.node(i)}`,
      'setpriv',
      `--bounding-set=${caps}`,
      '--inh-caps=-all',
      '--',
      process.execPath,
      AGENT_BIN,
      `--node-name=${this.nodeName(i)}`,
      `--kubeconfig=${this.identity.agentKubeconfigs[i]}`,
      // No --node-ingress-iface, as the DaemonSet: the agent finds eth0 from its Node's InternalIP (EN-12).
      `--bpffs=${this.pinRoot(i)}`,
      '--xdp-mode=generic',
      '--metrics-addr=0',
      '--health-addr=0',
      '--log-level=debug',
      ...(this.options.guard === false ? ['--no-guard'] : []),
      ...extra,
    ];
    const p = startLogged(`agent-${i}`, 'nsenter', args, path.join(this.logDir, `agent-${i}.log`));
    this.agents[i] = p;
    return p;
  }

  /** FO-4: node i loses its path to the API server (its link to the router stays up). */
  async cutFromApiServer(i: number): Promise<void> {
    await this.forwarder.cut(this.net.node(i));
  }

  async reconnectToApiServer(i: number): Promise<void> {
    await this.forwarder.into(this.net.node(i), path.join(this.logDir, `forward-${i}-again-${Date.now()}.log`));
  }

  /** FO-1: switches `spec.arp.announceOnMove` of the rig's network. */
  async setAnnounceOnMove(on: boolean): Promise<void> {
    await this.custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: 'externalnetworks',
        name: NETWORK,
        body: { spec: { arp: { announceOnMove: on } } },
      },
      mergePatch,
    );
  }

  async killAgent(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.agents[i];
    if (p) await stopProcess(p, signal);
    this.agents[i] = undefined;
  }

  /** The replica holding the controller Lease, from the Lease's holderIdentity. */
  async leader(): Promise<number | undefined> {
    const lease = await this.kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: CONTROLLER_NAMESPACE, name: 'juneau-controller' })
      .catch(() => undefined);
    const holder = lease?.spec?.holderIdentity;
    if (!holder) return undefined;
    const k = /^controller-(\d+)_/.exec(holder)?.[1];
    return k === undefined ? undefined : Number(k);
  }

  async killController(k: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.controllers[k];
    if (p) await stopProcess(p, signal);
    this.controllers[k] = undefined;
  }

  // ---- objects -------------------------------------------------------------------------------

  /** A Juneau LoadBalancer Service (ETP Local) on port 80 for pods labelled app=<name>. */
  /**
   * A Service `name` in the app namespace with ready backends on `nodes`, its VIP on every node's
   * kube-ipvs0 (the seed-004 setup); resolves to the answering node once `until` reaches it: a
   * fresh resolver (the router's cache flushed) or the router's own path (its cache kept).
   */
  async serviceWithBackends(
    name: string,
    vip: string,
    nodes: readonly number[],
    until: 'fresh-resolver' | 'router' = 'fresh-resolver',
  ): Promise<number> {
    await this.net.addVipToAllNodes(vip);
    await this.createService(name, vip);
    for (const i of nodes) {
      await this.createPod(`${name}-${i}`, i, { labels: { app: name } });
      await this.net.serveOnNode(i);
    }
    const node = this.nodeIndex(
      await this.waitFor(`the ARPAdvertisement of Service ${name}`, () =>
        this.advertisedNode(serviceLoadBalancerRef(name)),
      ),
    );
    if (until === 'router')
      await this.waitFor(
        `the router reaching node-${node} for ${vip}`,
        async () => (await this.net.routerReaches(vip)) === node,
        30_000,
        250,
      );
    else
      await this.waitFor(
        `node-${node} answering ARP for ${vip}`,
        async () => (await this.net.freshResolve(vip)).join() === this.net.macs[node],
      );
    return node;
  }

  async createService(name: string, requestedIP?: string): Promise<void> {
    const annotations: Record<string, string> = { [ANNOTATIONS.loadBalancerExternalNetwork]: NETWORK };
    if (requestedIP) annotations[ANNOTATIONS.loadBalancerRequestedIP] = requestedIP;
    await this.core.createNamespacedService({
      namespace: APP_NAMESPACE,
      body: {
        metadata: { name, annotations },
        spec: {
          type: 'LoadBalancer',
          loadBalancerClass: LOAD_BALANCER_CLASS,
          externalTrafficPolicy: 'Local',
          selector: { app: name },
          ports: [{ name: 'http', port: 80, targetPort: 80, protocol: 'TCP' }],
        },
      },
    });
  }

  /** A pod "running" on node i: bound, then given the status a kubelet would write. */
  async createPod(
    name: string,
    i: number,
    opts: { labels?: Record<string, string>; annotations?: Record<string, string>; ready?: boolean } = {},
  ): Promise<void> {
    await this.core.createNamespacedPod({
      namespace: APP_NAMESPACE,
      body: {
        metadata: { name, labels: opts.labels, annotations: opts.annotations },
        spec: {
          nodeName: this.nodeName(i),
          containers: [{ name: 'main', image: 'registry.invalid/none', ports: [{ containerPort: 80 }] }],
        },
      },
    });
    await this.setPodReady(name, opts.ready ?? true, `10.244.${i}.${10 + Math.floor(Math.random() * 200)}`);
  }

  async setPodReady(name: string, ready: boolean, podIP?: string): Promise<void> {
    const now = new Date().toISOString();
    const status = ready ? 'True' : 'False';
    const body: Record<string, unknown> = {
      phase: 'Running',
      conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
        type,
        status: type === 'Ready' || type === 'ContainersReady' ? status : 'True',
        lastTransitionTime: now,
      })),
    };
    if (podIP) Object.assign(body, { podIP, podIPs: [{ ip: podIP }] });
    await this.core.patchNamespacedPodStatus({ namespace: APP_NAMESPACE, name, body: { status: body } }, mergePatch);
  }

  /** The node advertising `owner`'s address, or undefined when nothing advertises it. */
  async advertisedNode(owner: AdvertisementOwner): Promise<string | undefined> {
    return (await this.advertisementOf(owner))?.nodeName;
  }

  /**
   * The ARPAdvertisement that advertises `owner`'s address: found by its owner labels, or by the
   * owner's current address — never by a name the controller derives (names may carry a hash).
   */
  async advertisementOf(
    owner: AdvertisementOwner,
  ): Promise<{ name: string; address: string; nodeName: string } | undefined> {
    const ads = await this.arpAdvertisements();
    const byLabels = ads.find(
      (a) =>
        a.labels[OWNER_LABELS.kind] === owner.kind &&
        a.labels[OWNER_LABELS.namespace] === owner.namespace &&
        a.labels[OWNER_LABELS.name] === owner.name,
    );
    if (byLabels) return byLabels;
    const address = (await this.ownerStatus(owner))?.address;
    return address ? ads.find((a) => a.address === address) : undefined;
  }

  private async arpAdvertisements(): Promise<
    Array<{ name: string; address: string; nodeName: string; labels: Record<string, string> }>
  > {
    const list = (await this.custom.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'arpadvertisements',
    })) as {
      items: Array<{
        metadata: { name: string; labels?: Record<string, string> };
        spec: { address: string; nodeName: string };
      }>;
    };
    return list.items.map((a) => ({
      name: a.metadata.name,
      address: a.spec.address,
      nodeName: a.spec.nodeName,
      labels: a.metadata.labels ?? {},
    }));
  }

  /** The owner's status as the controller wrote it: address (ElasticIP) or vip (ServiceLoadBalancer), phase, conditions. */
  private async ownerStatus(
    owner: AdvertisementOwner,
  ): Promise<{ address?: string; phase?: string; conditions?: unknown[] } | undefined> {
    const plural = owner.kind === 'ElasticIP' ? 'elasticips' : 'serviceloadbalancers';
    const obj = (await this.custom
      .getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural,
        namespace: owner.namespace,
        name: owner.name,
      })
      .catch((err: unknown) => {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      })) as
      | {
          status?: {
            address?: string;
            vip?: string;
            phase?: string;
            conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
          };
        }
      | undefined;
    const st = obj?.status;
    if (!st) return undefined;
    return {
      address: st.address ?? st.vip,
      phase: st.phase,
      conditions: st.conditions?.map((c) => `${c.type}=${c.status} ${c.reason ?? ''}: ${c.message ?? ''}`),
    };
  }

  async serviceLoadBalancer(
    name: string,
    namespace = APP_NAMESPACE,
  ): Promise<{ phase?: string; vip?: string; arpAnnouncingNode?: string; advertisingNodes?: string[] } | undefined> {
    const obj = (await this.custom
      .getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: 'serviceloadbalancers', namespace, name })
      .catch(() => undefined)) as { status?: object } | undefined;
    return obj?.status;
  }

  /**
   * Polls `fn` until it returns a value. On timeout the error says what the last poll saw (its
   * value or error) and, given `seen`, what the cluster held instead — a wait that cannot say why
   * it failed hid the demo's RequestedIPInUse for a while.
   */
  async waitFor<T>(
    what: string,
    fn: () => Promise<T | undefined | false>,
    timeoutMs = 30_000,
    intervalMs = 200,
    seen?: () => Promise<string>,
  ): Promise<T> {
    const until = Date.now() + timeoutMs;
    let last: string = 'no poll finished';
    for (;;) {
      try {
        const v = await fn();
        if (v !== undefined && v !== false) return v as T;
        last = `last poll: ${String(v)}`;
      } catch (err) {
        last = `last poll failed: ${err instanceof Error ? err.message : String(err)}`;
      }
      if (Date.now() > until) {
        const state = seen ? await seen().catch((err: unknown) => `(could not read the state: ${String(err)})`) : '';
        throw new Error(
          `e2e: timed out after ${timeoutMs} ms waiting for ${what}; ${last}\n${state}\n${this.logTails()}`,
        );
      }
      await sleep(intervalMs);
    }
  }

  /** Runs the bundled kubectl of the control plane against it. */
  async kubectl(...args: string[]): Promise<string> {
    const { stdout } = await exec(path.join(this.cluster.binDir, 'kubectl'), [
      `--kubeconfig=${this.cluster.kubeconfigPath}`,
      ...args,
    ]);
    return stdout;
  }

  logTails(): string {
    return [...this.controllers, ...this.agents]
      .filter((p): p is Managed => !!p)
      .map((p) => `--- ${p.name} (${p.logFile})\n${tailOf(p.logFile, 15)}`)
      .join('\n');
  }

  async stop(): Promise<void> {
    for (let i = 0; i < this.agents.length; i++) await this.killAgent(i, 'SIGTERM');
    for (let k = 0; k < this.controllers.length; k++) await this.killController(k, 'SIGTERM');
    this.log(`rig ${this.net.id}: agents and controllers stopped`);
    await this.forwarder?.stop();
    this.log(`rig ${this.net.id}: API forwarders stopped`);
    await this.cluster?.stop();
    this.log(`rig ${this.net.id}: control plane stopped`);
    await this.net.destroy();
    // Either may be gone already: the agent never pinned anything, or the setup never got there.
    for (let i = 0; i < this.net.nodeCount; i++) {
      removePins(path.join(this.pinRoot(i), 'juneau'));
      if (fs.existsSync(this.pinRoot(i))) fs.rmdirSync(this.pinRoot(i));
    }
  }
}
