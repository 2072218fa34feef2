/**
 * `kubectl juneau uninstall` (L12): the uninstall in the one order that does not hang. An
 * ElasticIP and a ServiceLoadBalancer carry a finalizer only the controller releases (EIP-15,
 * ARP-6); `kubectl delete -f` of the install deletes the controller with the CRDs, and those
 * deletions then wait for ever. So: (1) without a running controller, refuse, naming what would
 * hang (or, with --force-finalizers, remove the finalizers and say so); (2) delete every
 * ElasticIPAttachment and ElasticIP, and the ServiceLoadBalancer CRD (the API server deletes every
 * ServiceLoadBalancer and refuses new ones, so the controller cannot recreate them for their
 * Services), and wait until the controller has released them all; (3) delete the install's
 * objects, CRDs last, with kubectl.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { FINALIZERS, GROUP, INSTALL } from '../../api/constants';
import { JuneauResources, type ResourceType } from '../kube/resources';
import { deleteIgnoringNotFound, getOrUndefined, isNotFound, type RestClient } from '../kube/rest';
import type { KubeObject } from '../kube/types';
import type { KubeFlags } from './args';
import { runKubectl } from './node-exec';

export interface UninstallRequest {
  /** The install's manifests (`-f`); none: the install found by its namespace and labels. */
  readonly files: readonly string[];
  readonly forceFinalizers: boolean;
  readonly timeoutMs: number;
  readonly kube: KubeFlags;
}

export interface UninstallIO {
  readonly say: (line: string) => void;
  /** The refusal and the timeout. */
  readonly fail: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  /** @default 2 s */
  readonly pollMs?: number;
}

const PART_OF = 'app.kubernetes.io/part-of=juneau';
const JUNEAU_FINALIZERS: readonly string[] = Object.values(FINALIZERS);
const SLB_CRD = `${JuneauResources.serviceLoadBalancers.plural}.${GROUP}`;
const DEPLOYMENTS: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};
const CRDS: ResourceType = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
};
const WEBHOOKS: ResourceType = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingwebhookconfigurations',
  kind: 'ValidatingWebhookConfiguration',
  namespaced: false,
};
/** The install's cluster-scoped kinds, found by label when no manifest is given. */
const CLUSTER_KINDS =
  'clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings,validatingwebhookconfigurations';

/** The two kinds whose objects carry Juneau's finalizers. */
const HOLDERS = [JuneauResources.elasticIPs, JuneauResources.serviceLoadBalancers] as const;

interface Holder {
  readonly type: ResourceType;
  readonly object: KubeObject;
}

const nameOf = ({ type, object }: Holder) =>
  `${type.kind} ${object.metadata?.namespace}/${object.metadata?.name} (${juneauFinalizersOf(object).join(', ')})`;
/** The object and what its deletion waits for, in its own words (e.g. EIP-15: the Pods holding it). */
const waitingOn = (h: Holder) => {
  const conditions = (h.object as { status?: { conditions?: Array<{ reason?: string; message?: string }> } }).status
    ?.conditions;
  const waiting = conditions?.find((c) => c.reason?.startsWith('Waiting'));
  return waiting?.message ? `${nameOf(h)}: ${waiting.message}` : nameOf(h);
};
const juneauFinalizersOf = (o: KubeObject) =>
  (o.metadata?.finalizers ?? []).filter((f) => JUNEAU_FINALIZERS.includes(f));

/** Every object of `type` (none when its CRD is gone: the API server then answers a plain-text 404). */
async function listAll(rest: RestClient, type: ResourceType): Promise<KubeObject[]> {
  if (!(await getOrUndefined<KubeObject>(rest, CRDS, undefined, `${type.plural}.${type.group}`))) return [];
  try {
    return (await rest.list<KubeObject>(type)).items;
  } catch (err) {
    // The CRD went between the two calls (its deletion, which the uninstall started): none left.
    if (isNotFound(err)) return [];
    throw err;
  }
}

/** The ElasticIPs and ServiceLoadBalancers that still carry a Juneau finalizer. */
async function finalizerHolders(rest: RestClient, types: readonly ResourceType[] = HOLDERS): Promise<Holder[]> {
  const found: Holder[] = [];
  for (const type of types)
    for (const object of await listAll(rest, type))
      if (juneauFinalizersOf(object).length > 0) found.push({ type, object });
  return found;
}

/** The namespace the manifests create (their Namespace object), else -n, else Juneau's default. */
export function installNamespace(documents: readonly KubeObject[], flag: string | undefined): string {
  return documents.find((d) => d.kind === 'Namespace')?.metadata?.name ?? flag ?? INSTALL.namespace;
}

function readManifests(files: readonly string[]): KubeObject[] {
  return files.flatMap((file) =>
    parseAllDocuments(fs.readFileSync(file, 'utf8'))
      .map((d) => d.toJS() as KubeObject | null)
      .filter((d): d is KubeObject => !!d && typeof d === 'object' && typeof d.kind === 'string'),
  );
}

/** Exit code 0 done, 1 refused or timed out (the message says which objects). */
export async function uninstall(rest: RestClient, request: UninstallRequest, io: UninstallIO): Promise<number> {
  const say = (line: string) => io.say(`uninstall: ${line}\n`);
  const documents = readManifests(request.files);
  const namespace = installNamespace(documents, request.kube.namespace);
  const deployment = await getOrUndefined<KubeObject & { status?: { availableReplicas?: number } }>(
    rest,
    DEPLOYMENTS,
    namespace,
    INSTALL.controllerName,
  );
  const running = (deployment?.status?.availableReplicas ?? 0) > 0 && !deployment?.metadata?.deletionTimestamp;
  const holders = await finalizerHolders(rest);
  if (!running && holders.length > 0 && !request.forceFinalizers) {
    io.fail(
      `uninstall: refused: no ${INSTALL.controllerName} Deployment with an available replica in namespace ${namespace}` +
        `, so these finalizers would never be released and their CRDs' and the namespace's deletions would hang:\n` +
        holders.map((h) => `  ${nameOf(h)}\n`).join('') +
        `Start the controller again, or pass --force-finalizers to remove the finalizers (the addresses are then not withdrawn by the controller).\n`,
    );
    return 1;
  }
  const force = !running && request.forceFinalizers;
  say(
    running ? `controller ${namespace}/${INSTALL.controllerName} is running` : `controller not running in ${namespace}`,
  );
  if (force && (await deleteIgnoringNotFound(rest, WEBHOOKS, undefined, INSTALL.webhookConfigurationName)))
    say(
      `deleted ValidatingWebhookConfiguration ${INSTALL.webhookConfigurationName} (its server, the controller, is down)`,
    );

  // The ElasticIPs first: the controller's ServiceLoadBalancer watch fails once that CRD is gone.
  const phases: Array<{ type: ResourceType; start: () => Promise<void> }> = [
    {
      type: JuneauResources.elasticIPs,
      start: async () => {
        for (const type of [JuneauResources.elasticIPAttachments, JuneauResources.elasticIPs])
          for (const o of await listAll(rest, type)) {
            await deleteIgnoringNotFound(rest, type, o.metadata?.namespace, o.metadata?.name ?? '');
            say(`deleted ${type.kind} ${o.metadata?.namespace}/${o.metadata?.name}`);
          }
      },
    },
    {
      type: JuneauResources.serviceLoadBalancers,
      start: async () => {
        if (await deleteIgnoringNotFound(rest, CRDS, undefined, SLB_CRD))
          say(`deleted CustomResourceDefinition ${SLB_CRD} (the API server deletes every ServiceLoadBalancer)`);
      },
    },
  ];
  for (const { type, start } of phases) {
    await start();
    if (force)
      for (const h of await finalizerHolders(rest, [type])) {
        await removeJuneauFinalizers(rest, h);
        say(
          `removed finalizer ${juneauFinalizersOf(h.object).join(', ')} from ${h.type.kind} ${h.object.metadata?.namespace}/${h.object.metadata?.name}`,
        );
      }
    const left = await waitReleased(rest, type, request.timeoutMs, io.pollMs ?? 2_000, say);
    if (left.length > 0) {
      io.fail(
        `uninstall: timed out after ${request.timeoutMs / 1000} s; the controller has not released:\n` +
          left.map((name) => `  ${name}\n`).join('') +
          `See its log (kubectl -n ${namespace} logs deploy/${INSTALL.controllerName}) and \`kubectl juneau why\` for each.\n`,
      );
      return 1;
    }
  }
  say('every ElasticIP and ServiceLoadBalancer is released');
  return deleteInstall(documents, namespace, request, io.env, say);
}

/** The finalizers removed under the resourceVersion read (a concurrent writer gets a 409, not a lost update). */
async function removeJuneauFinalizers(rest: RestClient, { type, object }: Holder): Promise<void> {
  const finalizers = (object.metadata?.finalizers ?? []).filter((f) => !JUNEAU_FINALIZERS.includes(f));
  const metadata = { finalizers, resourceVersion: object.metadata?.resourceVersion };
  try {
    await rest.patch(type, object.metadata?.namespace, object.metadata?.name ?? '', 'merge', { metadata });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Polls until no object of `type` is left (and, for the ServiceLoadBalancers, their CRD is gone); returns those left at the timeout. */
async function waitReleased(
  rest: RestClient,
  type: ResourceType,
  timeoutMs: number,
  pollMs: number,
  say: (line: string) => void,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  const crd = type === JuneauResources.serviceLoadBalancers ? SLB_CRD : undefined;
  let shown = '';
  for (;;) {
    const left = (await listAll(rest, type)).map((object) => ({ type, object }));
    const crdLeft = crd !== undefined && !!(await getOrUndefined<KubeObject>(rest, CRDS, undefined, crd));
    if (left.length === 0 && !crdLeft) return [];
    const names = left.length > 0 ? left.map(waitingOn) : [`CustomResourceDefinition ${crd}`];
    if (names.join() !== shown) say(`waiting for the controller to release ${names.join(', ')}`);
    shown = names.join();
    if (Date.now() >= deadline) return names;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Step 3 with kubectl: the manifests' objects, CRDs last; without manifests, the install by label and namespace. */
async function deleteInstall(
  documents: readonly KubeObject[],
  namespace: string,
  request: UninstallRequest,
  env: NodeJS.ProcessEnv,
  say: (line: string) => void,
): Promise<number> {
  const { kubeconfig, context } = request.kube;
  const base = [
    ...(kubeconfig ? ['--kubeconfig', kubeconfig] : []),
    ...(context ? ['--context', context] : []),
    'delete',
    '--ignore-not-found',
    '--wait',
    `--timeout=${Math.ceil(request.timeoutMs / 1000)}s`,
  ];
  const steps: string[][] = [];
  if (documents.length > 0) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kubectl-juneau-uninstall-'));
    const write = (name: string, docs: readonly KubeObject[]) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, docs.map((d) => JSON.stringify(d)).join('\n---\n'));
      return file;
    };
    const isCrd = (d: KubeObject) => d.kind === 'CustomResourceDefinition';
    const rest = documents.filter((d) => !isCrd(d));
    const crds = documents.filter(isCrd);
    if (rest.length > 0) steps.push(['-f', write('install.json', rest)]);
    if (crds.length > 0) steps.push(['-f', write('crds.json', crds)]);
  } else {
    steps.push([CLUSTER_KINDS, '-l', PART_OF], ['namespace', namespace], ['customresourcedefinitions', '-l', PART_OF]);
  }
  for (const step of steps) {
    say(`kubectl delete ${step.join(' ')}`);
    const code = await runKubectl([...base, ...step], env);
    if (code !== 0) return code;
  }
  say('done');
  return 0;
}
