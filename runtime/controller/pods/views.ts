/**
 * Pods as the controller's cache keeps them (../context.ts builds the informer with `podView` as
 * its transform), and the ElasticIPs a Pod's annotations name (EN-8), by which that cache is
 * indexed so an ElasticIP's change finds the Pods waiting for it.
 */
import { ANNOTATIONS } from '../../../api';
import { parsePodNetworks } from '../../../api/validation/pod-networks';
import type { KubeObject, ObjectMeta } from '../../kube/types';

/** The parts of a Pod the rules read. */
export interface PodView {
  readonly metadata: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly deletionTimestamp?: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly spec?: { readonly nodeName?: string; readonly hostNetwork?: boolean };
  readonly status?: { readonly phase?: string; readonly podIP?: string };
}

export type PodObject = PodView & KubeObject & { metadata: ObjectMeta };

/** The annotations a Pod keeps in the cache: Juneau's own (NIC-1, EIP-4); the rest is never read. */
const KEPT_ANNOTATIONS: readonly string[] = [ANNOTATIONS.networks, ANNOTATIONS.elasticIP];

/**
 * H4: a Pod as the cache keeps it, the fields the controller and the webhooks read and no more:
 * identity, labels (NGW-4), Juneau's annotations, the node and hostNetwork, the phase and IP. A cluster-wide Pod
 * cache otherwise holds every Pod's managedFields, containers, volumes and other annotations.
 */
export function podView(pod: PodObject): PodObject {
  const m = pod.metadata;
  const annotations = Object.fromEntries(
    KEPT_ANNOTATIONS.flatMap((k) => (m.annotations?.[k] !== undefined ? [[k, m.annotations[k]]] : [])),
  );
  const { nodeName, hostNetwork } = pod.spec ?? {};
  const { phase, podIP } = pod.status ?? {};
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      ...(m.creationTimestamp ? { creationTimestamp: m.creationTimestamp } : {}),
      ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
      ...(Object.keys(annotations).length ? { annotations } : {}),
      // NGW-4: a NATGateway's podSelector reads them.
      ...(m.labels && Object.keys(m.labels).length ? { labels: m.labels } : {}),
    },
    spec: { ...(nodeName ? { nodeName } : {}), ...(hostNetwork ? { hostNetwork } : {}) },
    status: { ...(phase ? { phase } : {}), ...(podIP ? { podIP } : {}) },
  };
}

/** `<namespace>/<elasticIP>` of every ElasticIP the Pod's annotations name; none when they do not parse. */
export function podElasticIPs(pod: PodObject): string[] {
  const parsed = parsePodNetworks(pod.metadata.annotations);
  if (!parsed.ok) return [];
  return parsed.interfaces.flatMap((i) => (i.elasticIP ? [`${pod.metadata.namespace}/${i.elasticIP}`] : []));
}
