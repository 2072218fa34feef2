/**
 * Pods as the controller's cache keeps them (../context.ts builds the informer), and the
 * ElasticIPs a Pod's annotations name (EN-8), by which that cache is indexed so an ElasticIP's
 * change finds the Pods waiting for it.
 */
import { parsePodNetworks } from '../../../api/validation/pod-networks';
import type { KubeObject, ObjectMeta } from '../../kube/types';

/** The parts of a Pod the rules read. */
export interface PodView {
  readonly metadata: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly deletionTimestamp?: string;
  };
  readonly spec?: { readonly nodeName?: string };
  readonly status?: { readonly podIP?: string };
}

export type PodObject = PodView & KubeObject & { metadata: ObjectMeta };

/** `<namespace>/<elasticIP>` of every ElasticIP the Pod's annotations name; none when they do not parse. */
export function podElasticIPs(pod: PodObject): string[] {
  const parsed = parsePodNetworks(pod.metadata.annotations);
  if (!parsed.ok) return [];
  return parsed.interfaces.flatMap((i) => (i.elasticIP ? [`${pod.metadata.namespace}/${i.elasticIP}`] : []));
}
