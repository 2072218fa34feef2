/**
 * What every user of a box (the box tests, bench/peers) does around it, once: build what a user
 * builds (`npm run images`, `npx cdk8s synth`), drive the box CLI, talk to the box with its kubectl,
 * install Juneau from the synthesized manifests as a user does, and run the project's echo image.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, Chart, YamlOutputType } from 'cdk8s';
import { INSTALL } from '../../api/constants';
import { JuneauInstall, type JuneauInstallProps } from '../../constructs/cdk8s';
import { ECHO_HTTP_PORT, ECHO_IMAGE, ECHO_UDP_PORT } from '../../scripts/images/echo';
import { runKubectl } from '../cluster/kubectl';
import { REPO_ROOT } from '../cluster/paths';
import { describeAsRootFor } from '../requirements';
import { sleep } from '../sleep';
import { bashIn, cmd } from './exec';
import type { BoxState } from './state';

const CLI = path.join(REPO_ROOT, 'test', 'cluster', 'cli.ts');
/** The archive `npm run images` writes. */
export const IMAGE = path.join(REPO_ROOT, 'build', 'images', 'juneau.oci.tar');
/** The echo image's archive (scripts/images/echo.ts), beside IMAGE; written by the box project's global setup. */
export const ECHO_ARCHIVE = path.join(REPO_ROOT, 'build', 'images', 'echo.oci.tar');
export const DIST = (f: string) => path.join(REPO_ROOT, 'dist', f);
/** `kubectl apply`'s file arguments for the install as `npx cdk8s synth` writes it. */
export const INSTALL_FILES = ['-f', DIST('juneau-crds.k8s.yaml'), '-f', DIST('juneau-install.k8s.yaml')];

/** Network namespaces, cgroups and mounts need root; elsewhere skipped saying so, or failing under CI=true. */
export const describeOnBox = describeAsRootFor('network and mount namespaces, kubelets, containerd');

/** kubectl against a box: stdout, or an error carrying stderr. */
export type Kubectl = (args: string[], input?: string) => Promise<string>;

/** What `cluster status --json` prints. */
export interface BoxStatus {
  readonly binDir: string;
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly box: BoxState;
}

/** The box CLI (test/cluster/cli.ts) on the box in `dir`, as a user runs it; its stdout. */
export function boxCli(dir: string, args: string[], stderr: 'pipe' | 'inherit' = 'pipe'): string {
  return execFileSync(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, JUNEAU_CLUSTER_DIR: dir },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', stderr],
    maxBuffer: 64 << 20,
  });
}

/** Deletes the network namespaces the test added (those set), takes the box in `dir` down and removes `work`. */
export async function cleanUpBox(work: string, dir: string, namespaces: readonly string[]): Promise<void> {
  for (const ns of namespaces) if (ns) await cmd('ip', ['netns', 'del', ns]);
  if (fs.existsSync(path.join(dir, 'box.json'))) boxCli(dir, ['down']);
  fs.rmSync(work, { recursive: true, force: true });
}

export const boxStatus = (dir: string, stderr: 'pipe' | 'inherit' = 'pipe'): BoxStatus =>
  JSON.parse(boxCli(dir, ['status', '--json'], stderr)) as BoxStatus;

/**
 * What a user builds from this tree before installing: the image archive and the manifests. The
 * box project's global setup (test/box/global-setup.ts) runs it once for all box suites.
 */
export function buildUserArtifacts(): void {
  execFileSync('npm', ['run', '-s', 'images'], { cwd: REPO_ROOT, stdio: ['ignore', process.stderr, 'inherit'] });
  execFileSync('npx', ['cdk8s', 'synth'], {
    cwd: REPO_ROOT,
    env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/**
 * `kubectl apply`'s file arguments for the install with `props`, as a user's cdk8s app
 * synthesizes it (synth/main.ts with those props: a Chart holding a JuneauInstall) into `dir`, and
 * the CRDs `npx cdk8s synth` wrote.
 */
export function synthInstall(dir: string, props: JuneauInstallProps): string[] {
  const app = new App({ outdir: dir, outputFileExtension: '.k8s.yaml', yamlOutputType: YamlOutputType.FILE_PER_CHART });
  const chart = new Chart(app, 'juneau-install', { disableResourceNameHashes: true });
  new JuneauInstall(chart, 'juneau', { ...props, includeCrds: false });
  app.synth();
  return ['-f', DIST('juneau-crds.k8s.yaml'), '-f', path.join(dir, 'juneau-install.k8s.yaml')];
}

export function kubectlFor(status: Pick<BoxStatus, 'binDir' | 'kubeconfigPath'>): Kubectl {
  return async (args, input) => {
    const r = await runKubectl(status.binDir, status.kubeconfigPath, args, { input });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
}

/** The parts of a Pod the box tests read. */
export interface PodJson {
  metadata: { name: string; uid: string };
  spec: {
    nodeName?: string;
    containers: Array<{ securityContext?: { capabilities?: { add?: string[]; drop?: string[] } } }>;
    volumes?: Array<{ hostPath?: { path: string } }>;
  };
  status: {
    phase: string;
    podIP?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{ ready: boolean; restartCount: number }>;
  };
}

/** `kubectl get pods -l selector [--field-selector …] -o json`, its items. */
export async function listPods(
  kubectl: Kubectl,
  namespace: string,
  selector: string,
  fieldSelector?: string,
): Promise<PodJson[]> {
  const args = ['-n', namespace, 'get', 'pods', '-l', selector, '-o', 'json'];
  if (fieldSelector) args.push('--field-selector', fieldSelector);
  return (JSON.parse(await kubectl(args)) as { items: PodJson[] }).items;
}

/** The juneau-agent Pods, or the one on `node`. */
export const agentPods = (kubectl: Kubectl, node?: string): Promise<PodJson[]> =>
  listPods(
    kubectl,
    INSTALL.namespace,
    'app.kubernetes.io/name=juneau-agent',
    node ? `spec.nodeName=${node}` : undefined,
  );

/**
 * Reads the restart count of `node`'s agent container now; the check returned is true once that
 * container has restarted since and is Ready again: the end of a window without the agent.
 */
export async function agentBackAfterRestart(kubectl: Kubectl, node: string): Promise<() => Promise<boolean>> {
  const status = async () => (await agentPods(kubectl, node))[0]?.status.containerStatuses?.[0];
  const before = (await status())?.restartCount;
  if (before === undefined) throw new Error(`no agent container status on ${node}`);
  return async () => {
    const st = await status();
    return !!st && st.restartCount > before && st.ready;
  };
}

/** kubectl's arguments that run `kubectl-juneau ARGS` in the agent Pod `pod` (the agent's image carries the plugin). */
export const juneauInAgent = (pod: string, args: readonly string[]): string[] => [
  '-n',
  INSTALL.namespace,
  'exec',
  pod,
  '-c',
  'agent',
  '--',
  'kubectl-juneau',
  ...args,
];

/** `kubectl apply --server-side` of the synthesized install (`files`: `synthInstall`'s), then both rollouts. */
export async function installJuneau(
  kubectl: Kubectl,
  namespace: string = INSTALL.namespace,
  files: readonly string[] = INSTALL_FILES,
): Promise<void> {
  await kubectl(['apply', '--server-side', ...files]);
  await kubectl(['-n', namespace, 'rollout', 'status', 'deployment/juneau-controller', '--timeout=300s']);
  await kubectl(['-n', namespace, 'rollout', 'status', 'daemonset/juneau-agent', '--timeout=300s']);
}

/**
 * An arp AddressPool over `addresses` and the ExternalNetwork over it, as YAML documents ending in
 * a newline. The box tests put the pool in the nodes' own segment (EN-12): `.240-.250` by default.
 */
export function arpNetworkYaml(
  segment: string,
  o: { readonly pool?: string; readonly network?: string; readonly addresses?: string } = {},
): string {
  const pool = o.pool ?? 'box-pool';
  return `apiVersion: juneau.loutres.me/v1alpha1
kind: AddressPool
metadata: { name: ${pool} }
spec: { addresses: ["${o.addresses ?? `${segment}.240-${segment}.250`}"], advertiseMode: arp }
---
apiVersion: juneau.loutres.me/v1alpha1
kind: ExternalNetwork
metadata: { name: ${o.network ?? 'box-net'} }
spec: { addressPools: [${pool}], type: arp }
`;
}

export interface EchoDeploymentOptions {
  /** @default 'echo' */
  readonly name?: string;
  /** The nodes its pods may run on, at most one per node (anti-affinity on `app: echo`). */
  readonly nodes: readonly string[];
  /** @default nodes.length */
  readonly replicas?: number;
  /** Labels its pods and selector carry besides `app: echo`. @default none */
  readonly labels?: Readonly<Record<string, string>>;
  /** Whether the UDP echo port is declared too. @default false */
  readonly udp?: boolean;
}

/** A Deployment of the project's echo image (scripts/images/echo.ts) in `default`, ready once it listens. */
export function echoDeployment(o: EchoDeploymentOptions): string {
  const labels = JSON.stringify({ app: 'echo', ...o.labels });
  const ports = [
    `{ containerPort: ${ECHO_HTTP_PORT}, protocol: TCP }`,
    ...(o.udp ? [`{ containerPort: ${ECHO_UDP_PORT}, protocol: UDP }`] : []),
  ];
  return `apiVersion: apps/v1
kind: Deployment
metadata: { name: ${o.name ?? 'echo'}, namespace: default }
spec:
  replicas: ${o.replicas ?? o.nodes.length}
  selector: { matchLabels: ${labels} }
  template:
    metadata: { labels: ${labels} }
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{ matchExpressions: [{ key: kubernetes.io/hostname, operator: In, values: ${JSON.stringify(o.nodes)} }] }]
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: kubernetes.io/hostname, labelSelector: { matchLabels: { app: echo } } }]
      containers:
        - name: echo
          image: ${ECHO_IMAGE}
          imagePullPolicy: Never
          env:
            - { name: POD_NAME, valueFrom: { fieldRef: { fieldPath: metadata.name } } }
            - { name: NODE_NAME, valueFrom: { fieldRef: { fieldPath: spec.nodeName } } }
          ports: [${ports.join(', ')}]
          readinessProbe: { tcpSocket: { port: ${ECHO_HTTP_PORT} }, periodSeconds: 2 }
`;
}

/**
 * The LoadBalancer Service `name` (default `echo`) in `default` over the `app: echo` pods,
 * `externalTrafficPolicy: Local` (or `trafficPolicy`: Cluster is allowed on bgp networks, BGP-3),
 * its address `vip` from the ExternalNetwork `network`: HTTP on 80, and with `udp` the UDP echo on
 * 7. YAML ending in a newline.
 */
export function echoServiceYaml(o: {
  readonly network: string;
  readonly vip: string;
  readonly udp?: boolean;
  readonly name?: string;
  readonly trafficPolicy?: 'Local' | 'Cluster';
}): string {
  const ports = [
    `{ name: http, port: 80, protocol: TCP, targetPort: ${ECHO_HTTP_PORT} }`,
    ...(o.udp ? [`{ name: echo, port: 7, protocol: UDP, targetPort: ${ECHO_UDP_PORT} }`] : []),
  ];
  return `apiVersion: v1
kind: Service
metadata:
  name: ${o.name ?? 'echo'}
  namespace: default
  annotations:
    juneau.loutres.me/load-balancer-external-network: ${o.network}
    juneau.loutres.me/load-balancer-requested-ip: ${o.vip}
spec:
  type: LoadBalancer
  loadBalancerClass: juneau.loutres.me/load-balancer
  externalTrafficPolicy: ${o.trafficPolicy ?? 'Local'}
  selector: { app: echo }
  ports: [${ports.join(', ')}]
`;
}

/** Polls `probe` until it returns a value; throws naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  for (const end = Date.now() + timeoutMs; ; await sleep(200)) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
  }
}

/** A bare Pod of the echo image in `default` on `node`, labelled `app: NAME`; `annotations` make it
 * a Juneau NIC (networks) or a direct ElasticIP holder. */
export function echoPod(name: string, node: string, annotations: Record<string, string> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', annotations, labels: { app: name } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'echo',
          image: ECHO_IMAGE,
          imagePullPolicy: 'Never',
          env: [
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          ],
          ports: [{ containerPort: ECHO_HTTP_PORT, protocol: 'TCP' }],
          readinessProbe: { tcpSocket: { port: ECHO_HTTP_PORT }, periodSeconds: 1 },
        },
      ],
    },
  });
}

/** The Pod `name` in `default`. */
export const getPod = async (kubectl: Kubectl, name: string): Promise<PodJson> =>
  JSON.parse(await kubectl(['get', 'pod', name, '-o', 'json'])) as PodJson;

/** The Pod `name` in `default`, once Running and ready. */
export const podReady = (kubectl: Kubectl, name: string): Promise<PodJson> =>
  until(`pod ${name} Ready`, async () => {
    const p = await getPod(kubectl, name);
    return p.status.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined;
  });

/** An ElasticIP `name` in `default` on `network`, with its ElasticIPAttachment `name` to
 * `networkInterface` (POD.IFACE) when given: YAML documents ending in a newline. */
export function elasticIpYaml(name: string, network: string, networkInterface?: string): string {
  const eip = `apiVersion: juneau.loutres.me/v1alpha1
kind: ElasticIP
metadata: { name: ${name}, namespace: default }
spec: { externalNetwork: ${network} }
`;
  if (!networkInterface) return eip;
  return `${eip}---
apiVersion: juneau.loutres.me/v1alpha1
kind: ElasticIPAttachment
metadata: { name: ${name}, namespace: default }
spec: { elasticIP: ${name}, networkInterface: ${networkInterface} }
`;
}

/** The address of the ElasticIP `name` in `default`, once Attached. */
export const elasticIpAddress = (kubectl: Kubectl, name: string): Promise<string> =>
  until(`ElasticIP ${name} Attached with an address`, async () => {
    const e = JSON.parse(await kubectl(['get', 'elasticip', name, '-o', 'json'])) as {
      status?: { phase?: string; address?: string };
    };
    return e.status?.phase === 'Attached' ? e.status.address : undefined;
  });

/** Adds `args` to the juneau-agent container's arguments and waits for the DaemonSet's rollout. */
export async function addAgentArgs(
  kubectl: Kubectl,
  args: readonly string[],
  namespace = INSTALL.namespace,
): Promise<void> {
  const patch = args.map((value) => ({ op: 'add', path: '/spec/template/spec/containers/0/args/-', value }));
  await kubectl(['-n', namespace, 'patch', 'daemonset', 'juneau-agent', '--type=json', '-p', JSON.stringify(patch)]);
  await kubectl(['-n', namespace, 'rollout', 'status', 'daemonset/juneau-agent', '--timeout=300s']);
}

/** The juneau-agent container's arguments in the DaemonSet. */
export async function agentArgs(kubectl: Kubectl, namespace = INSTALL.namespace): Promise<string[]> {
  const ds = JSON.parse(await kubectl(['-n', namespace, 'get', 'daemonset', 'juneau-agent', '-o', 'json'])) as {
    spec: { template: { spec: { containers: Array<{ args?: string[] }> } } };
  };
  return ds.spec.template.spec.containers[0].args ?? [];
}

/** Sets the juneau-agent container's arguments to `args` and waits for the DaemonSet's rollout. */
export async function setAgentArgs(kubectl: Kubectl, args: readonly string[], namespace = INSTALL.namespace) {
  const patch = [{ op: 'replace', path: '/spec/template/spec/containers/0/args', value: args }];
  await kubectl(['-n', namespace, 'patch', 'daemonset', 'juneau-agent', '--type=json', '-p', JSON.stringify(patch)]);
  await kubectl(['-n', namespace, 'rollout', 'status', 'daemonset/juneau-agent', '--timeout=300s']);
}

/** The nodes the ARPAdvertisements of `address` name (one, or none). */
export async function advertisedNodes(kubectl: Kubectl, address: string): Promise<string[]> {
  const list = JSON.parse(await kubectl(['get', 'arpadvertisements', '-o', 'json'])) as {
    items: Array<{ spec: { address: string; nodeName: string } }>;
  };
  return list.items.filter((a) => a.spec.address === address).map((a) => a.spec.nodeName);
}

/** curl's exit codes that mean the address gave no answer: 7 refused or unreachable, 28 timeout, 52 empty reply, 56 reset. */
const CURL_NO_ANSWER = new Set([7, 28, 52, 56]);

/**
 * One HTTP GET with curl from `netns`: the body, or '' when no answer came within `seconds` (one of
 * CURL_NO_ANSWER). Any other failure throws (a bad URL, a missing namespace, curl not found): a
 * probe's error never reads as "nobody answered".
 */
export async function httpGetIn(netns: string, url: string, seconds = 2, before = ''): Promise<string> {
  const out = await bashIn(
    netns,
    `set -e; ${before}\nr=0; curl -sS -m ${seconds} ${url} 2>&1 || r=$?; echo; echo "curl=$r"`,
  );
  const m = /\ncurl=(\d+)\n?$/.exec(out);
  if (!m) throw new Error(`GET ${url} from ${netns}: no curl status in ${JSON.stringify(out)}`);
  const code = Number(m[1]);
  const body = out.slice(0, m.index).replace(/\n$/, '');
  if (code === 0) return body.trim();
  if (CURL_NO_ANSWER.has(code)) return '';
  throw new Error(`GET ${url} from ${netns} failed (curl exit ${code}): ${body}`);
}

/** One HTTP GET from the router namespace after it forgets the address's MAC (a router that
 * re-resolves: ARP-8 sends no gratuitous ARP): the page, or '' when unanswered (2 s); any other error throws. */
export const routerGet = (router: string, ip: string): Promise<string> =>
  httpGetIn(router, `http://${ip}:${ECHO_HTTP_PORT}/`, 2, `ip neigh flush to ${ip} dev eth0`);

/**
 * One HTTP(S) GET by the echo image's Node.js in pod `name`: the body (`body`) or the status line
 * (`status`: `status=NNN`, any answer; the certificate is not checked), or `ERROR <why>` when no
 * answer came within 5 s.
 */
export async function getFromPod(kubectl: Kubectl, name: string, url: string, print: 'body' | 'status' = 'body') {
  const module = url.startsWith('https:') ? 'node:https' : 'node:http';
  const onAnswer =
    print === 'body'
      ? '(res) => res.pipe(process.stdout)'
      : // The answer is all this wants: the socket's idle timeout must not fire after it.
        "(res) => { console.log('status=' + res.statusCode); process.exit(0); }";
  return (
    await kubectl([
      'exec',
      name,
      '--',
      'node',
      '-e',
      `const r = require('${module}').get(${JSON.stringify(url)}, { timeout: 5000, rejectUnauthorized: false }, ${onAnswer});
r.on('timeout', () => r.destroy(new Error('no answer within 5 s'))).on('error', (e) => console.log('ERROR ' + e.message));`,
    ])
  ).trim();
}
