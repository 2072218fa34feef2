/**
 * The views the ElasticIP, ElasticIPAttachment and NetworkInterface reconcilers build from the
 * shared caches (../context.ts), so the three status reconcilers decide usage (EIP-11) and what is
 * withheld (H1, M7) from the same inputs with the same function.
 */
import type { ElasticIP, ElasticIPAttachment, NetworkInterface } from '../../../api';
import type { Informer } from '../../kube/informer';
import type { Stored } from '../../kube/types';
import { CACHE_INDEX, type Caches, type PodObject } from '../context';
import { byAgeThenName, decideUsage, type AttachmentView, type NicView, type Usage, type Withheld } from './usage';

type ViewCaches = Pick<Caches, 'elasticIPAttachments' | 'networkInterfaces' | 'pods' | 'externalNetworks'>;

/** Reasons of what is withheld from a user (H1, M7), on the attachment's or NIC's status and the ElasticIP's condition. */
export const WITHHELD_REASONS = {
  podNotRunning: 'PodNotRunning',
  networkInterfaceInUse: 'NetworkInterfaceInUse',
} as const;

/** H1: the state of a NIC's Pod in which it may use no ElasticIP. */
export type PodProblem = Withheld & { readonly state: 'stopped' | 'deleting' | 'missing' | 'replaced' };

const podOwner = (nic: Stored<NetworkInterface>) =>
  nic.metadata.ownerReferences?.find((o) => o.kind === 'Pod' && o.apiVersion === 'v1');

/**
 * H1: why the Pod of a NIC cannot use an ElasticIP now, or undefined while it can (Pending or
 * Running, not being deleted). The Pod is the NIC's owner, or `spec.podName` for a NIC without one.
 * A stopped or deleted Pod's IP goes back to the CNI, which hands it to the next Pod on the node:
 * NAT keyed by that IP would give this ElasticIP to someone else.
 */
export function nicPodProblem(nic: Stored<NetworkInterface>, pods: Informer<PodObject>): PodProblem | undefined {
  const owner = podOwner(nic);
  const name = owner?.name ?? nic.spec.podName;
  const pod = pods.get(nic.metadata.namespace, name);
  const problem = (state: PodProblem['state'], what: string): PodProblem => ({
    state,
    reason: WITHHELD_REASONS.podNotRunning,
    message: `Pod ${name} of NetworkInterface ${nic.metadata.name} ${what}, so it uses no ElasticIP: its address may already belong to another Pod (H1)`,
  });
  if (!pod) return problem('missing', 'does not exist');
  if (owner && pod.metadata.uid !== owner.uid)
    return problem('replaced', `is a new Pod of that name (uid ${pod.metadata.uid ?? ''}, not ${owner.uid})`);
  if (pod.metadata.deletionTimestamp) return problem('deleting', 'is being deleted');
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return problem('stopped', `has ${phase}`);
  return undefined;
}

/**
 * A NIC counts as being deleted (EIP-11 rule 2) when it has a deletionTimestamp, or when the Pod
 * that owns it is terminating or gone (the garbage collector is about to delete the NIC, and a
 * terminating Pod may still use the address until it has stopped). A NIC without an owner is
 * deleted by nobody but its creator.
 */
export function isNicDeleting(nic: Stored<NetworkInterface>, problem: PodProblem | undefined): boolean {
  if (nic.metadata.deletionTimestamp) return true;
  return !!podOwner(nic) && !!problem && problem.state !== 'stopped';
}

export function nicViewOf(n: Stored<NetworkInterface>, pods: Informer<PodObject>): NicView {
  const problem = nicPodProblem(n, pods);
  return {
    name: n.metadata.name,
    creationTimestamp: n.metadata.creationTimestamp ? String(n.metadata.creationTimestamp) : undefined,
    deleting: isNicDeleting(n, problem),
    nodeName: n.spec.nodeName || undefined,
    ...(problem?.state === 'stopped' ? { stopped: problem } : {}),
  };
}

export function nicViewsOf(caches: ViewCaches, namespace: string, elasticIP: string): NicView[] {
  return caches.networkInterfaces
    .byIndex(CACHE_INDEX.byElasticIP, `${namespace}/${elasticIP}`)
    .map((n) => nicViewOf(n, caches.pods));
}

/**
 * H1, M7: why an attachment may not translate to its NIC although the ElasticIP is its: the NIC's
 * Pod is not running, the NIC holds an ElasticIP directly, or an older attachment uses the NIC
 * (the oldest wins; ties by name). Undefined when nothing stands in the way, or the NIC is missing
 * (the attachment's own status says so).
 */
export function attachmentWithheld(caches: ViewCaches, attachment: Stored<ElasticIPAttachment>): Withheld | undefined {
  const namespace = attachment.metadata.namespace ?? '';
  const nicName = attachment.spec.networkInterface;
  const nic = caches.networkInterfaces.get(namespace, nicName);
  if (!nic) return undefined;
  if (nic.spec.elasticIP)
    return {
      reason: WITHHELD_REASONS.networkInterfaceInUse,
      message: `NetworkInterface ${nicName} holds ElasticIP ${nic.spec.elasticIP} directly; a NIC that holds one gets no NAT as well (M7)`,
    };
  const first = caches.elasticIPAttachments
    .byIndex(CACHE_INDEX.byNetworkInterface, `${namespace}/${nicName}`)
    .map((a) => ({
      name: a.metadata.name,
      creationTimestamp: a.metadata.creationTimestamp ? String(a.metadata.creationTimestamp) : undefined,
    }))
    .sort(byAgeThenName)[0];
  if (first && first.name !== attachment.metadata.name)
    return {
      reason: WITHHELD_REASONS.networkInterfaceInUse,
      message: `NetworkInterface ${nicName} is already used by ElasticIPAttachment ${first.name} (the older one); a NIC has one attachment at most (M7)`,
    };
  const problem = nicPodProblem(nic, caches.pods);
  return problem && { reason: problem.reason, message: problem.message };
}

export function attachmentViewsOf(caches: ViewCaches, namespace: string, elasticIP: string): AttachmentView[] {
  return caches.elasticIPAttachments.byIndex(CACHE_INDEX.byElasticIP, `${namespace}/${elasticIP}`).map((a) => {
    const withheld = attachmentWithheld(caches, a);
    return {
      name: a.metadata.name,
      networkInterface: a.spec.networkInterface,
      nodeName: a.status?.nodeName || undefined,
      ...(withheld ? { withheld } : {}),
    };
  });
}

/** EIP-10/11/16, EIPA-2: the usage of an ElasticIP as the caches show it now. */
export function usageOf(caches: ViewCaches, eip: Stored<ElasticIP>): Usage {
  const namespace = eip.metadata.namespace ?? '';
  const name = eip.metadata.name;
  return decideUsage({
    attachments: attachmentViewsOf(caches, namespace, name),
    nics: nicViewsOf(caches, namespace, name),
    current: eip.status?.attachment,
    elasticIPDeleting: !!eip.metadata.deletionTimestamp,
    awaitingNetworkID: awaitingNetworkIDOf(caches, eip),
  });
}

/** EN-8: the ElasticIP's ExternalNetwork while it exists without a `status.networkID`; undefined otherwise. */
export function awaitingNetworkIDOf(
  caches: Pick<Caches, 'externalNetworks'>,
  eip: Stored<ElasticIP>,
): string | undefined {
  const name = eip.spec.externalNetwork;
  const network = caches.externalNetworks.get(undefined, name);
  return network && !network.status?.networkID ? name : undefined;
}
