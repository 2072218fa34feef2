/**
 * The ARPAdvertisement an owner (a ServiceLoadBalancer, SLB-6, or an ElasticIP, EIP-17) should
 * have, as its plan decides it, and what to do to get there from the one that exists.
 */

/** An owner's ARPAdvertisement, named by ./names.ts (NAME-1). */
export interface AdvertisementSpec {
  readonly name: string;
  readonly externalNetwork: string;
  readonly address: string;
  readonly nodeName: string;
}

/** Reasons of the Events every owner of an ARPAdvertisement records. */
export const ADVERTISEMENT_REASONS = {
  /** SLB-7, EIP-17: the node answering for the address moved. */
  announcingNodeChanged: 'AnnouncingNodeChanged',
} as const;

/**
 * What to do about the ARPAdvertisement: ARP-3 makes address and network immutable, so a new VIP
 * means delete and create; so does an object under another name than today's (one written before
 * NAME-1: delete it, then create the new one, so no two objects advertise the address at once).
 */
export type AdvertisementAction =
  | { readonly action: 'none' }
  | { readonly action: 'create'; readonly desired: AdvertisementSpec }
  | { readonly action: 'move'; readonly desired: AdvertisementSpec; readonly from: string }
  | { readonly action: 'delete'; readonly name: string }
  | { readonly action: 'recreate'; readonly desired: AdvertisementSpec };

export function advertisementAction(
  current: AdvertisementSpec | undefined,
  desired: AdvertisementSpec | undefined,
): AdvertisementAction {
  if (!desired) return current ? { action: 'delete', name: current.name } : { action: 'none' };
  if (!current) return { action: 'create', desired };
  if (
    current.name !== desired.name ||
    current.address !== desired.address ||
    current.externalNetwork !== desired.externalNetwork
  )
    return { action: 'recreate', desired };
  if (current.nodeName !== desired.nodeName) return { action: 'move', desired, from: current.nodeName };
  return { action: 'none' };
}
