/**
 * One handler per webhook path: read what the rule needs from the caches, then call the pure rule.
 */
import { WEBHOOK_PATHS } from '../../../api';
import { denialMessage, type AdmissionRequest, type Verdict } from './admission';
import { checkARPAdvertisementAdmission } from './rules/arp-advertisement';
import { checkARPAdvertisementWriter } from './rules/arp-advertisement-writers';
import { checkElasticIPAdmission, checkElasticIPAttachmentAdmission, checkPodAdmission } from './rules/elastic-ip';
import { checkNATGatewayAdmission, type NATGatewayObject } from './rules/nat-gateway';
import { checkAddressPoolAdmission, checkExternalNetworkAdmission } from './rules/networks';
import { checkServiceLoadBalancerAdmission } from './rules/service-load-balancer';
import {
  checkBGPAdvertisementAdmission,
  checkBGPPeerAdmission,
  type BGPAdvertisementObject,
  type BGPPeerObject,
} from './rules/bgp';
import type {
  AddressPoolObject,
  ARPAdvertisementObject,
  ElasticIPAttachmentObject,
  ElasticIPObject,
  ExternalNetworkObject,
  PodObject,
  WebhookCaches,
} from './views';
import type { ServiceLoadBalancerObject } from './rules/service-load-balancer';

export type AdmissionHandler = (request: AdmissionRequest, caches: WebhookCaches) => Promise<Verdict>;

// The API server sends the object of the kind the path is registered for; the rules read it defensively.
const as = <T>(request: AdmissionRequest): AdmissionRequest<T> => request as AdmissionRequest<T>;

/**
 * ARP-2/4/5 of an ARPAdvertisement write, read from the caches: the webhook's check, and the
 * controller's own before it creates one (its writes skip the webhook, M1; arp/owned.ts).
 */
export async function checkARPAdvertisementFromCaches(
  request: AdmissionRequest<ARPAdvertisementObject>,
  caches: WebhookCaches,
  replacing?: string,
): Promise<Verdict> {
  return checkARPAdvertisementAdmission(
    request,
    {
      // The index when the caches have one (informers): ARP-4 only compares objects of this address.
      arpAdvertisements: caches.arpAdvertisementsAt
        ? caches.arpAdvertisementsAt(request.object?.spec?.address ?? '')
        : await caches.arpAdvertisements.list(),
      externalNetworks: await caches.externalNetworks.list(),
      addressPools: await caches.addressPools.list(),
      nodes: await caches.nodes.list(),
    },
    replacing,
  );
}

/**
 * What the controller asks before it creates an ARPAdvertisement: why the webhook would refuse it
 * (ARP-2/4/5, the message it would give), or undefined when it would allow it. Its own writes skip
 * the webhook (M1), so the checks run here instead, from the same caches. `replacing`: the owner's
 * object this one replaces under its other name (NAME-1; ARP-4's exception, see the rule).
 */
export function arpAdvertisementAdmitter(
  caches: WebhookCaches,
): (ad: ARPAdvertisementObject, replacing?: string) => Promise<string | undefined> {
  return async (ad, replacing) => {
    if (caches.hasSynced && !caches.hasSynced()) return 'the admission caches have not synced yet';
    const verdict = await checkARPAdvertisementFromCaches(
      { uid: '', operation: 'CREATE', object: ad },
      caches,
      replacing,
    );
    return verdict.allowed ? undefined : denialMessage(verdict.issues);
  };
}

export const admissionHandlers: Readonly<Record<string, AdmissionHandler>> = {
  [WEBHOOK_PATHS.addressPool]: async (request, caches) =>
    checkAddressPoolAdmission(as<AddressPoolObject>(request), {
      addressPools: await caches.addressPools.list(),
      nodes: await caches.nodes.list(),
      serviceCIDRs: (await caches.serviceCIDRs?.list()) ?? [],
    }),

  [WEBHOOK_PATHS.externalNetwork]: async (request, caches) =>
    checkExternalNetworkAdmission(as<ExternalNetworkObject>(request), {
      externalNetworks: await caches.externalNetworks.list(),
      addressPools: await caches.addressPools.list(),
    }),

  [WEBHOOK_PATHS.arpAdvertisement]: async (request, caches) => {
    // ARP-11 first: a write by anyone but the controller is refused before any list is read.
    const writer = checkARPAdvertisementWriter(
      as<ARPAdvertisementObject>(request),
      caches.arpAdvertisementWriters?.() ?? [],
    );
    if (!writer.allowed) return writer;
    return checkARPAdvertisementFromCaches(as<ARPAdvertisementObject>(request), caches);
  },

  [WEBHOOK_PATHS.elasticIP]: async (request, caches) =>
    checkElasticIPAdmission(as<ElasticIPObject>(request), {
      externalNetworks: await caches.externalNetworks.list(),
      namespaces: caches.namespaces ? await caches.namespaces.list() : [],
    }),

  [WEBHOOK_PATHS.elasticIPAttachment]: async (request, caches) => {
    const elasticIP = as<ElasticIPAttachmentObject>(request).object?.spec?.elasticIP ?? '';
    return checkElasticIPAttachmentAdmission(as<ElasticIPAttachmentObject>(request), {
      networkInterfaces: await caches.networkInterfaces.list(request.namespace),
      elasticIPAttachments: await caches.elasticIPAttachments.list(request.namespace),
      // L9: the index when the caches have one (the Pod informer): no LIST of the namespace's Pods.
      pods: caches.podsNamingElasticIP
        ? caches.podsNamingElasticIP(request.namespace ?? '', elasticIP)
        : await caches.pods.list(request.namespace),
    });
  },

  [WEBHOOK_PATHS.pod]: async (request, caches) =>
    checkPodAdmission(as<PodObject>(request), {
      elasticIPAttachments: await caches.elasticIPAttachments.list(request.namespace),
    }),

  [WEBHOOK_PATHS.bgpPeer]: async (request, caches) =>
    checkBGPPeerAdmission(as<BGPPeerObject>(request), { addressPools: await caches.addressPools.list() }),

  [WEBHOOK_PATHS.bgpAdvertisement]: async (request, caches) =>
    checkBGPAdvertisementAdmission(as<BGPAdvertisementObject>(request), {
      externalNetworks: await caches.externalNetworks.list(),
      bgpPeers: (await caches.bgpPeers?.list()) ?? [],
    }),
  [WEBHOOK_PATHS.natGateway]: async (request, caches) => {
    const requested = as<NATGatewayObject>(request).object?.spec?.requestedIP;
    return checkNATGatewayAdmission(as<NATGatewayObject>(request), {
      externalNetworks: await caches.externalNetworks.list(),
      addressPools: await caches.addressPools.list(),
      namespaces: caches.namespaces ? await caches.namespaces.list() : [],
      // NGW-2: only the objects advertising the requested address, by index when the caches have one.
      arpAdvertisements:
        requested === undefined
          ? []
          : caches.arpAdvertisementsAt
            ? caches.arpAdvertisementsAt(requested)
            : await caches.arpAdvertisements.list(),
    });
  },

  [WEBHOOK_PATHS.serviceLoadBalancer]: async (request, caches) =>
    checkServiceLoadBalancerAdmission(
      as<ServiceLoadBalancerObject>(request),
      caches.serviceLoadBalancerWriters?.() ?? [],
    ),
};
