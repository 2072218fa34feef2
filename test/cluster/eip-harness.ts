// A controller replica for the ElasticIP cluster tests: the shared ControllerContext (caches, the
// allocation index fed from AddressPools and AllocationClaims, the claim-creation allocator,
// events) built here, plus this feature's reconcilers from registerElasticIPControllers. The
// ExternalNetwork reconciler is not run, so a test decides when status.networkID is written (EN-8).
import { API_VERSION, type ARPAdvertisement, type AllocationClaim, type ElasticIP, type ElasticIPAttachment, type NetworkInterface } from '../../api';
import { Allocator } from '../../runtime/controller/allocator/allocator';
import { AllocatorIndex } from '../../runtime/controller/allocator/allocator-index';
import { addressPoolRanges, claimRecordOf } from '../../runtime/controller/allocator/claims';
import type { Caches, ControllerContext } from '../../runtime/controller/context';
import { EipResources } from '../../runtime/controller/eip/caches';
import { registerElasticIPControllers, type ElasticIPControllers } from '../../runtime/controller/eip/register';
import { Informer } from '../../runtime/controller/informer';
import { asKube, JuneauResources, OWNER_LABELS, restClaimStore } from '../../runtime/controller/resources';
import { FieldManagers } from '../../runtime/kube/apply';
import { EventRecorder } from '../../runtime/kube/events';
import { createLogger, silentLogger } from '../../runtime/kube/log';
import { Resources, type ResourceType } from '../../runtime/kube/resources';
import { isNotFound, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { testKubeConfig } from './fixture';

export const rest = new RestClient(testKubeConfig());

export interface Replica {
  readonly ctx: ControllerContext;
  readonly eip: ElasticIPControllers;
  stop(): Promise<void>;
}

/** One in-process controller replica running the ElasticIP reconcilers. */
export async function startReplica(name = 'test'): Promise<Replica> {
  const client = new RestClient(testKubeConfig());
  const logger = process.env.JUNEAU_TEST_LOG ? createLogger({ component: `controller-${name}`, level: 'debug' }) : silentLogger;
  const informer = <T extends KubeObject>(type: ResourceType, labelSelector?: string) => new Informer<T>(client, type, { logger, labelSelector });
  const caches = {
    services: informer(Resources.services),
    endpointSlices: informer(Resources.endpointSlices),
    serviceLoadBalancers: informer(JuneauResources.serviceLoadBalancers),
    arpAdvertisements: informer(JuneauResources.arpAdvertisements, OWNER_LABELS.kind),
    externalNetworks: informer(JuneauResources.externalNetworks),
    addressPools: informer(JuneauResources.addressPools),
    allocationPools: informer(JuneauResources.allocationPools),
    allocationClaims: informer(JuneauResources.allocationClaims),
  } as Caches;
  const index = new AllocatorIndex();
  feedIndex(caches, index);
  const recorder = new EventRecorder(client, { reportingController: 'juneau.loutres.me/controller', reportingInstance: name, flushIntervalMs: 1_000 });
  const ctx: ControllerContext = { rest: client, caches, index, allocator: new Allocator(index, restClaimStore(client, FieldManagers.controller)), recorder, logger, fieldManager: FieldManagers.controller };
  const used = [caches.arpAdvertisements, caches.externalNetworks, caches.addressPools, caches.allocationClaims] as unknown as Array<Informer<KubeObject>>;
  const eip = registerElasticIPControllers(ctx);
  await Promise.all(used.map((c) => c.start()));
  await eip.start();
  return {
    ctx,
    eip,
    async stop() {
      await eip.stop();
      await Promise.all(used.map((c) => c.stop()));
      await recorder.stop();
    },
  };
}

/** As the controller does: pools and claims go into the allocation index as they arrive. */
function feedIndex(caches: Caches, index: AllocatorIndex): void {
  caches.addressPools.on((event, pool) => {
    const ref = { kind: 'AddressPool' as const, name: pool.metadata.name ?? '' };
    if (event === 'delete') index.deletePool(ref);
    else index.setPool(ref, ...addressPoolRanges(ref.name, pool.spec));
  });
  caches.allocationClaims.on((event, claim, old) => {
    if (old && event !== 'delete') index.deleteClaim(old.metadata.name ?? '');
    const record = claimRecordOf(claim);
    if (event === 'delete') index.deleteClaim(claim.metadata.name ?? '');
    else if (record) index.upsertClaim(record);
  });
}

// ---------------------------------------------------------------------------------------------
// reads and writes the tests use

export async function getAs<T>(type: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
  try {
    return (await rest.get<KubeObject>(type, namespace, name)) as unknown as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export const getEip = (ns: string, name: string) => getAs<ElasticIP>(EipResources.elasticIPs, ns, name);
export const getNic = (ns: string, name: string) => getAs<NetworkInterface>(EipResources.networkInterfaces, ns, name);
export const getAttachment = (ns: string, name: string) => getAs<ElasticIPAttachment>(EipResources.elasticIPAttachments, ns, name);
export const getAd = (name: string) => getAs<ARPAdvertisement>(JuneauResources.arpAdvertisements, undefined, name);
export const getClaim = (name: string) => getAs<AllocationClaim>(JuneauResources.allocationClaims, undefined, name);
export const condition = (o: { status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string; observedGeneration?: number }> } } | undefined, type: string) =>
  o?.status?.conditions?.find((c) => c.type === type);

export async function createPool(name: string, addresses: string[], advertiseMode: 'arp' | 'bgp' = 'arp'): Promise<void> {
  await rest.create(JuneauResources.addressPools, asKube({ apiVersion: API_VERSION, kind: 'AddressPool', metadata: { name }, spec: { advertiseMode, addresses } }));
}

export async function createNetwork(name: string, pools: string[], opts: { networkID?: number; type?: 'arp' | 'bgp' } = {}): Promise<void> {
  await rest.create(JuneauResources.externalNetworks, asKube({ apiVersion: API_VERSION, kind: 'ExternalNetwork', metadata: { name }, spec: { type: opts.type ?? 'arp', addressPools: pools } }));
  if (opts.networkID) await setNetworkID(name, opts.networkID);
}

/** Stands in for the ExternalNetwork reconciler (EN-7), which these tests do not run. */
export async function setNetworkID(name: string, networkID: number): Promise<void> {
  await rest.patch(JuneauResources.externalNetworks, undefined, name, 'merge', { status: { networkID } }, { subresource: 'status' });
}

export async function createEip(ns: string, name: string, externalNetwork: string, requestedIP?: string): Promise<void> {
  await rest.create(EipResources.elasticIPs, asKube({ apiVersion: API_VERSION, kind: 'ElasticIP', metadata: { name, namespace: ns }, spec: { externalNetwork, ...(requestedIP ? { requestedIP } : {}) } }));
}

export async function createAttachment(ns: string, name: string, elasticIP: string, networkInterface: string): Promise<void> {
  await rest.create(EipResources.elasticIPAttachments, asKube({ apiVersion: API_VERSION, kind: 'ElasticIPAttachment', metadata: { name, namespace: ns }, spec: { elasticIP, networkInterface } }));
}

export async function deleteObject(type: ResourceType, ns: string | undefined, name: string, body?: unknown): Promise<void> {
  await rest.delete(type, ns, name, body).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}

export async function listEvents(ns: string): Promise<Array<{ type?: string; reason?: string; note?: string; regarding?: { kind?: string; name?: string } }>> {
  const list = await rest.list<KubeObject & { type?: string; reason?: string; note?: string; regarding?: { kind?: string; name?: string } }>(Resources.events, { namespace: ns });
  return list.items;
}

/** A Pod bound to `nodeName` with Juneau annotations; its status is set like a kubelet would (podIP). */
export async function createPod(ns: string, name: string, o: { nodeName?: string; annotations?: Record<string, string>; podIP?: string }): Promise<void> {
  await rest.create(Resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, annotations: o.annotations },
    spec: { ...(o.nodeName ? { nodeName: o.nodeName } : {}), containers: [{ name: 'main', image: 'registry.invalid/none' }] },
  } as KubeObject);
  if (o.podIP) await rest.patch(Resources.pods, ns, name, 'merge', { status: { phase: 'Running', podIP: o.podIP, podIPs: [{ ip: o.podIP }] } }, { subresource: 'status' });
}

/** A graceful delete: without a kubelet the Pod stays Terminating (deletionTimestamp set). */
export async function terminatePod(ns: string, name: string): Promise<void> {
  await rest.delete(Resources.pods, ns, name, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 30 });
}
