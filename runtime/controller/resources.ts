/** The owner marks of ARPAdvertisements, and the claim writes. */
import { GROUP, type AllocationClaim } from '../../api';
import { JuneauResources } from '../kube/resources';
import { isAlreadyExists, isConflict, isNotFound, type RestClient } from '../kube/rest';
import type { ClaimStore } from './allocator/allocator';

/**
 * Labels on ARPAdvertisements saying which object keeps them, so a change maps back to it
 * (written and read only by ./arp/names.ts). `name` is absent when the name is longer than a label
 * value may be; `id` (a hash of kind/namespace/name) always selects the owner's objects.
 */
export const OWNER_LABELS = {
  kind: `${GROUP}/owner-kind`,
  namespace: `${GROUP}/owner-namespace`,
  name: `${GROUP}/owner-name`,
  id: `${GROUP}/owner-id`,
} as const;

/** Annotation with the whole owner identity `<kind>/<namespace>/<name>`, checked against OWNER_LABELS. */
export const OWNER_ANNOTATION = `${GROUP}/owner`;

/** ClaimStore over the API server: AlreadyExists -> not created; delete is idempotent and uid-guarded. */
export function restClaimStore(rest: RestClient, fieldManager: string): ClaimStore {
  return {
    async create(claim: AllocationClaim) {
      try {
        const created = await rest.create(JuneauResources.allocationClaims, claim, { fieldManager });
        return { created: true, uid: created.metadata.uid };
      } catch (err) {
        if (isAlreadyExists(err)) return { created: false };
        throw err;
      }
    },
    async delete(name: string, uid?: string) {
      const body = uid ? { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } } : undefined;
      try {
        await rest.delete(JuneauResources.allocationClaims, undefined, name, body);
      } catch (err) {
        // NotFound: already released. 409 on a uid precondition: a newer claim of that name is someone else's.
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    },
  };
}
