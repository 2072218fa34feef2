// A ClaimStore over a Map that keeps the API server's rules the allocator relies on: a create is
// refused by name, every created object gets a new uid, and a delete with a uid precondition
// leaves a newer object of that name alone. For unit tests of the allocator (the cluster tests
// run the real API server).
import type { AllocationClaim } from '../../api';
import type { ClaimStore } from '../../runtime/controller/allocator/allocator';

export class MemoryClaimStore implements ClaimStore {
  readonly objects = new Map<string, AllocationClaim>();
  creates = 0;
  private uids = 0;

  /** @param beforeDelete runs as a delete reaches the "server", before it applies (to interleave other writers). */
  constructor(
    private readonly beforeDelete: (name: string, uid: string | undefined) => Promise<void> | void = () => undefined,
  ) {}

  async create(claim: AllocationClaim): Promise<{ created: false } | { created: true; uid: string }> {
    this.creates++;
    await Promise.resolve();
    if (this.objects.has(claim.metadata.name!)) return { created: false };
    const uid = `claim-uid-${++this.uids}`;
    this.objects.set(claim.metadata.name!, { ...claim, metadata: { ...claim.metadata, uid } });
    return { created: true, uid };
  }

  async delete(name: string, uid?: string): Promise<void> {
    await this.beforeDelete(name, uid);
    if (uid === undefined || this.objects.get(name)?.metadata.uid === uid) this.objects.delete(name);
  }
}
