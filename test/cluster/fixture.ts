// Helpers for tests against the real control plane that test/cluster/global-setup.ts starts once
// per Jest run (or the one named by JUNEAU_TEST_KUBECONFIG, e.g. from `npm run cluster -- up`).
//
//   const ns = useNamespace();                     // fresh namespace per test, deleted after it
//   it('...', async () => {
//     const cm = { metadata: { name: 'x', namespace: ns() } };
//     await testRest().create(Resources.configMaps, cm);
//     const err = await rejection(testRest().create(Resources.configMaps, cm));
//     expect(err.code).toBe(409);
//   });
//
// Cluster tests talk to the API server through the product's RestClient (runtime/kube/rest.ts),
// as the controller and agent do; `clients()` (client-node's generated API classes) stays only for
// test/pulumi, which imports this fixture.
import * as path from 'node:path';
import {
  ApiextensionsV1Api,
  ApiException,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
  type V1EndpointSlice,
  type V1Pod,
  type V1Service,
} from '@kubernetes/client-node';
import { ANNOTATIONS, GROUP, LOAD_BALANCER_CLASS } from '../../api';
import { JuneauResources, Resources, resourcePath, type ResourceType } from '../../runtime/kube/resources';
import { isNotFound as isRestNotFound, KubeApiError, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { sleep } from '../sleep';
import { KubectlResult, runKubectl } from './kubectl';
import { CRD_MANIFEST, resolveBinDir } from './paths';

export { CRD_MANIFEST };

export const KUBECONFIG_ENV = 'JUNEAU_TEST_KUBECONFIG';
/** Label on every namespace the fixture makes (handy to clean up after an interrupted run). */
export const TEST_NAMESPACE_LABEL = 'juneau.test/namespace';

/** Pass as the second argument of a generated patch call for a JSON merge patch. */
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const strategicMergePatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
/** Server-side apply; give the call a `fieldManager` (and `force: true` to take over fields). */
export const serverSideApply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

export function testKubeconfigPath(): string {
  const file = process.env[KUBECONFIG_ENV];
  if (!file) {
    throw new Error(
      `${KUBECONFIG_ENV} is not set: cluster tests run under the Jest "cluster" project ` +
        `(npx jest --selectProjects cluster), whose global setup starts the control plane.`,
    );
  }
  return file;
}

/** Admin (system:masters) client configuration of the test control plane. */
export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(testKubeconfigPath());
  return kc;
}

export interface Clients {
  kc: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  apiextensions: ApiextensionsV1Api;
  discovery: DiscoveryV1Api;
  coordination: CoordinationV1Api;
  custom: CustomObjectsApi;
  /** Generic create/patch/read/delete of any object, e.g. from YAML. */
  objects: KubernetesObjectApi;
}

let cachedRest: RestClient | undefined;
/** The admin (system:masters) RestClient of the test control plane, shared by a test file. Its
 * requests wait as long as a test may (client-node's, which the fixture used before, never timed
 * out): a test's own write aborted while a loaded API server still works on it says nothing. */
export function testRest(): RestClient {
  return (cachedRest ??= new RestClient(testKubeConfig(), { requestTimeoutMs: 120_000 }));
}

/** A client-node model as RestClient returns it: plain JSON, so metadata times are strings. */
export type Wire<T> = Omit<T, 'metadata'> & KubeObject;
export type Service = Wire<V1Service>;
export type Pod = Wire<V1Pod>;
export type EndpointSlice = Wire<V1EndpointSlice>;

/** Built-in kinds the tests touch beyond those Juneau itself reads or writes (runtime/kube Resources). */
export const TestResources = {
  ...Resources,
  /** core/v1 Events (Resources.events is events.k8s.io/v1). */
  coreEvents: { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
  clusterRoles: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterroles',
    kind: 'ClusterRole',
    namespaced: false,
  },
  customResourceDefinitions: {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    plural: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    namespaced: false,
  },
} as const satisfies Record<string, ResourceType>;

/** DELETE with grace period 0 (no kubelet would ever finish a graceful delete of a Pod). */
export async function deleteNow(type: ResourceType, namespace: string | undefined, name: string): Promise<void> {
  await testRest()
    .delete(type, namespace, name, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 })
    .catch(ignoreNotFound);
}

let cached: Clients | undefined;
/** client-node's generated API classes, for test/pulumi; cluster tests use testRest(). */
export function clients(): Clients {
  if (cached) return cached;
  const kc = testKubeConfig();
  cached = {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    apiextensions: kc.makeApiClient(ApiextensionsV1Api),
    discovery: kc.makeApiClient(DiscoveryV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    objects: KubernetesObjectApi.makeApiClient(kc),
  };
  return cached;
}

// ---------------------------------------------------------------------------------------------
// namespaces

function slug(s: string): string {
  return (
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 30)
      .replace(/-+$/, '') || 't'
  );
}

/** Creates a namespace with a unique name (prefix + random suffix) and returns its name. */
export async function createNamespace(prefix = 'jt'): Promise<string> {
  const ns = await testRest().create<KubeObject>(Resources.namespaces, {
    metadata: { generateName: `${slug(prefix)}-`, labels: { [TEST_NAMESPACE_LABEL]: 'true' } },
  });
  return ns.metadata!.name!;
}

/** Deletes a namespace without waiting. Pods go first with grace period 0: without a kubelet a
 * bound Pod would stay Terminating and hold the namespace in Terminating forever. */
export async function deleteNamespace(name: string): Promise<void> {
  await deleteCollectionNow(Resources.pods, name);
  await testRest().delete(Resources.namespaces, undefined, name).catch(ignoreNotFound);
}

/** One DELETE of every object of `type` in `namespace`, grace period 0. */
async function deleteCollectionNow(type: ResourceType, namespace: string): Promise<void> {
  await testRest()
    .request('DELETE', resourcePath(type, namespace), { query: { gracePeriodSeconds: 0 } })
    .catch(ignoreNotFound);
}

/**
 * Deletes every object of `types` in `namespace` and waits until none is left. For a file that
 * leaves many objects: a namespace's deletion finishes later, and until then the next file's
 * controller replicas list and reconcile them (eip-pool-mode waited > 30 s behind the 300 huge
 * ElasticIPs agent-nat-heap left).
 */
export async function deleteAllIn(
  namespace: string,
  types: readonly ResourceType[],
  timeoutMs = 120_000,
): Promise<void> {
  for (const type of types) await deleteCollectionNow(type, namespace);
  for (const type of types)
    await waitFor(async () => (await testRest().list(type, { namespace, limit: 1 })).items.length === 0, {
      what: `no ${type.plural} left in namespace ${namespace}`,
      timeoutMs,
    });
}

/** Runs fn in a fresh namespace and deletes the namespace afterwards, also when fn throws. */
export async function withNamespace<T>(fn: (namespace: string) => Promise<T>, prefix?: string): Promise<T> {
  const ns = await createNamespace(prefix ?? expect.getState().currentTestName ?? 'jt');
  try {
    return await fn(ns);
  } finally {
    await deleteNamespace(ns);
  }
}

/** Jest hooks: a fresh namespace for each test (named after the test), deleted after it.
 * Call at describe level; call the returned function inside a test to get the name. */
export function useNamespace(): () => string {
  let current: string | undefined;
  beforeEach(async () => {
    current = await createNamespace(expect.getState().currentTestName ?? 'jt');
  });
  afterEach(async () => {
    if (current) await deleteNamespace(current);
    current = undefined;
  });
  return () => {
    if (!current) throw new Error('useNamespace(): the namespace exists only inside a test');
    return current;
  };
}

// ---------------------------------------------------------------------------------------------
// waiting and errors

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** What is awaited, for the timeout message. */
  what?: string;
  /** Asked after each miss: a reason why waiting is pointless ends the wait at once with it. */
  giveUp?: () => string | false;
}

/** Polls fn until it returns a value other than undefined/null/false; returns that value. Errors
 * thrown by fn count as "not yet"; on timeout the last one (or last value) is in the message. */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  opts: WaitOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v as T;
      last = v;
    } catch (err) {
      last = err;
    }
    const why = opts.giveUp?.();
    if (why) throw new Error(`waitFor${opts.what ? ` ${opts.what}` : ''}: ${why}`);
    if (Date.now() > until) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`waitFor${opts.what ? ` ${opts.what}` : ''}: not true after ${timeoutMs} ms (last: ${detail})`);
    }
    await sleep(opts.intervalMs ?? 100);
  }
}

/** Polls `read` until what it returns passes `test`, and returns that; `opts` as waitFor's (a string: `what`). */
export function waitForMatch<T>(
  read: () => Promise<T | undefined>,
  test: (value: T) => unknown,
  opts: WaitOptions | string,
): Promise<T> {
  return waitFor(
    async () => {
      const value = await read();
      if (value !== undefined && test(value)) return value;
      // A miss thrown, so that waitFor's timeout names what was last read.
      throw new Error(`read ${JSON.stringify(value)?.slice(0, 2000)}`);
    },
    typeof opts === 'string' ? { what: opts } : opts,
  );
}

export interface ApiError {
  /** HTTP status, e.g. 422 for a CEL/validation rejection, 409 for AlreadyExists/Conflict. */
  code: number;
  /** The Status object's message, e.g. the CEL rule's message. */
  message: string;
  reason?: string;
  /** Status.details.causes (field paths and messages of validation errors). */
  causes: { field?: string; message?: string; reason?: string }[];
  body: unknown;
}

/** The parsed Status of a refusal from either client (client-node's ApiException, runtime/kube's RestClient); undefined for other errors. */
export function apiError(err: unknown): ApiError | undefined {
  if (!(err instanceof ApiException) && !(err instanceof KubeApiError)) return undefined;
  let body: unknown = err.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      /* not JSON */
    }
  }
  const status = (typeof body === 'object' && body !== null ? body : {}) as {
    message?: string;
    reason?: string;
    details?: { causes?: ApiError['causes'] };
  };
  return {
    code: err.code,
    message: status.message ?? String(body),
    reason: status.reason,
    causes: status.details?.causes ?? [],
    body,
  };
}

/** Awaits a call that must be refused by the API server and returns the refusal. */
export async function rejection(call: Promise<unknown>): Promise<ApiError> {
  let result: unknown;
  try {
    result = await call;
  } catch (err) {
    const e = apiError(err);
    if (e) return e;
    throw err;
  }
  throw new Error(
    `expected the API server to refuse the request, but it succeeded: ${JSON.stringify(result)?.slice(0, 500)}`,
  );
}

/** NotFound from either client (client-node's ApiException, runtime/kube's RestClient). */
export function isNotFound(err: unknown): boolean {
  return apiError(err)?.code === 404 || isRestNotFound(err);
}

export function ignoreNotFound(err: unknown): void {
  if (!isNotFound(err)) throw err;
}

// ---------------------------------------------------------------------------------------------
// kubectl

let binDir: string | undefined;
/** Directory of the built binaries (etcd, kube-apiserver, kube-controller-manager, kubectl). */
export function testBinDir(): string {
  return (binDir ??= process.env.JUNEAU_K8S_BIN_DIR ?? resolveBinDir());
}

export function kubectlPath(): string {
  return path.join(testBinDir(), 'kubectl');
}

export interface KubectlOptions {
  /** Written to stdin (e.g. YAML for `apply -f -`). */
  input?: string;
  /** Adds `--namespace`. */
  namespace?: string;
  /** Resolve with the result instead of throwing on a non-zero exit (to check refusals). */
  allowFailure?: boolean;
}

/** Runs the built kubectl (v1.34, matching the server) against the test control plane. */
export async function kubectl(args: string[], opts: KubectlOptions = {}): Promise<KubectlResult> {
  const full = opts.namespace ? [`--namespace=${opts.namespace}`, ...args] : args;
  const r = await runKubectl(testBinDir(), testKubeconfigPath(), full, { input: opts.input });
  if (r.code !== 0 && !opts.allowFailure) {
    throw new Error(`kubectl ${full.join(' ')} exited ${r.code}:\n${(r.stderr || r.stdout).trim()}`);
  }
  return r;
}

/** `kubectl apply --server-side -f -` of a YAML (or JSON) manifest; returns kubectl's output. */
export async function kubectlApply(
  manifest: string,
  opts: { namespace?: string; fieldManager?: string } = {},
): Promise<string> {
  const r = await kubectl(
    ['apply', '--server-side', '--force-conflicts', `--field-manager=${opts.fieldManager ?? 'juneau-test'}`, '-f', '-'],
    {
      input: manifest,
      namespace: opts.namespace,
    },
  );
  return r.stdout;
}

// ---------------------------------------------------------------------------------------------
// CRDs

/** Fails with an actionable message unless the CRD `<plural>.<group>` is installed and Established
 * (the global setup applies dist/juneau-crds.k8s.yaml only when `npx cdk8s synth` has made it). */
export async function requireCrd(plural: string, group = GROUP): Promise<void> {
  const name = `${plural}.${group}`;
  let crd;
  try {
    crd = await testRest().get<Wire<V1CustomResourceDefinition>>(
      TestResources.customResourceDefinitions,
      undefined,
      name,
    );
  } catch (err) {
    if (!isNotFound(err)) throw err;
    throw new Error(
      `CRD ${name} is not installed in the test control plane: run \`npx cdk8s synth\` so that ${CRD_MANIFEST} exists, then rerun the tests`,
    );
  }
  if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) {
    throw new Error(`CRD ${name} is not Established: ${JSON.stringify(crd.status?.conditions)}`);
  }
}

// ---------------------------------------------------------------------------------------------
export { createArpNetwork } from './arp-network';

/** Deletes what createArpNetwork made (network first, as a user would), those already gone included. */
export async function deleteArpNetwork(
  rest: RestClient,
  o: { readonly pool: string; readonly network: string },
): Promise<void> {
  await rest.delete(JuneauResources.externalNetworks, undefined, o.network).catch(ignoreNotFound);
  await rest.delete(JuneauResources.addressPools, undefined, o.pool).catch(ignoreNotFound);
}

// pods and nodes without a kubelet

/** Creates (or keeps) a Node object. There is no kubelet: it is never Ready unless you patch it. */
export async function ensureNode(
  name: string,
  opts: { internalIP?: string; labels?: Record<string, string> } = {},
): Promise<void> {
  const rest = testRest();
  try {
    await rest.create(Resources.nodes, {
      metadata: { name, labels: { 'kubernetes.io/hostname': name, ...opts.labels } },
    });
  } catch (err) {
    if (apiError(err)?.code !== 409) throw err;
  }
  if (opts.internalIP) {
    const addresses = [
      { type: 'InternalIP', address: opts.internalIP },
      { type: 'Hostname', address: name },
    ];
    await rest.patch(Resources.nodes, undefined, name, 'merge', { status: { addresses } }, { subresource: 'status' });
  }
}

/** Deletes the named Node objects (made by ensureNode), those already gone included. */
export async function deleteNodes(names: Iterable<string>): Promise<void> {
  for (const name of names) await testRest().delete(Resources.nodes, undefined, name).catch(ignoreNotFound);
}

export interface FakePodOptions {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  nodeName: string;
  podIP: string;
  ready?: boolean;
  /** Container ports, e.g. [{ name: 'http', containerPort: 8080 }]. */
  ports?: { name?: string; containerPort: number; protocol?: string }[];
}

/** Creates a Pod bound to nodeName and sets its status as a kubelet would: Running, podIP, and the
 * Ready condition. Remove it with deletePodNow (a graceful delete would wait for a kubelet). */
export async function createRunningPod(o: FakePodOptions): Promise<Pod> {
  await testRest().create(Resources.pods, {
    metadata: { name: o.name, namespace: o.namespace, labels: o.labels },
    spec: { nodeName: o.nodeName, containers: [{ name: 'main', image: 'registry.invalid/none', ports: o.ports }] },
  });
  return setPodReady(o.namespace, o.name, o.ready ?? true, o.podIP);
}

/** Patches the status subresource like a kubelet: phase Running, podIP(s), Ready/ContainersReady. */
export async function setPodReady(namespace: string, name: string, ready: boolean, podIP?: string): Promise<Pod> {
  const now = new Date().toISOString();
  const status = ready ? 'True' : 'False';
  const body: Record<string, unknown> = {
    phase: 'Running',
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
      { type: 'Initialized', status: 'True', lastTransitionTime: now },
      { type: 'ContainersReady', status, lastTransitionTime: now },
      { type: 'Ready', status, lastTransitionTime: now },
    ],
  };
  if (podIP) Object.assign(body, { podIP, podIPs: [{ ip: podIP }] });
  return testRest().patch<Pod>(Resources.pods, namespace, name, 'merge', { status: body }, { subresource: 'status' });
}

/** Deletes a Pod with grace period 0 (no kubelet would ever finish a graceful delete). */
export async function deletePodNow(namespace: string, name: string): Promise<void> {
  await deleteNow(Resources.pods, namespace, name);
}

export interface LoadBalancerServiceOptions {
  /** The ExternalNetwork annotation (none: the Service names no network). */
  readonly network?: string;
  /** The requested-VIP annotation. */
  readonly requestedIP?: string;
  /** @default 'Local' */
  readonly externalTrafficPolicy?: 'Local' | 'Cluster';
  /** @default [{ name: 'http', port: 80, targetPort: 'http' }] */
  readonly ports?: Array<{ name?: string; port: number; targetPort?: number | string; protocol?: string }>;
  /** @default { app: <name> } */
  readonly selector?: Record<string, string>;
  readonly ipFamilies?: string[];
}

/** A LoadBalancer Service of Juneau's class, as a user writes it (no node ports). */
export function loadBalancerService(name: string, o: LoadBalancerServiceOptions = {}): Service {
  const annotations: Record<string, string> = {};
  if (o.network) annotations[ANNOTATIONS.loadBalancerExternalNetwork] = o.network;
  if (o.requestedIP) annotations[ANNOTATIONS.loadBalancerRequestedIP] = o.requestedIP;
  return {
    metadata: { name, annotations },
    spec: {
      type: 'LoadBalancer',
      loadBalancerClass: LOAD_BALANCER_CLASS,
      allocateLoadBalancerNodePorts: false,
      externalTrafficPolicy: o.externalTrafficPolicy ?? 'Local',
      selector: o.selector ?? { app: name },
      ports: o.ports ?? [{ name: 'http', port: 80, targetPort: 'http' }],
      ...(o.ipFamilies
        ? { ipFamilies: o.ipFamilies, ipFamilyPolicy: o.ipFamilies.length > 1 ? 'RequireDualStack' : 'SingleStack' }
        : {}),
    },
  };
}

/** Creates `loadBalancerService(name, o)` in `namespace`. */
export function createLoadBalancerService(
  namespace: string,
  name: string,
  o: LoadBalancerServiceOptions = {},
): Promise<Service> {
  const service = loadBalancerService(name, o);
  return testRest().create(Resources.services, { ...service, metadata: { ...service.metadata, namespace } });
}
