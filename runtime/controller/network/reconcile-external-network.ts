/**
 * ExternalNetwork status (EN-3, EN-7). Key: the network's name. The VNI is taken from the
 * `subnet-vni` AllocationPool by claim creation; the claim is owned by the (cluster-scoped)
 * network, so the garbage collector releases it when the network is gone.
 */
import { API_VERSION, type ExternalNetwork } from '../../../api';
import type { KubeObject } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import type { AllocationResult } from '../allocator/allocator';
import { SUBNET_VNI_REF } from '../allocator/claims';
import { applyStatusIfChanged, poolViews, type ControllerContext } from '../context';
import { planNetworkStatus } from './plan';
import { JuneauResources } from '../resources';

type Network = ExternalNetwork & KubeObject;

export async function reconcileExternalNetwork(ctx: ControllerContext, name: string): Promise<ReconcileResult> {
  const network = ctx.caches.externalNetworks.get(undefined, name);
  if (!network || network.metadata.deletionTimestamp) return done();
  const networkID = await ensureNetworkID(ctx, network);
  const status = planNetworkStatus({ network, pools: poolViews(ctx.caches), networkID });
  await applyStatusIfChanged(ctx, JuneauResources.externalNetworks, { name }, network.status, status);
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
