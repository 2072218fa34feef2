/**
 * ALLOC-2 for ElasticIPs: how the claim sweep (../allocator/claim-sweep.ts) sees an
 * ElasticIP holder. EIP-15 still holds for a holder that is gone: its address may be in use by a
 * NetworkInterface that named the ElasticIP before it went (a NIC records the ElasticIP's name,
 * not its uid), so the claim waits while such a NIC exists — any NIC naming it when no object of
 * that name exists, or one created no later than the current object of that name (creation
 * times have one-second resolution, so a tie counts as older).
 */
import type { ClaimRecord } from '../allocator/allocator-index';
import type { SweptHolderKind } from '../allocator/claim-sweep';
import { CACHE_INDEX, type Caches } from '../context';
import { JuneauResources } from '../../kube/resources';

export function elasticIPHolderKind(caches: Caches): SweptHolderKind {
  const read = [caches.elasticIPs, caches.elasticIPAttachments, caches.networkInterfaces, caches.pods];
  return {
    type: JuneauResources.elasticIPs,
    // An empty cache would show every holder gone and no NIC using anything.
    synced: () => read.every((i) => i.hasSynced),
    uidInCache: (namespace, name) => caches.elasticIPs.get(namespace, name)?.metadata.uid,
    stillUsed: (claim: ClaimRecord) => {
      const { namespace, name } = claim.holder;
      const current = caches.elasticIPs.get(namespace, name);
      const since = current?.metadata.creationTimestamp
        ? Date.parse(String(current.metadata.creationTimestamp))
        : undefined;
      return caches.networkInterfaces.byIndex(CACHE_INDEX.byElasticIP, `${namespace}/${name}`).some((n) => {
        if (since === undefined) return true;
        const created = n.metadata.creationTimestamp ? Date.parse(String(n.metadata.creationTimestamp)) : undefined;
        return created === undefined || created <= since;
      });
    },
  };
}
