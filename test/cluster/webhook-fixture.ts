// The Juneau webhook server running in the test process, registered by URL with the real API server
// and scoped to this test file's objects: its ValidatingWebhookConfiguration has a unique name and
// every webhook has objectSelector `juneau.test/webhook=<id>`, so other test files sharing the
// control plane never reach it. The objects it READS are every object of the cluster, so tests use
// unique names and addresses from a random /24 of 100.64.0.0/10.
import { API_VERSION } from '../../api';
import { liveWebhookCaches } from '../../runtime/controller/webhook/listers';
import {
  startWebhookServer,
  type WebhookServerHandle,
  type WebhookServerOptions,
} from '../../runtime/controller/webhook/start';
import type { ResourceType } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import { createLogger } from '../../runtime/kube/log';
import { createNamespace, deleteNamespace, ignoreNotFound, kubectl, testKubeConfig, testRest } from './fixture';
import { freePort } from './processes';

export const WEBHOOK_LABEL = 'juneau.test/webhook';

export { freePort };

export const randomId = () => Math.random().toString(36).slice(2, 8);

export interface TestWebhook {
  readonly id: string;
  readonly configurationName: string;
  /** Namespace of the certificate Secret (created for this webhook, deleted by stop()). */
  readonly namespace: string;
  readonly secretName: string;
  readonly urlBase: string;
  /** Labels that route an object to this webhook. */
  readonly labels: Record<string, string>;
  readonly rest: RestClient;
  handle: WebhookServerHandle;
  /** Starts the server again (after stop({ keepRegistration: true })), on the same port and Secret. */
  restart(): Promise<void>;
  stop(opts?: { keepRegistration?: boolean }): Promise<void>;
}

/** `id` defaults to prefix + random; pass one to label objects before the webhook exists (EN-5). */
export async function startTestWebhook(
  prefix: string,
  extra: Partial<WebhookServerOptions> = {},
  id = `${prefix}-${randomId()}`,
): Promise<TestWebhook> {
  const namespace = await createNamespace(`webhook-${prefix}`);
  const port = await freePort();
  const rest = new RestClient(testKubeConfig());
  const logLines = process.env.JUNEAU_TEST_WEBHOOK_LOG ? undefined : () => undefined;
  const logger = createLogger({ component: `test-webhook-${id}`, level: 'info', sink: logLines });
  const options = (): WebhookServerOptions => ({
    rest,
    caches: liveWebhookCaches(rest),
    logger,
    urlBase: `https://127.0.0.1:${port}`,
    inCluster: false,
    namespace,
    configurationName: `juneau-test-${id}`,
    certSecretName: 'juneau-webhook-cert',
    objectSelector: { matchLabels: { [WEBHOOK_LABEL]: id } },
    checkIntervalMs: 1_000,
    ...extra,
  });
  const webhook: TestWebhook = {
    id,
    configurationName: `juneau-test-${id}`,
    namespace,
    secretName: 'juneau-webhook-cert',
    urlBase: `https://127.0.0.1:${port}`,
    labels: { [WEBHOOK_LABEL]: id },
    rest,
    handle: startWebhookServer(options()),
    async restart() {
      webhook.handle = startWebhookServer(options());
      await webhook.handle.ready;
    },
    async stop(opts = {}) {
      await webhook.handle.stop(opts);
      if (!opts.keepRegistration) await deleteNamespace(namespace);
    },
  };
  await webhook.handle.ready;
  return webhook;
}

// ---------------------------------------------------------------------------------------------
// objects

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  [k: string]: unknown;
};

/** A Juneau object of `kind` as a user writes it. */
const juneauObject = (kind: string, metadata: Manifest['metadata'], spec: Record<string, unknown>): Manifest => ({
  apiVersion: API_VERSION,
  kind,
  metadata,
  spec,
});
export const addressPool = (name: string, addresses: string[], labels: Record<string, string>, advertiseMode = 'arp') =>
  juneauObject('AddressPool', { name, labels }, { advertiseMode, addresses });
export const externalNetwork = (name: string, addressPools: string[], labels: Record<string, string>, type = 'arp') =>
  juneauObject('ExternalNetwork', { name, labels }, { type, addressPools });
export const arpAdvertisement = (
  name: string,
  address: string,
  externalNetwork: string,
  labels: Record<string, string>,
  nodeName = 'node-a',
) => juneauObject('ARPAdvertisement', { name, labels }, { externalNetwork, address, nodeName });
export const elasticIPAttachment = (
  namespace: string,
  name: string,
  elasticIP: string,
  labels: Record<string, string>,
) => juneauObject('ElasticIPAttachment', { name, namespace, labels }, { elasticIP, networkInterface: `${name}.eth0` });
export const networkInterface = (
  namespace: string,
  name: string,
  podName: string,
  elasticIP: string | undefined,
  labels: Record<string, string>,
) =>
  juneauObject(
    'NetworkInterface',
    { name, namespace, labels },
    { podName, interface: 'eth0', ...(elasticIP ? { elasticIP } : {}) },
  );
export const pod = (
  namespace: string,
  name: string,
  annotations: Record<string, string>,
  labels: Record<string, string>,
): Manifest => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, labels, annotations },
  spec: { containers: [{ name: 'main', image: 'registry.invalid/none' }] },
});

export interface ApplyResult {
  readonly ok: boolean;
  readonly output: string;
}

/** `kubectl apply -f -` of one object: what a user does. */
export async function apply(object: Manifest): Promise<ApplyResult> {
  const r = await kubectl(['apply', '-f', '-'], { input: JSON.stringify(object), allowFailure: true });
  return { ok: r.code === 0, output: `${r.stdout}${r.stderr}`.trim() };
}

/** Applies and expects success (with the output in the failure message). */
export async function applyOk(object: Manifest): Promise<void> {
  const r = await apply(object);
  if (!r.ok) throw new Error(`kubectl apply of ${object.kind} ${object.metadata.name} was refused: ${r.output}`);
}

/** Deletes cluster-scoped objects by name, ignoring those already gone (afterAll). */
export async function deleteClusterObjects(type: ResourceType, names: string[]): Promise<void> {
  await Promise.all(names.map((name) => testRest().delete(type, undefined, name).catch(ignoreNotFound)));
}

/** A random /24 of 100.64.0.0/10 as `100.x.y.`: add the last octet. */
export function randomSubnet(): string {
  const n = Math.floor(Math.random() * 16384);
  return `100.${64 + (n >> 8)}.${n & 255}.`;
}
