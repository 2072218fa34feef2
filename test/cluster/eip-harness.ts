// A controller replica for the ElasticIP cluster tests: the controller's own shared context
// (createControllerContext: caches, the allocation index fed from them, the allocator) and the
// registrations of this feature's reconcilers (ElasticIP, ElasticIPAttachment, NetworkInterface,
// Pod). The ExternalNetwork reconciler is not run, so a test decides when status.networkID is
// written (EN-8).
import {
  ANNOTATIONS,
  API_VERSION,
  type ARPAdvertisement,
  type AllocationClaim,
  type ElasticIP,
  type ElasticIPAttachment,
  type NetworkInterface,
} from '../../api';
import { advertisementName } from '../../runtime/controller/arp/names';
import { createControllerContext, type ControllerContext } from '../../runtime/controller/context';
import {
  elasticIPAttachmentReconciler,
  networkInterfaceReconciler,
} from '../../runtime/controller/eip/reconcile-dependents';
import { elasticIPReconciler } from '../../runtime/controller/eip/reconcile-elastic-ip';
import { podReconciler } from '../../runtime/controller/pods/reconcile-pod';
import { Registration, type ReconcilerSpec } from '../../runtime/controller/reconciler';
import { EventRecorder } from '../../runtime/kube/events';
import { waitForCacheSync, type Informer } from '../../runtime/kube/informer';
import { createLogger, silentLogger } from '../../runtime/kube/log';
import { JuneauResources, Resources, type ResourceType } from '../../runtime/kube/resources';
import { isNotFound, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { ensureNode, testKubeConfig, waitForMatch } from './fixture';

export const rest = new RestClient(testKubeConfig());

export interface Replica {
  readonly ctx: ControllerContext;
  readonly registrations: readonly Registration[];
  /** Finished reconcile passes of `reconciler` (`elasticip`, `networkinterface`, ...) for `key` so far. */
  passes(reconciler: string, key: string): number;
  stop(): Promise<void>;
}

/** One in-process controller replica running the ElasticIP reconcilers. */
export async function startReplica(name = 'test'): Promise<Replica> {
  const client = new RestClient(testKubeConfig());
  const logger = process.env.JUNEAU_TEST_LOG
    ? createLogger({ component: `controller-${name}`, level: 'debug' })
    : silentLogger;
  const recorder = new EventRecorder(client, {
    reportingController: 'juneau.loutres.me/controller',
    reportingInstance: name,
    flushIntervalMs: 1_000,
  });
  const ctx = createControllerContext({ rest: client, logger, recorder });
  // Each finished pass is counted by reconciler and key: the sign a "nothing changed" window waits
  // for before it closes (the pass prompted by a touch ran inside it).
  const finished = new Map<string, number>();
  const counted = (spec: ReconcilerSpec): ReconcilerSpec => ({
    ...spec,
    reconcile: async (key) => {
      const result = await spec.reconcile(key);
      finished.set(`${spec.name} ${key}`, (finished.get(`${spec.name} ${key}`) ?? 0) + 1);
      return result;
    },
  });
  const specs = [
    elasticIPReconciler(ctx, 4),
    elasticIPAttachmentReconciler(ctx),
    networkInterfaceReconciler(ctx),
    podReconciler(ctx),
  ].map(counted);
  const registrations = specs.map((spec) => new Registration(spec, { logger }));
  // As the controller does, less the caches of features not run here: all it watches, synced first.
  const used = [...new Set(registrations.flatMap((r) => r.informers))] as Array<Informer<KubeObject>>;
  used.forEach((c) => c.start());
  await waitForCacheSync(used, Infinity);
  registrations.forEach((r) => r.start());
  return {
    ctx,
    registrations,
    passes: (reconciler, key) => finished.get(`${reconciler} ${key}`) ?? 0,
    async stop() {
      await Promise.all(registrations.map((r) => r.stop()));
      await Promise.all(used.map((c) => c.stop()));
      await recorder.stop();
    },
  };
}

export interface EipSetup {
  /** The random part of every name, for the file's other cluster-scoped objects. */
  readonly suffix: string;
  readonly pool: string;
  readonly network: string;
  /** Node objects without a kubelet (ensureNode). */
  readonly nodes: readonly string[];
  /** The replica; it exists from beforeAll on. */
  readonly replica: Replica;
}

/**
 * Jest hooks for an ElasticIP test file: `nodes` Node objects, an AddressPool of `addresses`, an
 * ExternalNetwork on it with status.networkID already written (EN-8), and a replica; all removed
 * after the file. Names carry `prefix` and a random suffix, so files sharing the API server never
 * collide (the address ranges must not overlap: each file passes its own).
 */
export function useEipSetup(
  prefix: string,
  o: { readonly addresses: string[]; readonly networkID: number; readonly nodes?: number },
): EipSetup {
  const suffix = Math.random().toString(36).slice(2, 7);
  const pool = `${prefix}-a-${suffix}`;
  const network = `${prefix}-net-${suffix}`;
  const nodes = Array.from({ length: o.nodes ?? 2 }, (_, i) => `${prefix}-${suffix}-${String.fromCharCode(97 + i)}`);
  let replica: Replica | undefined;
  beforeAll(async () => {
    await Promise.all(nodes.map((n) => ensureNode(n)));
    await createPool(pool, o.addresses);
    await createNetwork(network, [pool], { networkID: o.networkID });
    replica = await startReplica(prefix);
  });
  afterAll(async () => {
    await replica?.stop();
    for (const n of nodes) await deleteObject(Resources.nodes, undefined, n);
    await deleteObject(JuneauResources.externalNetworks, undefined, network);
    await deleteObject(JuneauResources.addressPools, undefined, pool);
  });
  return {
    suffix,
    pool,
    network,
    nodes,
    get replica() {
      if (!replica) throw new Error('useEipSetup(): the replica exists from beforeAll on');
      return replica;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// reads and writes the tests use

export async function getAs<T>(
  type: ResourceType,
  namespace: string | undefined,
  name: string,
): Promise<T | undefined> {
  try {
    return (await rest.get<KubeObject>(type, namespace, name)) as unknown as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export const getEip = (ns: string, name: string) => getAs<ElasticIP>(JuneauResources.elasticIPs, ns, name);
export const getNic = (ns: string, name: string) =>
  getAs<NetworkInterface>(JuneauResources.networkInterfaces, ns, name);
export const getAttachment = (ns: string, name: string) =>
  getAs<ElasticIPAttachment>(JuneauResources.elasticIPAttachments, ns, name);
export const getAd = (name: string) => getAs<ARPAdvertisement>(JuneauResources.arpAdvertisements, undefined, name);
export const getClaim = (name: string) => getAs<AllocationClaim>(JuneauResources.allocationClaims, undefined, name);
/** Waits for the ElasticIP to reach `phase`; returns it as read then. */
export const eipIn = (ns: string, name: string, phase: string) =>
  waitForMatch(
    () => getEip(ns, name),
    (e) => e?.status?.phase === phase,
    `ElasticIP ${name} ${phase}`,
  );
/** Waits for the ElasticIPAttachment to reach `phase`; returns it as read then. */
export const attachmentIn = (ns: string, name: string, phase: string) =>
  waitForMatch(
    () => getAttachment(ns, name),
    (a) => a.status?.phase === phase,
    `ElasticIPAttachment ${name} ${phase}`,
  );
/** The name of the ElasticIP's ARPAdvertisement (NAME-1). */
export const eipAdName = (ns: string, name: string) => advertisementName({ kind: 'ElasticIP', namespace: ns, name });
/** Pod annotations asking for the ElasticIP `eip` directly (the elastic-ip shorthand, NIC-1). */
export const direct = (eip: string) => ({ [ANNOTATIONS.elasticIP]: eip });
/** Pod annotations asking for a NetworkInterface on eth0 and no ElasticIP (NIC-1). */
export const plain = { [ANNOTATIONS.networks]: JSON.stringify([{ interface: 'eth0' }]) };

export const condition = (
  o:
    | {
        status?: {
          conditions?: Array<{
            type: string;
            status: string;
            reason: string;
            message: string;
            observedGeneration?: number;
          }>;
        };
      }
    | undefined,
  type: string,
) => o?.status?.conditions?.find((c) => c.type === type);

export async function createPool(
  name: string,
  addresses: string[],
  advertiseMode: 'arp' | 'bgp' = 'arp',
): Promise<void> {
  await rest.create(JuneauResources.addressPools, {
    apiVersion: API_VERSION,
    kind: 'AddressPool',
    metadata: { name },
    spec: { advertiseMode, addresses },
  });
}

export async function createNetwork(
  name: string,
  pools: string[],
  opts: { networkID?: number; type?: 'arp' | 'bgp' } = {},
): Promise<void> {
  await rest.create(JuneauResources.externalNetworks, {
    apiVersion: API_VERSION,
    kind: 'ExternalNetwork',
    metadata: { name },
    spec: { type: opts.type ?? 'arp', addressPools: pools },
  });
  if (opts.networkID) await setNetworkID(name, opts.networkID);
}

/** Stands in for the ExternalNetwork reconciler (EN-7), which these tests do not run. */
export async function setNetworkID(name: string, networkID: number): Promise<void> {
  await rest.patch(
    JuneauResources.externalNetworks,
    undefined,
    name,
    'merge',
    { status: { networkID } },
    { subresource: 'status' },
  );
}

/** Creates the namespaced Juneau object `ns/name` of `type` with `spec`. */
async function createNamespaced(type: ResourceType, ns: string, name: string, spec: object): Promise<void> {
  const object = { apiVersion: API_VERSION, kind: type.kind, metadata: { name, namespace: ns }, spec };
  await rest.create(type, object);
}

export const createEip = (ns: string, name: string, externalNetwork: string, requestedIP?: string) =>
  createNamespaced(JuneauResources.elasticIPs, ns, name, { externalNetwork, ...(requestedIP ? { requestedIP } : {}) });

export const createAttachment = (ns: string, name: string, elasticIP: string, networkInterface: string) =>
  createNamespaced(JuneauResources.elasticIPAttachments, ns, name, { elasticIP, networkInterface });

export async function deleteObject(
  type: ResourceType,
  ns: string | undefined,
  name: string,
  body?: unknown,
): Promise<void> {
  await rest.delete(type, ns, name, body).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}

export async function listEvents(
  ns: string,
): Promise<Array<{ type?: string; reason?: string; note?: string; regarding?: { kind?: string; name?: string } }>> {
  const list = await rest.list<
    KubeObject & { type?: string; reason?: string; note?: string; regarding?: { kind?: string; name?: string } }
  >(Resources.events, { namespace: ns });
  return list.items;
}

/** A Pod bound to `nodeName` with Juneau annotations; its status is set like a kubelet would (podIP). */
export async function createPod(
  ns: string,
  name: string,
  o: { nodeName?: string; annotations?: Record<string, string>; podIP?: string },
): Promise<void> {
  await rest.create(Resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, annotations: o.annotations },
    spec: {
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
      containers: [{ name: 'main', image: 'registry.invalid/none' }],
    },
  } as KubeObject);
  if (o.podIP)
    await rest.patch(
      Resources.pods,
      ns,
      name,
      'merge',
      { status: { phase: 'Running', podIP: o.podIP, podIPs: [{ ip: o.podIP }] } },
      { subresource: 'status' },
    );
}

/** A graceful delete: without a kubelet the Pod stays Terminating (deletionTimestamp set). */
export async function terminatePod(ns: string, name: string): Promise<void> {
  await rest.delete(Resources.pods, ns, name, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 30 });
}

/**
 * Touches `namespace/name` of `type` (an annotation: no spec change) and waits until `reconciler`
 * of `replica` has finished a pass of that key begun after the touch: inside a "nothing changed"
 * window, the proof that the pass the touch prompted ran before the window closed.
 */
export async function touchAndAwaitPass(
  replica: Replica,
  reconciler: string,
  type: ResourceType,
  namespace: string,
  name: string,
): Promise<void> {
  const key = `${namespace}/${name}`;
  const before = replica.passes(reconciler, key);
  await rest.patch(type, namespace, name, 'merge', {
    metadata: { annotations: { 'juneau.test/touch': String(Date.now()) } },
  });
  await waitForMatch(
    async () => replica.passes(reconciler, key),
    (n) => n > before,
    `a ${reconciler} pass of ${key} after the touch`,
  );
}
