/**
 * The ARPAdvertisement an owner (a ServiceLoadBalancer, SLB-6, or an ElasticIP, EIP-17) should
 * have, as its plan decides it, and what to do to get there from the one that exists.
 */

/** An owner's ARPAdvertisement; ./owned.ts writes it under the name NAME-1 chooses (./names.ts). */
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
 * means delete and create (never two objects advertising two addresses for one owner); so does an
 * object under the owner's other name that advertises another address. One that advertises the
 * same address is moved to the chosen name before this runs (./owned.ts: copy first, NAME-1).
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
