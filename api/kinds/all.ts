import { customResourceDefinition, type AnyKind } from '../kind';
import { addressPoolKind } from './address-pool';
import { allocationClaimKind } from './allocation-claim';
import { allocationPoolKind } from './allocation-pool';
import { arpAdvertisementKind } from './arp-advertisement';
import { bgpAdvertisementKind } from './bgp-advertisement';
import { bgpNodeStateKind } from './bgp-node-state';
import { bgpPeerKind } from './bgp-peer';
import { elasticIPKind } from './elastic-ip';
import { elasticIPAttachmentKind } from './elastic-ip-attachment';
import { externalNetworkKind } from './external-network';
import { natGatewayKind } from './nat-gateway';
import { networkInterfaceKind } from './network-interface';
import { serviceLoadBalancerKind } from './service-load-balancer';

/**
 * Every Juneau kind, in the order their CRDs are written, each typed with its own name
 * (runtime/kube/resources.ts derives the resource table from it).
 */
export const JUNEAU_KINDS = [
  addressPoolKind,
  externalNetworkKind,
  elasticIPKind,
  elasticIPAttachmentKind,
  networkInterfaceKind,
  serviceLoadBalancerKind,
  arpAdvertisementKind,
  allocationPoolKind,
  allocationClaimKind,
  bgpPeerKind,
  bgpAdvertisementKind,
  bgpNodeStateKind,
  natGatewayKind,
] as const;

/** The same list, each kind's name typed as a plain string (for sets of names and lookups by any name). */
export const ALL_KINDS: readonly AnyKind[] = JUNEAU_KINDS;

/** The CustomResourceDefinitions of all kinds. */
export const allCustomResourceDefinitions = (): Record<string, unknown>[] => ALL_KINDS.map(customResourceDefinition);
