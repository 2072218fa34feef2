// kubectl on ServiceLoadBalancers as a given identity, and a ServiceLoadBalancer webhook with live
// caches, for the SLB-1 admission tests (webhook-slb, slb-orphan-delete, webhook-informer-caches).
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import { createNamespace, deleteNamespace, kubectl, testRest } from './fixture';
import type { KubectlResult } from './kubectl';
import { startTestWebhook, type TestWebhook } from './webhook-fixture';

/** What kubectl prints when the SLB-1 webhook refuses a write. */
export const SLB_DENIED = 'admission webhook "serviceloadbalancers.juneau.loutres.me" denied the request';

/** A test webhook `id` that trusts only `writers` with ServiceLoadBalancers, and a namespace for the file. */
export async function startSlbWebhook(
  id: string,
  writers: readonly string[],
): Promise<{ webhook: TestWebhook; namespace: string }> {
  const webhook = await startTestWebhook(id, {
    caches: { ...liveWebhookCaches(testRest()), serviceLoadBalancerWriters: () => [...writers] },
  });
  return { webhook, namespace: await createNamespace(id) };
}

/** Undoes startSlbWebhook; the finalizer of `web` goes first (no controller runs to remove it). */
export async function stopSlbWebhook(webhook: TestWebhook | undefined, namespace: string | undefined): Promise<void> {
  if (namespace) {
    await patchSlb(namespace, 'web', { metadata: { finalizers: null } });
    await deleteNamespace(namespace);
  }
  await webhook?.stop();
}

export interface SlbPatchOptions {
  /** kubectl flags of the identity, e.g. `['--as=alice', '--as-group=system:masters']`. */
  readonly as?: readonly string[];
  /** Patch the status subresource. */
  readonly status?: boolean;
  /** @default 'merge' */
  readonly type?: 'merge' | 'json';
}

/** `kubectl patch serviceloadbalancer <name>`; a refusal is returned (check `code`), not thrown. */
export function patchSlb(
  namespace: string,
  name: string,
  patch: unknown,
  o: SlbPatchOptions = {},
): Promise<KubectlResult> {
  const args = [...(o.as ?? []), '-n', namespace, 'patch', 'serviceloadbalancer', name];
  if (o.status) args.push('--subresource=status');
  args.push(`--type=${o.type ?? 'merge'}`, '-p', JSON.stringify(patch));
  return kubectl(args, { allowFailure: true });
}

/** `kubectl get serviceloadbalancer <name> -o jsonpath={<field>}`. */
export async function slbField(namespace: string, name: string, field: string): Promise<string> {
  return (await kubectl(['-n', namespace, 'get', 'serviceloadbalancer', name, '-o', `jsonpath={${field}}`])).stdout;
}
