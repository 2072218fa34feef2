/**
 * NetworkInterface status (NIC-1, EIP-10, EIP-13) and ElasticIPAttachment status (EIPA-1/2).
 * Keys: `<namespace>/<name>` of the NIC or the attachment. Both read the ElasticIP's written
 * status and the usage decided from the caches (./caches usageOf), and write status only when it
 * changed.
 */
import { splitKey } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import { applyStatusIfChanged } from '../context';
import { EipResources, usageOf, type ElasticIPObject } from './caches';
import { planAttachmentStatus, planNetworkInterfaceStatus, type ElasticIPView } from './dependents';
import type { EipContext } from './reconcile-elastic-ip';

function elasticIPView(ctx: EipContext, namespace: string, name: string | undefined): ElasticIPView | undefined {
  const eip: ElasticIPObject | undefined = name ? ctx.caches.elasticIPs.get(namespace, name) : undefined;
  if (!eip) return undefined;
  return {
    name: eip.metadata.name ?? '',
    deleting: !!eip.metadata.deletionTimestamp,
    status: eip.status,
    usage: usageOf(ctx.caches, eip),
  };
}

export async function reconcileNetworkInterface(ctx: EipContext, key: string): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  const nic = ctx.caches.nics.get(namespace, name);
  if (!nic) return done();
  const status = planNetworkInterfaceStatus({
    name,
    generation: nic.metadata.generation ?? 0,
    elasticIP: nic.spec.elasticIP,
    eip: elasticIPView(ctx, namespace, nic.spec.elasticIP),
    previous: nic.status,
  });
  await applyStatusIfChanged(ctx.base, EipResources.networkInterfaces, { namespace, name }, nic.status, status);
  return done();
}

export async function reconcileElasticIPAttachment(ctx: EipContext, key: string): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  const attachment = ctx.caches.attachments.get(namespace, name);
  if (!attachment) return done();
  const nic = ctx.caches.nics.get(namespace, attachment.spec.networkInterface);
  const status = planAttachmentStatus({
    name,
    generation: attachment.metadata.generation ?? 0,
    elasticIP: attachment.spec.elasticIP,
    networkInterface: attachment.spec.networkInterface,
    nic: nic && { nodeName: nic.spec.nodeName || undefined },
    eip: elasticIPView(ctx, namespace, attachment.spec.elasticIP),
    previous: attachment.status,
  });
  await applyStatusIfChanged(
    ctx.base,
    EipResources.elasticIPAttachments,
    { namespace, name },
    attachment.status,
    status,
  );
  return done();
}
