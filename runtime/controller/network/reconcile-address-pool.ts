/** AddressPool status (AP-2, AP-3). Key: the pool's name. */
import { done, type ReconcileResult } from '../../kube/workqueue';
import { claimRecordOf } from '../allocator/claims';
import { poolViews, type ControllerContext } from '../context';
import { watch, type ReconcilerSpec } from '../reconciler';
import { writeStatusIfChanged } from '../shell';
import { planPoolStatus } from './plan';
import { JuneauResources } from '../../kube/resources';

export async function reconcileAddressPool(ctx: ControllerContext, name: string): Promise<ReconcileResult> {
  const pool = ctx.caches.addressPools.get(undefined, name);
  if (!pool || pool.metadata.deletionTimestamp) return done();
  const views = poolViews(ctx.caches);
  const networks = ctx.caches.externalNetworks
    .list()
    .filter((n) => n.spec.addressPools.includes(name))
    .map((n) => n.metadata.name)
    .sort();
  const status = planPoolStatus({
    pool: { ...views.get(name)!, generation: pool.metadata.generation, conditions: pool.status?.conditions },
    others: [...views.values()].filter((p) => p.name !== name),
    usage: ctx.index.usage({ kind: 'AddressPool', name }),
    networks,
  });
  await writeStatusIfChanged(ctx, JuneauResources.addressPools, pool, status);
  return done();
}

/** The AddressPool reconciler as the controller registers it. */
export function addressPoolReconciler(ctx: ControllerContext): ReconcilerSpec {
  const c = ctx.caches;
  return {
    name: 'addresspool',
    reconcile: (key) => reconcileAddressPool(ctx, key),
    workers: 1,
    objects: c.addressPools,
    watches: [
      watch(c.externalNetworks, (n) => n.spec.addressPools),
      // Pool status is batched: a burst of claims is one status write a second.
      watch(
        c.allocationClaims,
        (claim) => {
          const pool = claimRecordOf(claim)?.pool;
          return [pool?.kind === 'AddressPool' ? pool.name : undefined];
        },
        1000,
      ),
    ],
  };
}
