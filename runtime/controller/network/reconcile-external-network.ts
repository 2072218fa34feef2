/**
 * ExternalNetwork status (EN-3, EN-7). Key: the network's name. The VNI is taken from the
 * `subnet-vni` AllocationPool by claim creation; the claim is owned by the (cluster-scoped)
 * network, so the garbage collector releases it when the network is gone.
 */
import { API_VERSION, type ExternalNetwork } from '../../../api';
import { objectKey, type Stored } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import type { AllocationResult } from '../allocator/allocator';
import { claimRecordOf, SUBNET_VNI_REF } from '../allocator/claims';
import { poolViews, type ControllerContext } from '../context';
import { watch, type ReconcilerSpec } from '../reconciler';
import { writeStatusIfChanged } from '../shell';
import { planNetworkStatus } from './plan';
import { JuneauResources } from '../../kube/resources';

type Network = Stored<ExternalNetwork>;

export async function reconcileExternalNetwork(ctx: ControllerContext, name: string): Promise<ReconcileResult> {
  const network = ctx.caches.externalNetworks.get(undefined, name);
  if (!network || network.metadata.deletionTimestamp) return done();
  const networkID = await ensureNetworkID(ctx, network);
  const advertisements = ctx.caches.bgpAdvertisements
    .list()
    .filter((a) => a.spec.externalNetworks.includes(name))
    .map(objectKey);
  const status = planNetworkStatus({ network, pools: poolViews(ctx.caches), networkID, advertisements });
  await writeStatusIfChanged(ctx, JuneauResources.externalNetworks, network, status);
  return done();
}

/** EN-7: the recorded value is claimed again if its claim is gone, never replaced; otherwise one is taken. */
async function ensureNetworkID(ctx: ControllerContext, network: Network): Promise<AllocationResult | undefined> {
  if (!ctx.index.hasPool(SUBNET_VNI_REF)) return undefined;
  const { name = '', uid = '' } = network.metadata;
  const holder = { apiVersion: API_VERSION, kind: 'ExternalNetwork', name, uid };
  const owner = { apiVersion: API_VERSION, kind: 'ExternalNetwork', name, uid };
  const current = network.status?.networkID || undefined;
  return ctx.allocator.ensureValue(holder, SUBNET_VNI_REF, { current, owner });
}

/** The ExternalNetwork reconciler as the controller registers it. */
export function externalNetworkReconciler(ctx: ControllerContext): ReconcilerSpec {
  const c = ctx.caches;
  return {
    name: 'externalnetwork',
    reconcile: (key) => reconcileExternalNetwork(ctx, key),
    workers: 1,
    objects: c.externalNetworks,
    watches: [
      watch(c.addressPools, (p) =>
        c.externalNetworks
          .list()
          .filter((n) => n.spec.addressPools.includes(objectKey(p)))
          .map(objectKey),
      ),
      // EN-7: subnet-vni appeared or changed: the networks still waiting for an ID try again.
      watch(c.allocationPools, (p) =>
        objectKey(p) === SUBNET_VNI_REF.name
          ? c.externalNetworks
              .list()
              .filter((n) => !n.status?.networkID)
              .map(objectKey)
          : [],
      ),
      // BGP-2: whether a BGPAdvertisement lists the network.
      watch(c.bgpAdvertisements, (a) => a.spec.externalNetworks),
      watch(c.allocationClaims, (claim) => {
        const h = claimRecordOf(claim)?.holder;
        return [h?.kind === 'ExternalNetwork' ? h.name : undefined];
      }),
    ],
  };
}
