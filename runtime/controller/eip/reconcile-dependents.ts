/**
 * NetworkInterface status (NIC-1, EIP-10, EIP-13) and ElasticIPAttachment status (EIPA-1/2).
 * Keys: `<namespace>/<name>` of the NIC or the attachment. Both read the ElasticIP's written
 * status and the usage decided from the caches (./views usageOf), and write status only when it
 * changed. Both follow every change of the ElasticIP they name (../context.ts elasticIPWatches).
 */
import { objectKey, splitKey } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import { CACHE_INDEX, elasticIPWatches, type ControllerContext } from '../context';
import { watch, type ReconcilerSpec } from '../reconciler';
import { JuneauResources } from '../../kube/resources';
import { writeStatusIfChanged } from '../shell';
import { planAttachmentStatus, planNetworkInterfaceStatus, type ElasticIPView } from './dependents';
import { attachmentWithheld, nicPodProblem, usageOf } from './views';

function elasticIPView(ctx: ControllerContext, namespace: string, name: string | undefined): ElasticIPView | undefined {
  const eip = name ? ctx.caches.elasticIPs.get(namespace, name) : undefined;
  if (!eip) return undefined;
  return {
    name: eip.metadata.name,
    deleting: !!eip.metadata.deletionTimestamp,
    status: eip.status,
    usage: usageOf(ctx.caches, eip),
  };
}

export async function reconcileNetworkInterface(ctx: ControllerContext, key: string): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  const nic = ctx.caches.networkInterfaces.get(namespace, name);
  if (!nic) return done();
  const problem = nic.spec.elasticIP ? nicPodProblem(nic, ctx.caches.pods) : undefined;
  const status = planNetworkInterfaceStatus({
    name,
    generation: nic.metadata.generation ?? 0,
    elasticIP: nic.spec.elasticIP,
    eip: elasticIPView(ctx, namespace, nic.spec.elasticIP),
    ...(problem?.state === 'stopped' ? { podStopped: problem } : {}),
    previous: nic.status,
  });
  await writeStatusIfChanged(ctx, JuneauResources.networkInterfaces, nic, status);
  return done();
}

export async function reconcileElasticIPAttachment(ctx: ControllerContext, key: string): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  const attachment = ctx.caches.elasticIPAttachments.get(namespace, name);
  if (!attachment) return done();
  const nic = ctx.caches.networkInterfaces.get(namespace, attachment.spec.networkInterface);
  const status = planAttachmentStatus({
    name,
    generation: attachment.metadata.generation ?? 0,
    elasticIP: attachment.spec.elasticIP,
    networkInterface: attachment.spec.networkInterface,
    nic: nic && { nodeName: nic.spec.nodeName || undefined },
    withheld: attachmentWithheld(ctx.caches, attachment),
    eip: elasticIPView(ctx, namespace, attachment.spec.elasticIP),
    previous: attachment.status,
  });
  await writeStatusIfChanged(ctx, JuneauResources.elasticIPAttachments, attachment, status);
  return done();
}

/** The NetworkInterface status reconciler as the controller registers it. */
export function networkInterfaceReconciler(ctx: ControllerContext): ReconcilerSpec {
  const c = ctx.caches;
  return {
    name: 'networkinterface',
    reconcile: (key) => reconcileNetworkInterface(ctx, key),
    workers: 2,
    objects: c.networkInterfaces,
    watches: [
      ...elasticIPWatches(c, (key) => c.networkInterfaces.byIndex(CACHE_INDEX.byElasticIP, key).map(objectKey)),
    ],
  };
}

/** The ElasticIPAttachment status reconciler as the controller registers it. */
export function elasticIPAttachmentReconciler(ctx: ControllerContext): ReconcilerSpec {
  const c = ctx.caches;
  return {
    name: 'elasticipattachment',
    reconcile: (key) => reconcileElasticIPAttachment(ctx, key),
    workers: 2,
    objects: c.elasticIPAttachments,
    watches: [
      watch(c.networkInterfaces, (n) =>
        c.elasticIPAttachments.byIndex(CACHE_INDEX.byNetworkInterface, objectKey(n)).map(objectKey),
      ),
      ...elasticIPWatches(c, (key) => c.elasticIPAttachments.byIndex(CACHE_INDEX.byElasticIP, key).map(objectKey)),
    ],
  };
}
