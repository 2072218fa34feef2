/** AddressPool status (AP-2, AP-3). Key: the pool's name. */
import { done, type ReconcileResult } from '../../kube/workqueue';
import { applyStatusIfChanged, poolViews, type ControllerContext } from '../context';
import { planPoolStatus } from './plan';
import { JuneauResources } from '../resources';

export async function reconcileAddressPool(ctx: ControllerContext, name: string): Promise<ReconcileResult> {
  const pool = ctx.caches.addressPools.get(undefined, name);
  if (!pool || pool.metadata.deletionTimestamp) return done();
  const views = poolViews(ctx.caches);
  const networks = ctx.caches.externalNetworks
    .list()
    .filter((n) => n.spec.addressPools.includes(name))
    .map((n) => n.metadata.name ?? '')
    .sort();
  const status = planPoolStatus({
    pool: { ...views.get(name)!, generation: pool.metadata.generation, conditions: pool.status?.conditions },
    others: [...views.values()].filter((p) => p.name !== name),
    usage: ctx.index.usage({ kind: 'AddressPool', name }),
    networks,
  });
  await applyStatusIfChanged(ctx, JuneauResources.addressPools, { name }, pool.status, status);
  return done();
}
