/**
 * The views the ElasticIP, ElasticIPAttachment and NetworkInterface reconcilers build from the
 * shared caches (../context.ts), so the three status reconcilers decide usage (EIP-11) from the
 * same inputs with the same function.
 */
import type { ElasticIP, NetworkInterface } from '../../../api';
import type { Informer } from '../../kube/informer';
import type { Stored } from '../../kube/types';
import { CACHE_INDEX, type Caches, type PodObject } from '../context';
import { decideUsage, type AttachmentView, type NicView, type Usage } from './usage';

type ViewCaches = Pick<Caches, 'elasticIPAttachments' | 'networkInterfaces' | 'pods'>;

/**
 * A NIC counts as being deleted (EIP-11 rule 2) when it has a deletionTimestamp, or when the Pod
 * that owns it is terminating or gone (the garbage collector is about to delete the NIC, and a
 * terminating Pod may still use the address until it has stopped).
 */
export function isNicDeleting(nic: Stored<NetworkInterface>, pods: Informer<PodObject>): boolean {
  if (nic.metadata.deletionTimestamp) return true;
  const owner = nic.metadata.ownerReferences?.find((o) => o.kind === 'Pod' && o.apiVersion === 'v1');
  if (!owner) return false;
  const pod = pods.get(nic.metadata.namespace, owner.name);
  return !pod || pod.metadata.uid !== owner.uid || !!pod.metadata.deletionTimestamp;
}

export function nicViewsOf(caches: ViewCaches, namespace: string, elasticIP: string): NicView[] {
  return caches.networkInterfaces.byIndex(CACHE_INDEX.byElasticIP, `${namespace}/${elasticIP}`).map((n) => ({
    name: n.metadata.name,
    creationTimestamp: n.metadata.creationTimestamp ? String(n.metadata.creationTimestamp) : undefined,
    deleting: isNicDeleting(n, caches.pods),
    nodeName: n.spec.nodeName || undefined,
  }));
}

export function attachmentViewsOf(caches: ViewCaches, namespace: string, elasticIP: string): AttachmentView[] {
  return caches.elasticIPAttachments.byIndex(CACHE_INDEX.byElasticIP, `${namespace}/${elasticIP}`).map((a) => ({
    name: a.metadata.name,
    networkInterface: a.spec.networkInterface,
    nodeName: a.status?.nodeName || undefined,
  }));
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
  });
}
