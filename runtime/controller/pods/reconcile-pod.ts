/**
 * Pod → NetworkInterfaces (NIC-1, EN-8). Key: `<namespace>/<pod>`. Reads the Pod's annotations
 * (api/validation/pod-networks.ts), plans with ./plan, and writes: deletes NICs of an earlier Pod of the same
 * name, creates the missing ones (owned by the Pod, so the garbage collector removes them after
 * it), patches node and address in once known. A malformed annotation or a direct NIC whose
 * network has no ID yet gets an Event on the Pod and no NetworkInterface — never a crash; so does
 * a hostNetwork Pod or one whose IP is a Node's (H2).
 */
import type { NetworkInterface } from '../../../api';
import { referenceTo } from '../../kube/events';
import { JuneauResources, Resources } from '../../kube/resources';
import { isAlreadyExists, isNotFound } from '../../kube/rest';
import { objectKey, splitKey, type Stored } from '../../kube/types';
import { done, type ReconcileResult } from '../../kube/workqueue';
import {
  CACHE_INDEX,
  clusterRangesOf,
  elasticIPWatches,
  refKey,
  type ControllerContext,
  type PodObject,
} from '../context';
import { clusterOwnerOf, parseIPv4 } from '../../../api/validation';
import { watch, type ReconcilerSpec } from '../reconciler';
import { recordPlanEvents } from '../shell';
import { parsePodNetworks } from '../../../api/validation/pod-networks';
import { directReadiness, planPodInterfaces, type ExistingNic, type PodPlan } from './plan';

const NIC = JuneauResources.networkInterfaces;

export async function reconcilePod(ctx: ControllerContext, key: string): Promise<ReconcileResult> {
  const { namespace = '', name } = splitKey(key);
  const pod = ctx.caches.pods.get(namespace, name);
  if (!pod || pod.metadata.deletionTimestamp) return done();
  const parsed = parsePodNetworks(pod.metadata.annotations);
  if (!parsed.ok) {
    ctx.recorder?.warning(
      referenceTo(pod, Resources.pods),
      parsed.reason,
      'CreateNetworkInterface',
      `${parsed.message}; no NetworkInterface is created until it is fixed`,
    );
    return done(); // the Pod's next change brings it back: retrying the same annotation cannot help
  }
  if (parsed.interfaces.length === 0) return done();
  const plan = planPodInterfaces({
    pod,
    interfaces: parsed.interfaces,
    existing: (nicName) => existingNic(ctx.caches.networkInterfaces.get(namespace, nicName)),
    directReadiness: (elasticIP) => readinessOf(ctx, namespace, elasticIP),
    nodeAddressOwner: (address) => {
      const value = parseIPv4(address);
      const hit = value === undefined ? undefined : clusterOwnerOf(clusterRangesOf(ctx.caches), value);
      return hit?.nodeAddress ? hit.owner : undefined;
    },
  });
  await applyPlan(ctx, pod, plan);
  return done();
}

function existingNic(nic: Stored<NetworkInterface> | undefined): ExistingNic | undefined {
  if (!nic) return undefined;
  const owner = nic.metadata.ownerReferences?.find((o) => o.kind === 'Pod' && o.apiVersion === 'v1');
  return {
    name: nic.metadata.name,
    podUid: owner?.uid,
    elasticIP: nic.spec.elasticIP,
    nodeName: nic.spec.nodeName || undefined,
    address: nic.spec.address || undefined,
  };
}

/** EN-8: the ElasticIP, its network and the network's ID, from the caches. */
function readinessOf(ctx: ControllerContext, namespace: string, elasticIP: string) {
  const eip = ctx.caches.elasticIPs.get(namespace, elasticIP);
  const network = eip ? ctx.caches.externalNetworks.get(undefined, eip.spec.externalNetwork) : undefined;
  return directReadiness(
    elasticIP,
    eip && { externalNetwork: eip.spec.externalNetwork },
    network && { networkID: network.status?.networkID },
  );
}

async function applyPlan(ctx: ControllerContext, pod: PodObject, plan: PodPlan): Promise<void> {
  const { rest, fieldManager } = ctx;
  const namespace = pod.metadata.namespace;
  for (const name of plan.deleteStale) {
    await rest.delete(NIC, namespace, name).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
  for (const nic of plan.create) {
    try {
      await rest.create(NIC, nic, { fieldManager });
    } catch (err) {
      // The cache was behind; the next pass (triggered by the NIC's add) compares with it.
      if (!isAlreadyExists(err)) throw err;
    }
  }
  for (const u of plan.update) await rest.patch(NIC, namespace, u.name, 'merge', { spec: u.spec }, { fieldManager });
  recordPlanEvents(ctx, pod, Resources.pods, plan.events, 'CreateNetworkInterface');
  // A stale NIC's deletion shows up as a NIC event, which brings this Pod back to create its own.
}

/** The Pod reconciler as the controller registers it. */
export function podReconciler(ctx: ControllerContext): ReconcilerSpec {
  const c = ctx.caches;
  return {
    name: 'pod',
    reconcile: (key) => reconcilePod(ctx, key),
    workers: 2,
    objects: c.pods,
    watches: [
      watch(c.networkInterfaces, (n) => [refKey(n.metadata.namespace, n.spec.podName)]),
      // EN-8: Pods waiting for the ElasticIP (or its network's ID) to exist.
      ...elasticIPWatches(c, (key) => c.pods.byIndex(CACHE_INDEX.byElasticIP, key).map(objectKey)),
    ],
  };
}
