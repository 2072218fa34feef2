/** The owner marks of ARPAdvertisements, and the claim writes. */
import { GROUP, type AllocationClaim } from '../../api';
import { JuneauResources } from '../kube/resources';
import { isAlreadyExists, isConflict, isNotFound, type RestClient } from '../kube/rest';
import type { ClaimStore } from './allocator/allocator';

// OWNER_LABELS lives in api/constants.ts: the agent reads the owner kind too (SEC-11).
export { OWNER_LABELS } from '../../api/constants';

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
