/**
 * NIC-1, EN-8: the NetworkInterfaces a Pod should have, from its annotations and what exists.
 * Pure: the pod reconciler only writes what this returns.
 *
 * - One NetworkInterface `<pod>.<interface>` per Juneau NIC, owned by the Pod (the garbage
 *   collector deletes it after the Pod), with `spec.nodeName` once the Pod is scheduled and
 *   `spec.address` from the Pod's IP (for `eth0`, the interface the Pod IP belongs to).
 * - EN-8: a NIC that holds an ElasticIP directly is not created while the ElasticIP's network
 *   has no `status.networkID` (nor while that network cannot be found).
 * - EIP-13: a NIC naming an ElasticIP that does not exist is created all the same (with a
 *   Warning on the Pod): it stays Pending with a condition naming `spec.elasticIP`
 *   (../eip/dependents.ts), so its pod does not start; should the ElasticIP appear on a network
 *   without an ID, it still gets no address (EN-8, ../eip/usage.ts).
 * - The annotation is read when a NetworkInterface is created. `spec.elasticIP` is immutable, so
 *   a later change of the annotation is reported (Event) and not applied: recreate the Pod.
 */
import { API_VERSION, type NetworkInterface } from '../../../api';
import type { PlannedEvent } from '../../kube/events';
import type { PodView } from './views';
import { nicName, SHORTHAND_INTERFACE, type PodInterface } from '../../../api/validation/pod-networks';

/** The parts of an existing NetworkInterface this module reads. */
export interface ExistingNic {
  readonly name: string;
  /** uid of the Pod in its ownerReferences, if any. */
  readonly podUid: string | undefined;
  readonly elasticIP: string | undefined;
  readonly nodeName: string | undefined;
  readonly address: string | undefined;
}

/**
 * EN-8: whether a NIC holding this ElasticIP directly may be created now. `createPending`: it is
 * created all the same and waits Pending (EIP-13), the reason and message going to the Pod's Event.
 */
export type DirectReadiness =
  | { readonly ready: true }
  | { readonly ready: false; readonly reason: string; readonly message: string; readonly createPending?: boolean };

export interface PodPlanInput {
  readonly pod: PodView;
  readonly interfaces: readonly PodInterface[];
  /** The existing NetworkInterface of that name, per interface name. */
  readonly existing: (nicName: string) => ExistingNic | undefined;
  readonly directReadiness: (elasticIP: string) => DirectReadiness;
  /** H2: what of a Node an address is ("the InternalIP of Node n1"), or undefined when it is no Node's. */
  readonly nodeAddressOwner?: (address: string) => string | undefined;
}

export interface PodPlan {
  readonly create: readonly NetworkInterface[];
  /** Merge patches of `spec` for NICs whose node or address became known. */
  readonly update: ReadonlyArray<{ readonly name: string; readonly spec: { nodeName?: string; address?: string } }>;
  /** NICs of an earlier Pod of the same name (another uid): delete them so this Pod's can be created. */
  readonly deleteStale: readonly string[];
  readonly events: readonly PlannedEvent[];
}

export { nicName };

/**
 * Reasons of the Events this module plans on a Pod (a Pod has no condition of ours, so there is
 * no CONDITIONS table); a malformed annotation brings its own (api/validation/pod-networks.ts).
 */
export const REASONS = {
  networkInterfaceCreated: 'NetworkInterfaceCreated',
  annotationChanged: 'NetworkAnnotationChanged',
  staleNetworkInterface: 'StaleNetworkInterface',
  /** EN-8: a direct NIC waits for its ElasticIP, the ElasticIP's network, and the network's ID. */
  elasticIPNotFound: 'ElasticIPNotFound',
  externalNetworkNotFound: 'ExternalNetworkNotFound',
  waitingForNetworkID: 'WaitingForNetworkID',
  /** H2: Pods whose address is a node's get no NetworkInterface. */
  hostNetwork: 'HostNetworkPod',
  podIPIsNodeAddress: 'PodIPIsNodeAddress',
} as const;

export function planPodInterfaces(input: PodPlanInput): PodPlan {
  const { pod } = input;
  const podName = pod.metadata.name ?? '';
  const plan = {
    create: [] as NetworkInterface[],
    update: [] as PodPlan['update'][number][],
    deleteStale: [] as string[],
    events: [] as PlannedEvent[],
  };
  if (pod.metadata.deletionTimestamp) return plan;
  const refusal = nodeAddressRefusal(input);
  if (refusal) {
    plan.events.push(refusal);
    return plan;
  }
  for (const iface of input.interfaces) {
    const name = nicName(podName, iface.interface);
    const desired = desiredSpec(pod, iface);
    const existing = input.existing(name);
    if (existing && existing.podUid !== pod.metadata.uid) {
      plan.deleteStale.push(name);
      plan.events.push({
        type: 'Normal',
        reason: REASONS.staleNetworkInterface,
        message: `NetworkInterface ${name} belongs to an earlier Pod of this name; it is deleted and created again for this Pod`,
      });
      continue;
    }
    if (existing) {
      if (existing.elasticIP !== iface.elasticIP) {
        plan.events.push({
          type: 'Warning',
          reason: REASONS.annotationChanged,
          message: `interface ${iface.interface}: the annotation now says elasticIP ${show(iface.elasticIP)}, but NetworkInterface ${name} was created with ${show(existing.elasticIP)}; spec.elasticIP cannot change: recreate the Pod to apply it (NIC-1)`,
        });
      }
      const patch = {
        ...(desired.nodeName && desired.nodeName !== existing.nodeName ? { nodeName: desired.nodeName } : {}),
        ...(desired.address && desired.address !== existing.address ? { address: desired.address } : {}),
      };
      if (Object.keys(patch).length > 0) plan.update.push({ name, spec: patch });
      continue;
    }
    if (iface.elasticIP !== undefined) {
      const readiness = input.directReadiness(iface.elasticIP);
      if (!readiness.ready) {
        plan.events.push({
          type: 'Warning',
          reason: readiness.reason,
          message: `interface ${iface.interface}: ${readiness.message}`,
        });
        if (!readiness.createPending) continue;
      }
    }
    plan.create.push(nicObject(pod, name, desired));
    plan.events.push({
      type: 'Normal',
      reason: REASONS.networkInterfaceCreated,
      message: `created NetworkInterface ${name}${iface.elasticIP ? ` holding ElasticIP ${iface.elasticIP} directly` : ''}`,
    });
  }
  return plan;
}

/**
 * H2: a hostNetwork Pod, or one whose IP is a Node's, gets no NetworkInterface: NAT or an
 * ElasticIP on that address would carry the node's own traffic (kubelet, sshd) to or from a tenant.
 */
function nodeAddressRefusal(input: PodPlanInput): PlannedEvent | undefined {
  const { pod } = input;
  const none = 'so it gets no NetworkInterface and uses no ElasticIP (H2)';
  if (pod.spec?.hostNetwork)
    return {
      type: 'Warning',
      reason: REASONS.hostNetwork,
      message: `the Pod uses its node's network (spec.hostNetwork): its address is the node's, ${none}`,
    };
  const owner = pod.status?.podIP ? input.nodeAddressOwner?.(pod.status.podIP) : undefined;
  if (owner)
    return {
      type: 'Warning',
      reason: REASONS.podIPIsNodeAddress,
      message: `status.podIP ${pod.status?.podIP} is ${owner}, ${none}`,
    };
  return undefined;
}

function desiredSpec(pod: PodView, iface: PodInterface): NetworkInterface['spec'] {
  const address = iface.interface === SHORTHAND_INTERFACE ? pod.status?.podIP : undefined;
  return {
    podName: pod.metadata.name ?? '',
    interface: iface.interface,
    ...(pod.spec?.nodeName ? { nodeName: pod.spec.nodeName } : {}),
    ...(address ? { address } : {}),
    ...(iface.elasticIP !== undefined ? { elasticIP: iface.elasticIP } : {}),
  };
}

function nicObject(pod: PodView, name: string, spec: NetworkInterface['spec']): NetworkInterface {
  const owner = {
    apiVersion: 'v1',
    kind: 'Pod',
    name: pod.metadata.name ?? '',
    uid: pod.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
  return {
    apiVersion: API_VERSION,
    kind: 'NetworkInterface',
    metadata: { name, namespace: pod.metadata.namespace, ownerReferences: [owner] },
    spec,
  };
}

const show = (eip: string | undefined): string => (eip === undefined ? 'none' : JSON.stringify(eip));

/** EN-8: the readiness of a direct NIC, from the ElasticIP and its network as found. */
export function directReadiness(
  elasticIP: string,
  eip: { readonly externalNetwork: string } | undefined,
  network: { readonly networkID: number | undefined } | undefined,
): DirectReadiness {
  if (!eip)
    return {
      ready: false,
      reason: REASONS.elasticIPNotFound,
      message: `ElasticIP ${elasticIP} does not exist in this namespace; its NetworkInterface stays Pending and the Pod does not start until it does (EIP-13)`,
      createPending: true,
    };
  if (!network) {
    return {
      ready: false,
      reason: REASONS.externalNetworkNotFound,
      message: `ElasticIP ${elasticIP} names ExternalNetwork ${eip.externalNetwork}, which does not exist; its NetworkInterface is created once it does (EN-8)`,
    };
  }
  if (!network.networkID) {
    return {
      ready: false,
      reason: REASONS.waitingForNetworkID,
      message: `ExternalNetwork ${eip.externalNetwork} of ElasticIP ${elasticIP} has no status.networkID yet; a NIC that holds the ElasticIP directly needs it, so the NetworkInterface is created once it is written (EN-8, EN-9)`,
    };
  }
  return { ready: true };
}
