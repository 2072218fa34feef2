// The real juneau-agent in the node namespace of the NAT rig (test/netns/nat-rig.ts), against the
// test control plane, for test/cluster/agent-nat*.test.ts: rig, Node (InternalIP on ext0), a
// namespace, the agent (API through an ApiBridge) and the pinned NAT maps opened from the test,
// made before the enclosing describe's tests and removed after them, nothing left behind.
import * as path from 'node:path';
import { API_VERSION } from '../../api';
import { NatMaps } from '../../runtime/agent/bpf/nat';
import { PIN_SUBDIR } from '../../runtime/agent/bpf/pins';
import { JuneauResources, Resources, type ResourceType } from '../../runtime/kube/resources';
import type { KubeObject, Stored } from '../../runtime/kube/types';
import { RestClient } from '../../runtime/kube/rest';
import { NODE_EXT, NatRig } from '../netns/nat-rig';
import { BridgedAgent, removePinsThen, type AgentProcess } from './agent-harness';
import {
  createNamespace,
  deleteNamespace,
  deleteNodes,
  ensureNode,
  requireCrd,
  testKubeConfig,
  testKubeconfigPath,
  waitFor,
} from './fixture';

export interface AgentNatOptions {
  /** The Node's name before the rig's id. */
  readonly nodePrefix: string;
  /** The namespace's name prefix (createNamespace). */
  readonly namespace: string;
  /** A CRD the tests need (requireCrd). */
  readonly crd: string;
  /** Arguments after the common ones (node name, kubeconfig, bpffs, generic XDP, 200 ms poll). @default [] */
  readonly agentArgs?: readonly string[];
  /** Node's own flags for the agent process, e.g. `--max-old-space-size=96`. @default none */
  readonly nodeArgs?: readonly string[];
  /** After the rig, the Node and the namespace, before the agent starts. */
  readonly setup?: (t: AgentNat) => Promise<void>;
  /** After the agent stopped and the namespace was deleted, before the Nodes go. */
  readonly cleanup?: (t: AgentNat) => Promise<void>;
}

export class AgentNat {
  readonly rig = new NatRig();
  readonly node: string;
  readonly pinDir = path.join(this.rig.pinDir, PIN_SUBDIR);
  readonly rest = new RestClient(testKubeConfig());
  readonly agentArgs: string[];
  /** Nodes deleted after the tests (the agent's own first). */
  readonly nodes: string[];
  ns = '';
  private bridged: BridgedAgent | undefined;
  private openMaps: NatMaps | undefined;

  constructor(private readonly options: AgentNatOptions) {
    this.node = `${options.nodePrefix}-${this.rig.id}`;
    this.nodes = [this.node];
    this.agentArgs = [
      '--node-name',
      this.node,
      '--kubeconfig',
      testKubeconfigPath(),
      `--bpffs=${this.rig.pinDir}`,
      '--xdp-mode=generic',
      '--poll-interval=200ms',
      ...(options.agentArgs ?? []),
    ];
  }

  /** The pinned NAT maps (after setup). */
  get maps(): NatMaps {
    if (!this.openMaps) throw new Error('the NAT maps are open only between beforeAll and afterAll');
    return this.openMaps;
  }

  /**
   * Waits until the NAT maps hold no entry at all. One pass of the agent (another process) deletes
   * a binding, then its reverse entry, then its counters: read together, or a read between two of
   * those writes would see the rest still there. A timeout names what is left.
   */
  async waitForNoEntries(what: string): Promise<void> {
    const m = this.maps;
    await waitFor(
      () => {
        const left = {
          nat: m.bindings(),
          direct: m.directBindings(),
          remote: m.remoteBindings(),
          out: m.outMap.keys().length,
          counters: m.countersMap.keys().length,
        };
        const sizes = [left.nat.length, left.direct.length, left.remote.length, left.out, left.counters];
        if (sizes.some((n) => n > 0)) throw new Error(`still there: ${JSON.stringify(left)}`);
        return true;
      },
      { what },
    );
  }

  /** The agent process (after setup); `startReady()` starts it again after a stop. */
  get agent(): AgentProcess {
    if (!this.bridged) throw new Error('the agent runs only between beforeAll and afterAll');
    return this.bridged.process;
  }

  /** Creates a Juneau object as written (its metadata names its namespace, if it has one). */
  create(type: ResourceType, object: { kind: string; metadata: { name: string; namespace?: string }; spec: object }) {
    return this.rest.create(type, { apiVersion: API_VERSION, ...object } as KubeObject);
  }

  /** Writes the status the controller would: no Juneau controller runs in the cluster project. */
  patchStatus(type: ResourceType, namespace: string | undefined, name: string, status: object) {
    return this.rest.patch(type, namespace, name, 'merge', { status }, { subresource: 'status' });
  }

  /** An ElasticIP in the test namespace as the controller leaves it once attached. */
  async createAttachedEip(
    name: string,
    externalNetwork: string,
    status: { address: string; attachment: { kind: 'ElasticIPAttachment' | 'NetworkInterface'; name: string } },
  ): Promise<void> {
    await this.create(JuneauResources.elasticIPs, {
      kind: 'ElasticIP',
      metadata: { namespace: this.ns, name },
      spec: { externalNetwork },
    });
    await this.patchStatus(JuneauResources.elasticIPs, this.ns, name, { phase: 'Attached', ...status });
  }

  /**
   * A Pod `pod` in the test namespace, on this node unless `nodeName` says, with the status a
   * kubelet writes: Running with `address` unless `status` says otherwise (no kubelet runs here).
   */
  async createPod(
    pod: string,
    address: string,
    options: { nodeName?: string; status?: object } = {},
  ): Promise<Stored<KubeObject>> {
    const created = await this.rest.create(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: this.ns, name: pod },
      spec: {
        nodeName: options.nodeName ?? this.node,
        containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
      },
    } as KubeObject);
    await this.patchPodStatus(pod, options.status ?? { phase: 'Running', podIP: address, podIPs: [{ ip: address }] });
    return created as Stored<KubeObject>;
  }

  patchPodStatus(pod: string, status: object) {
    return this.rest.patch(Resources.pods, this.ns, pod, 'merge', { status }, { subresource: 'status' });
  }

  /**
   * The NetworkInterface `<pod>.eth0` of a Pod in the test namespace, on this node unless
   * `nodeName` says, owned by that Pod as the pod controller writes it; the Pod is made Running
   * with the address first (H1: the agent binds a NIC only while its Pod runs with its address).
   */
  async createNic(pod: string, spec: { address: string; nodeName?: string; elasticIP?: string }) {
    const owner = await this.createPod(pod, spec.address, { nodeName: spec.nodeName });
    return this.rest.create(JuneauResources.networkInterfaces, {
      apiVersion: API_VERSION,
      kind: 'NetworkInterface',
      metadata: {
        namespace: this.ns,
        name: `${pod}.eth0`,
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Pod', name: pod, uid: owner.metadata.uid ?? '', controller: true },
        ],
      },
      spec: { podName: pod, interface: 'eth0', nodeName: this.node, ...spec },
    } as KubeObject);
  }

  /**
   * ElasticIP `name` at `address` with its attachment `name` to `<pod>.eth0`, named by the
   * ElasticIP's status; the attachment Attached on this node unless `attached` is false (Pending,
   * as before the controller's pass).
   */
  async createAttachment(name: string, address: string, pod: string, attached = true): Promise<void> {
    await this.createAttachedEip(name, 'ext', { address, attachment: { kind: 'ElasticIPAttachment', name } });
    await this.create(JuneauResources.elasticIPAttachments, {
      kind: 'ElasticIPAttachment',
      metadata: { namespace: this.ns, name },
      spec: { elasticIP: name, networkInterface: `${pod}.eth0` },
    });
    if (attached)
      await this.patchStatus(JuneauResources.elasticIPAttachments, this.ns, name, {
        phase: 'Attached',
        nodeName: this.node,
      });
  }

  async setup(): Promise<void> {
    await requireCrd(this.options.crd);
    await this.rig.setup();
    await ensureNode(this.node, { internalIP: NODE_EXT });
    this.ns = await createNamespace(this.options.namespace);
    await this.options.setup?.(this);
    this.bridged = new BridgedAgent(this.rig.node, this.agentArgs, testKubeconfigPath(), this.options.nodeArgs);
    await this.bridged.start();
    this.openMaps = NatMaps.openPinned(this.pinDir);
  }

  async teardown(): Promise<void> {
    await this.bridged?.stop();
    this.openMaps?.close();
    if (this.ns) await deleteNamespace(this.ns);
    await this.options.cleanup?.(this);
    await deleteNodes(this.nodes);
    await removePinsThen(this.pinDir, () => this.rig.destroy());
  }
}

/** An AgentNat set up before the enclosing describe's tests and torn down after them. */
export function useAgentNat(options: AgentNatOptions): AgentNat {
  const t = new AgentNat(options);
  beforeAll(() => t.setup(), 120_000);
  afterAll(() => t.teardown(), 60_000);
  return t;
}
