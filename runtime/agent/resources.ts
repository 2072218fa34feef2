/** The Juneau kinds the ARP loop reads (resource types in runtime/kube/resources.ts JuneauResources)
 * and their views for arp/desired.ts. */
import type { AddressPool, ARPAdvertisement, ExternalNetwork } from '../../api';
import { OWNER_LABELS } from '../../api/constants';
import { networkView as networkSpecView, poolView } from '../../api/validation';
import { trimmedObject } from '../kube/informer';
import type { KubeObject } from '../kube/types';
import type { AdvertisementView, NetworkView } from './arp/desired';
import type { NATGatewayObject } from './ngw/inputs';
import type { AttachmentObject, ElasticIPObject, NetworkInterfaceObject, NodeObject, PodObject } from './nat/desired';
import { MANAGED_BY_LABEL, type EndpointSliceSource, type ServiceCIDRSource } from './nat/prefixes';

export type ServiceCIDRObject = ServiceCIDRSource & KubeObject;
export type EndpointSliceObject = EndpointSliceSource & KubeObject;

export { poolView };

/** The kinds as the informers hold them (api/ types with the wire metadata of runtime/kube). */
export type AdvertisementObject = ARPAdvertisement & KubeObject;
export type AddressPoolObject = AddressPool & KubeObject;
export type ExternalNetworkObject = ExternalNetwork & KubeObject;

/** The field selector of this node's ARPAdvertisements (CRD selectableFields `.spec.nodeName`). */
export function nodeFieldSelector(nodeName: string): string {
  return `spec.nodeName=${nodeName}`;
}

// Objects come from the API server, whose schema has validated them; the views still tolerate a
// missing field so that one odd object cannot stop the agent.
export function advertisementView(ad: ARPAdvertisement): AdvertisementView {
  return {
    name: ad.metadata?.name ?? '',
    address: ad.spec?.address ?? '',
    nodeName: ad.spec?.nodeName ?? '',
    externalNetwork: ad.spec?.externalNetwork ?? '',
    // SEC-11: the controller's owner mark (only it writes ARPAdvertisements, ARP-11). An ElasticIP's
    // address is never moved to another node (FO-3), so it is held; anything else expires.
    expiryClass: ad.metadata?.labels?.[OWNER_LABELS.kind] === 'ElasticIP' ? 'held' : 'moveable',
  };
}

/** The network view validation reads, and FO-1's `spec.arp.announceOnMove`. */
export function networkView(network: ExternalNetwork): NetworkView {
  return { ...networkSpecView(network), announceOnMove: network.spec?.arp?.announceOnMove === true };
}

/**
 * H4: every agent informer lists in pages this small, so that one LIST of objects near the
 * API server's size limit (about 1.5 MiB each) is never held and parsed at once.
 */
export const AGENT_PAGE_SIZE = 25;

function ownerKindLabel(ad: AdvertisementObject): { labels?: Record<string, string> } {
  const kind = ad.metadata?.labels?.[OWNER_LABELS.kind];
  return kind === undefined ? {} : { labels: { [OWNER_LABELS.kind]: kind } };
}

/**
 * H4: what the agent caches of each kind, as informer `transform`s: the fields its loops read and
 * nothing else. Labels, annotations, conditions and messages go, so that objects a tenant makes
 * as large as the API server allows cost each agent a few hundred bytes apiece. ExternalNetworks
 * and AddressPools keep their whole spec: cluster-scoped, written by the administrator, and
 * bounded by their schema.
 */
export const agentViews = {
  /** With the owner-kind label: it is the address's expiry class (SEC-11, advertisementView). */
  arpAdvertisement: (ad: AdvertisementObject) =>
    trimmedObject(ad, {
      metadata: ownerKindLabel(ad),
      spec: { address: ad.spec?.address, nodeName: ad.spec?.nodeName, externalNetwork: ad.spec?.externalNetwork },
    }),
  addressPool: (pool: AddressPoolObject) => trimmedObject(pool, { spec: pool.spec }),
  externalNetwork: (network: ExternalNetworkObject) =>
    trimmedObject(network, {
      spec: network.spec,
      ...(network.status ? { status: { networkID: network.status.networkID } } : {}),
    }),
  elasticIP: (eip: ElasticIPObject) =>
    trimmedObject(eip, {
      spec: { externalNetwork: eip.spec?.externalNetwork, requestedIP: eip.spec?.requestedIP },
      ...(eip.status
        ? {
            status: {
              phase: eip.status.phase,
              address: eip.status.address,
              ...(eip.status.attachment
                ? { attachment: { kind: eip.status.attachment.kind, name: eip.status.attachment.name } }
                : {}),
            },
          }
        : {}),
    }),
  attachment: (a: AttachmentObject) =>
    trimmedObject(a, {
      spec: { elasticIP: a.spec?.elasticIP, networkInterface: a.spec?.networkInterface },
      ...(a.status ? { status: { phase: a.status.phase, nodeName: a.status.nodeName } } : {}),
    }),
  /** With the owner reference to its Pod (H1: which Pod instance the NIC is). */
  networkInterface: (nic: NetworkInterfaceObject) => {
    const { podName, interface: name, nodeName, address, elasticIP } = nic.spec ?? {};
    const owners = (nic.metadata?.ownerReferences ?? []).filter((o) => o.kind === 'Pod' && o.controller);
    return trimmedObject(nic, {
      metadata: {
        ownerReferences: owners.map(({ apiVersion, kind, name, uid, controller }) => ({
          apiVersion,
          kind,
          name,
          uid,
          controller,
        })),
      },
      spec: { podName, interface: name, nodeName, address, elasticIP },
      ...(nic.status ? { status: { phase: nic.status.phase } } : {}),
    });
  },
  node: (node: NodeObject) =>
    trimmedObject(node, {
      spec: { podCIDR: node.spec?.podCIDR, podCIDRs: node.spec?.podCIDRs },
      status: { addresses: (node.status?.addresses ?? []).map(({ type, address }) => ({ type, address })) },
    }),
  serviceCIDR: (cidr: ServiceCIDRObject) => trimmedObject(cidr, { spec: { cidrs: cidr.spec?.cidrs } }),
  /** With the one label L5 reads (managed-by). */
  endpointSlice: (slice: EndpointSliceObject) => {
    const managedBy = slice.metadata?.labels?.[MANAGED_BY_LABEL];
    return trimmedObject(slice, {
      ...(managedBy !== undefined ? { metadata: { labels: { [MANAGED_BY_LABEL]: managedBy } } } : {}),
      addressType: slice.addressType,
      endpoints: (slice.endpoints ?? []).map((e) => ({ addresses: e.addresses })),
    });
  },
  pod: (pod: PodObject) =>
    trimmedObject(pod, {
      spec: { nodeName: pod.spec?.nodeName, hostNetwork: pod.spec?.hostNetwork },
      ...(pod.status
        ? {
            status: {
              phase: pod.status.phase,
              podIP: pod.status.podIP,
              podIPs: (pod.status.podIPs ?? []).map(({ ip }) => ({ ip })),
            },
          }
        : {}),
    }),
  /** The same, with its labels: the NATGateways' podSelectors read them (ngw/inputs.ts). */
  labelledPod: (pod: PodObject & { metadata?: { labels?: Record<string, string> } }) => {
    const labels = pod.metadata?.labels;
    const view = agentViews.pod(pod);
    return labels ? { ...view, metadata: { ...view.metadata, labels } } : view;
  },
  /** What ngw/inputs.ts reads of a NATGateway: its age, podSelector and served state. */
  natGateway: (g: NATGatewayObject) =>
    trimmedObject(g, {
      spec: { externalNetwork: g.spec?.externalNetwork ?? '', podSelector: g.spec?.podSelector ?? {} },
      ...(g.status
        ? { status: { phase: g.status.phase, address: g.status.address, nodeName: g.status.nodeName } }
        : {}),
    }),
};
