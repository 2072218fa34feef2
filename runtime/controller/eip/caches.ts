/**
 * The caches the ElasticIP, ElasticIPAttachment, NetworkInterface and pod reconcilers read, with
 * the indexes that map a change back to the objects it affects (work proportional to the change),
 * and the views all of them build from those caches — so the three status reconcilers decide
 * usage (EIP-11) from the same inputs with the same function.
 */
import type { ElasticIP, ElasticIPAttachment, NetworkInterface } from '../../../api';
import type { Informer } from '../../kube/informer';
import type { SharedInformers } from '../../kube/shared-informers';
import { Resources } from '../../kube/resources';
import { indexBy } from '../../kube/store';
import type { KubeObject, ObjectMeta } from '../../kube/types';
import { parsePodNetworks } from '../../../api/validation/pod-networks';
import type { PodView } from '../pods/plan';
import { JuneauResources } from '../resources';
import { decideUsage, type AttachmentView, type NicView, type Usage } from './usage';

/** The namespaced kinds of this feature as REST resource types. */
export const EipResources = {
  elasticIPs: JuneauResources.elasticIPs,
  elasticIPAttachments: JuneauResources.elasticIPAttachments,
  networkInterfaces: JuneauResources.networkInterfaces,
} as const;

export type ElasticIPObject = ElasticIP & KubeObject;
export type AttachmentObject = ElasticIPAttachment & KubeObject;
export type NicObject = NetworkInterface & KubeObject;
export type PodObject = PodView & KubeObject & { metadata: ObjectMeta };

/** Index names; every value is `<namespace>/<name>` of the referenced object. */
export const INDEX = {
  byElasticIP: 'elasticIP',
  byNetworkInterface: 'networkInterface',
  byPod: 'pod',
} as const;

const ref = (namespace: string | undefined, name: string | undefined): string | undefined =>
  namespace && name ? `${namespace}/${name}` : undefined;

export interface EipCaches {
  readonly elasticIPs: Informer<ElasticIPObject>;
  readonly attachments: Informer<AttachmentObject>;
  readonly nics: Informer<NicObject>;
  readonly pods: Informer<PodObject>;
}

/** The caches, from the controller's shared informers (the webhooks read attachments and NICs too). */
export function createEipCaches(informers: SharedInformers): EipCaches {
  return {
    elasticIPs: informers.informer<ElasticIPObject>({ type: EipResources.elasticIPs }),
    attachments: informers.informer<AttachmentObject>({
      type: EipResources.elasticIPAttachments,
      indexers: {
        [INDEX.byElasticIP]: indexBy((a) => ref(a.metadata.namespace, a.spec.elasticIP)),
        [INDEX.byNetworkInterface]: indexBy((a) => ref(a.metadata.namespace, a.spec.networkInterface)),
      },
    }),
    nics: informers.informer<NicObject>({
      type: EipResources.networkInterfaces,
      indexers: {
        [INDEX.byElasticIP]: indexBy((n) => ref(n.metadata.namespace, n.spec.elasticIP)),
        [INDEX.byPod]: indexBy((n) => ref(n.metadata.namespace, n.spec.podName)),
      },
    }),
    pods: informers.informer<PodObject>({
      type: Resources.pods,
      // The ElasticIPs a Pod's annotations name, so an ElasticIP change finds the Pods waiting for it (EN-8).
      indexers: { [INDEX.byElasticIP]: (p) => podElasticIPs(p) },
    }),
  };
}

function podElasticIPs(pod: PodObject): string[] {
  const parsed = parsePodNetworks(pod.metadata.annotations);
  if (!parsed.ok) return [];
  return parsed.interfaces.flatMap((i) => (i.elasticIP ? [`${pod.metadata.namespace}/${i.elasticIP}`] : []));
}

export const allInformers = (c: EipCaches): Array<Informer<KubeObject>> =>
  [c.elasticIPs, c.attachments, c.nics, c.pods] as unknown as Array<Informer<KubeObject>>;

// ---------------------------------------------------------------------------------------------
// views shared by the reconcilers

/**
 * A NIC counts as being deleted (EIP-11 rule 2) when it has a deletionTimestamp, or when the Pod
 * that owns it is terminating or gone (the garbage collector is about to delete the NIC, and a
 * terminating Pod may still use the address until it has stopped).
 */
export function isNicDeleting(nic: NicObject, pods: Informer<PodObject>): boolean {
  if (nic.metadata.deletionTimestamp) return true;
  const owner = nic.metadata.ownerReferences?.find((o) => o.kind === 'Pod' && o.apiVersion === 'v1');
  if (!owner) return false;
  const pod = pods.get(nic.metadata.namespace, owner.name);
  return !pod || pod.metadata.uid !== owner.uid || !!pod.metadata.deletionTimestamp;
}

export function nicViewsOf(caches: EipCaches, namespace: string, elasticIP: string): NicView[] {
  return caches.nics.byIndex(INDEX.byElasticIP, `${namespace}/${elasticIP}`).map((n) => ({
    name: n.metadata.name ?? '',
    creationTimestamp: n.metadata.creationTimestamp ? String(n.metadata.creationTimestamp) : undefined,
    deleting: isNicDeleting(n, caches.pods),
    nodeName: n.spec.nodeName || undefined,
  }));
}

export function attachmentViewsOf(caches: EipCaches, namespace: string, elasticIP: string): AttachmentView[] {
  return caches.attachments.byIndex(INDEX.byElasticIP, `${namespace}/${elasticIP}`).map((a) => ({
    name: a.metadata.name ?? '',
    networkInterface: a.spec.networkInterface,
    nodeName: a.status?.nodeName || undefined,
  }));
}

/** EIP-10/11/16, EIPA-2: the usage of an ElasticIP as the caches show it now. */
export function usageOf(caches: EipCaches, eip: ElasticIPObject): Usage {
  const namespace = eip.metadata.namespace ?? '';
  const name = eip.metadata.name ?? '';
  return decideUsage({
    attachments: attachmentViewsOf(caches, namespace, name),
    nics: nicViewsOf(caches, namespace, name),
    current: eip.status?.attachment,
    elasticIPDeleting: !!eip.metadata.deletionTimestamp,
  });
}
