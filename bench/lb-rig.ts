/**
 * The LoadBalancer rig bench/controller and bench/scale share: Nodes and ready backend Pods
 * without a kubelet, the Services over them, and the floor's writes: per Service what the controller
 * writes on its first pass, with nothing read and nothing decided — the ServiceLoadBalancer
 * (server-side apply, owner reference and finalizer), the AllocationClaim, the ARPAdvertisement,
 * the status (server-side apply), the Service's status.loadBalancer, and one Event.
 */
import { ANNOTATIONS, API_VERSION, FINALIZERS } from '../api';
import { advertisementName, ownerMetadata } from '../runtime/controller/arp/names';
import { applyStatus, FieldManagers } from '../runtime/kube/apply';
import { toMicroTime } from '../runtime/kube/conditions';
import { JuneauResources, Resources } from '../runtime/kube/resources';
import type { RestClient } from '../runtime/kube/rest';
import type { KubeObject } from '../runtime/kube/types';
import { sleep } from '../test/sleep';

/** Nodes named `names`, the i-th with InternalIP 192.0.2.(10+i) (no kubelet: their status is written here). */
export async function createNodes(rest: RestClient, names: readonly string[]): Promise<void> {
  for (const [i, name] of names.entries()) {
    await rest.create(Resources.nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    });
    await rest.patch(
      Resources.nodes,
      undefined,
      name,
      'merge',
      { status: { addresses: [{ type: 'InternalIP', address: `192.0.2.${10 + i}` }] } },
      { subresource: 'status' },
    );
  }
}

/**
 * Per group g one ready Pod `g<g>-<j>` (label group=g<g>, port `http` 8080) on each of its nodes,
 * made Running and Ready as a kubelet would, with podIP 10.<podNet>.<g>.(10+j).
 */
export async function createBackends(
  rest: RestClient,
  namespace: string,
  groups: ReadonlyArray<readonly string[]>,
  podNet: number,
): Promise<void> {
  const now = new Date().toISOString();
  for (const [g, members] of groups.entries()) {
    for (const [j, node] of members.entries()) {
      const name = `g${g}-${j}`;
      await rest.create(Resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { namespace, name, labels: { group: `g${g}` } },
        spec: {
          nodeName: node,
          containers: [
            { name: 'main', image: 'registry.invalid/none', ports: [{ name: 'http', containerPort: 8080 }] },
          ],
        },
      } as KubeObject);
      const podIP = `10.${podNet}.${g}.${10 + j}`;
      const conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: now,
      }));
      await rest.patch(
        Resources.pods,
        namespace,
        name,
        'merge',
        { status: { phase: 'Running', podIP, podIPs: [{ ip: podIP }], conditions } },
        { subresource: 'status' },
      );
    }
  }
}

/** Backend groups over six nodes: one ready Pod on each of 3 nodes; Service i selects group i % 3. */
export const backendGroups = (nodes: readonly string[]): string[][] => [
  [nodes[0], nodes[1], nodes[2]],
  [nodes[2], nodes[3], nodes[4]],
  [nodes[4], nodes[5], nodes[0]],
];

/** The Services' side of a run: where they are made, the network they ask for, the class that picks the controller. */
export interface ServiceSide {
  readonly namespace: string;
  readonly network: string;
  readonly loadBalancerClass: string;
  /** How many backend groups there are (createBackends); Service i selects group i % groups. */
  readonly groups: number;
}

/** Service `s<i>`: a LoadBalancer (externalTrafficPolicy Local, no node ports) on port 80 of its group's Pods. */
export function loadBalancerService(side: ServiceSide, i: number): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      namespace: side.namespace,
      name: `s${i}`,
      annotations: { [ANNOTATIONS.loadBalancerExternalNetwork]: side.network },
    },
    spec: {
      type: 'LoadBalancer',
      loadBalancerClass: side.loadBalancerClass,
      allocateLoadBalancerNodePorts: false,
      externalTrafficPolicy: 'Local',
      selector: { group: `g${i % side.groups}` },
      ports: [{ name: 'http', port: 80, targetPort: 'http' }],
    },
  } as KubeObject;
}

/** Polls every `pollMs` until `count` Services of `namespace` have an EndpointSlice with a ready endpoint. */
export async function waitForReadyEndpoints(
  rest: RestClient,
  namespace: string,
  count: number,
  pollMs: number,
): Promise<void> {
  for (;;) {
    const slices = (
      await rest.list<KubeObject & { endpoints?: Array<{ conditions?: { ready?: boolean } }> }>(
        Resources.endpointSlices,
        { namespace },
      )
    ).items;
    const ready = new Set(
      slices
        .filter((s) => s.endpoints?.some((e) => e.conditions?.ready))
        .map((s) => s.metadata?.labels?.['kubernetes.io/service-name']),
    );
    if (ready.size >= count) return;
    await sleep(pollMs);
  }
}

const FIELD_MANAGER = FieldManagers.controller;
const REPORTER = 'juneau.loutres.me/controller';

/** One Event as the controller's recorder writes it (events.k8s.io/v1), about `kind` `namespace/name`. */
export function floorEvent(
  rest: RestClient,
  regarding: { kind: string; namespace: string; name: string; uid: string | undefined },
  note: string,
): Promise<KubeObject> {
  const { namespace, name } = regarding;
  return rest.create(Resources.events, {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { namespace, name: `${name}.${Date.now().toString(16)}${Math.random().toString(16).slice(2, 6)}` },
    eventTime: toMicroTime(new Date()),
    reportingController: REPORTER,
    reportingInstance: 'bench-floor',
    action: 'Reconcile',
    reason: 'Advertised',
    type: 'Normal',
    note,
    regarding: { apiVersion: API_VERSION, ...regarding },
  } as KubeObject);
}

export interface FloorService {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** The VIP, the i-th address of the pool. */
  readonly vip: string;
  /** The AddressPool and the ExternalNetwork (bench/controller names both alike). */
  readonly pool: string;
  readonly network: string;
  /** The nodes with a ready backend; the first answers ARP. */
  readonly members: readonly string[];
}

/** The six writes of one Service's first pass, in the controller's order. */
export async function serviceFloorWrites(rest: RestClient, s: FloorService): Promise<void> {
  const { namespace, name, vip, pool, network, members } = s;
  const owner = { apiVersion: 'v1', kind: 'Service', name, uid: s.uid, controller: true, blockOwnerDeletion: true };
  const slb = await rest.patch<KubeObject>(
    JuneauResources.serviceLoadBalancers,
    namespace,
    name,
    'apply',
    {
      apiVersion: API_VERSION,
      kind: 'ServiceLoadBalancer',
      metadata: { namespace, name, ownerReferences: [owner], finalizers: [FINALIZERS.serviceLoadBalancer] },
      spec: { externalNetwork: network },
    },
    { fieldManager: FIELD_MANAGER, force: true },
  );
  const holder = { apiVersion: API_VERSION, kind: 'ServiceLoadBalancer', namespace, name, uid: slb.metadata?.uid };
  await rest.create(
    JuneauResources.allocationClaims,
    {
      apiVersion: API_VERSION,
      kind: 'AllocationClaim',
      metadata: { name: `ipv4.${vip}` },
      spec: { pool: { kind: 'AddressPool', name: pool }, value: vip, holder },
    } as KubeObject,
    { fieldManager: FIELD_MANAGER },
  );
  const ownerRef = { kind: 'ServiceLoadBalancer', namespace, name } as const;
  await rest.create(
    JuneauResources.arpAdvertisements,
    {
      apiVersion: API_VERSION,
      kind: 'ARPAdvertisement',
      metadata: { name: advertisementName(ownerRef), ...ownerMetadata(ownerRef) },
      spec: { externalNetwork: network, address: vip, nodeName: members[0] },
    } as KubeObject,
    { fieldManager: FIELD_MANAGER },
  );
  const now = new Date().toISOString();
  const condition = (type: string, reason: string, message: string) => ({
    type,
    status: 'True',
    reason,
    message,
    observedGeneration: 1,
    lastTransitionTime: now,
  });
  const status = {
    phase: 'Ready',
    vip,
    addressPool: pool,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
    advertisingNodes: [...members].sort(),
    arpAnnouncingNode: members[0],
    backendSummary: { totalReady: 3, localReadyNodes: 3 },
    observedGeneration: 1,
    conditions: [
      condition('Allocated', 'AddressAllocated', `VIP ${vip} from AddressPool ${pool}`),
      condition('Available', 'Advertised', `VIP ${vip} answered over ARP by node ${members[0]}`),
    ],
  };
  await applyStatus(rest, JuneauResources.serviceLoadBalancers, { namespace, name }, status, FIELD_MANAGER);
  await rest.patch(
    Resources.services,
    namespace,
    name,
    'merge',
    { status: { loadBalancer: { ingress: [{ ip: vip, ipMode: 'VIP' }] } } },
    { fieldManager: FIELD_MANAGER, subresource: 'status' },
  );
  await floorEvent(
    rest,
    { kind: 'ServiceLoadBalancer', namespace, name, uid: slb.metadata?.uid },
    `phase Ready: VIP ${vip} answered over ARP by node ${members[0]}`,
  );
}
