/**
 * ARP-4 / ALLOC-1 from the writer's side: an address's ARPAdvertisement exists only while its
 * owner holds the address's AllocationClaim (`ipv4.<address>`). The webhook refuses a second
 * ARPAdvertisement for an address, but two creates can race past it, and nothing stops a writer
 * that no longer holds the claim; so the controller keeps the rule itself, with live reads (the
 * caches of two replicas can disagree for a moment):
 *
 * - write (create, recreate, move): the claim is read from the API server and must be held by
 *   the owner, not being deleted; a create reads it again afterwards and withdraws its object if
 *   the claim went meanwhile (a release racing the create); a move carries a JSON-patch `test` of
 *   `spec.address`, so it never re-points an object that now advertises another address;
 * - release: before a claim is deleted, its holder's ARPAdvertisement is read and deleted if it
 *   advertises that address (Allocator `beforeRelease`). So a released address is advertised by
 *   nobody before another holder can take it.
 *
 * What remains is a window of one round trip: a replica whose index still shows a claim another
 * replica is releasing creates, and a third holder claims and advertises the address before the
 * post-create read withdraws it. With leader election only one replica writes; the duplicate
 * detector (./duplicates.ts) makes any survivor visible.
 */
import { addressClaimName, type AllocationClaim } from '../../../api';
import { formatIPv4 } from '../../../api/validation';
import { getOrUndefined, isConflict, isNotFound, type RestClient } from '../../kube/rest';
import type { KubeObject, Stored } from '../../kube/types';
import type { ClaimRecord, Holder } from '../allocator/allocator-index';
import { claimRecordOf, heldBy } from '../allocator/claims';
import { JuneauResources } from '../../kube/resources';
import { advertisementNameOf, advertisementPlaces, isOwnedBy, type AdvertisementOwnerKind } from './names';

export { advertisementNameOf } from './names';

const ARP = JuneauResources.arpAdvertisements;
const CLAIMS = JuneauResources.allocationClaims;

type AdObject = KubeObject & { spec: { externalNetwork: string; address: string; nodeName: string } };

/** Thrown when the owner does not hold the address's claim; the pass is retried. */
export class ClaimNotHeldError extends Error {
  constructor(address: string, holder: Holder, detail: string) {
    super(
      `not advertising ${address} for ${holder.kind} ${holder.namespace ?? ''}/${holder.name}: ${detail} (ARP-4, ALLOC-1)`,
    );
    this.name = 'ClaimNotHeldError';
  }
}

/** Why `holder` does not hold `ipv4.<address>` right now, read live; undefined when it does. */
export async function claimProblem(rest: RestClient, address: string, holder: Holder): Promise<string | undefined> {
  const claim = await getOrUndefined<Stored<AllocationClaim>>(rest, CLAIMS, undefined, addressClaimName(address));
  if (!claim) return `claim ${addressClaimName(address)} does not exist`;
  const record = claimRecordOf(claim);
  if (!record || !heldBy(record, holder))
    return `claim ${addressClaimName(address)} is held by ${claim.spec?.holder?.kind} ${claim.spec?.holder?.namespace ?? ''}/${claim.spec?.holder?.name}`;
  if (claim.metadata.deletionTimestamp) return `claim ${addressClaimName(address)} is being deleted`;
  return undefined;
}

async function requireClaim(rest: RestClient, address: string, holder: Holder): Promise<void> {
  const problem = await claimProblem(rest, address, holder);
  if (problem) throw new ClaimNotHeldError(address, holder, problem);
}

/** Creates the ARPAdvertisement only while the claim is held, and withdraws it if the claim went meanwhile. */
export async function createAdvertisement(
  rest: RestClient,
  body: AdObject,
  holder: Holder,
  fieldManager: string,
): Promise<AdObject> {
  const { address } = body.spec;
  await requireClaim(rest, address, holder);
  const created = await rest.create<AdObject>(ARP, body, { fieldManager });
  const problem = await claimProblem(rest, address, holder);
  if (!problem) return created;
  await deleteAdvertisement(rest, created.metadata?.name ?? '', created.metadata?.uid);
  throw new ClaimNotHeldError(address, holder, `${problem} after the ARPAdvertisement was created; withdrawn`);
}

/**
 * ARP-3: moves only `spec.nodeName`, only while the claim is held and the object still advertises
 * `address`; with `uid`, only the very object the caller found to be its own (NAME-1).
 */
export async function moveAdvertisement(
  rest: RestClient,
  name: string,
  address: string,
  nodeName: string,
  holder: Holder,
  fieldManager: string,
  uid?: string,
): Promise<void> {
  await requireClaim(rest, address, holder);
  const patch = [
    ...(uid ? [{ op: 'test', path: '/metadata/uid', value: uid }] : []),
    { op: 'test', path: '/spec/address', value: address },
    { op: 'replace', path: '/spec/nodeName', value: nodeName },
  ];
  await rest.patch(ARP, undefined, name, 'json', patch, { fieldManager });
}

/**
 * Allocator `beforeRelease`: the holder's ARPAdvertisement stops advertising the claim's address
 * before the claim is deleted, read live (the cache may not show a create of the other replica).
 */
export function withdrawBeforeRelease(rest: RestClient): (claim: ClaimRecord) => Promise<void> {
  return async (claim) => {
    const { kind, namespace = '', name } = claim.holder;
    if (claim.pool.kind !== 'AddressPool' || !advertisementNameOf(claim.holder)) return;
    const owner = { kind: kind as AdvertisementOwnerKind, namespace, name };
    // Every place the owner's object may be (NAME-1; two exist for a moment while one replaces the other).
    for (const adName of advertisementPlaces(owner)) {
      const ad = await getOrUndefined<AdObject>(rest, ARP, undefined, adName);
      if (!ad) continue;
      if (isOwnedBy(ad, owner) && ad.spec.address === formatIPv4(claim.value))
        await deleteAdvertisement(rest, adName, ad.metadata?.uid);
    }
  };
}

/** Deletes by name, guarded by uid; NotFound and a uid mismatch (409: a newer object) are fine. */
export async function deleteAdvertisement(rest: RestClient, name: string, uid: string | undefined): Promise<void> {
  const body = uid ? { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } } : undefined;
  try {
    await rest.delete(ARP, undefined, name, body);
  } catch (err) {
    if (!isNotFound(err) && !isConflict(err)) throw err;
  }
}
