// What the NAT box tests (test/box/nat*.test.ts) share: a box with the Juneau and echo images and a
// router namespace on its segment, bare Pods of the echo image (scripts/images/echo.ts) pinned to a
// node and their readiness, the ElasticIP `web` attached to the pod `web`, and Node.js run inside a
// pod to open a connection from the pod's own network stack.
import * as path from 'node:path';
import * as fs from 'node:fs';
import { buildEchoImage, ECHO_HTTP_PORT, ECHO_IMAGE } from '../../scripts/images/echo';
import { REPO_ROOT } from '../cluster/paths';
import { elapsedSince, figure } from '../e2e/figures';
import { sleep } from '../sleep';
import { cmd } from './exec';
import type { BoxState } from './state';
import { addRouter } from './upstream';
import {
  arpNetworkYaml,
  boxCli,
  boxStatus,
  buildUserArtifacts,
  IMAGE,
  installJuneau,
  kubectlFor,
  type BoxStatus,
  type Kubectl,
  type PodJson,
} from './session';

export interface NatBox {
  readonly status: BoxStatus;
  readonly box: BoxState;
  readonly kubectl: Kubectl;
  /** kubectl's binary and its --kubeconfig arguments, for long-running `kubectl exec`. */
  readonly kubectlBin: string;
  readonly kubectlArgs: string[];
  /** The router namespace at the segment's .254 (upstream.ts addRouter). */
  readonly router: string;
  readonly routerIp: string;
}

/** `cluster up` in `dir` with the Juneau and echo images (figure named by `label`), the router
 * namespace, and Juneau installed from the synthesized manifest. */
export async function upNatBox(dir: string, nodes: number, label: string): Promise<NatBox> {
  buildUserArtifacts();
  const echo = path.join(path.dirname(dir), 'echo.oci.tar');
  fs.writeFileSync(echo, (await buildEchoImage(REPO_ROOT)).archive);
  const t0 = Date.now();
  boxCli(dir, ['up', '--nodes', String(nodes), '--images', `${IMAGE},${echo}`]);
  figure(`${label} box: cluster up --nodes ${nodes} (Juneau and echo images imported)`, elapsedSince(t0));
  const status = boxStatus(dir);
  const routerIp = `${status.box.segment}.254`;
  const router = await addRouter(status.box, routerIp);
  const kubectl = kubectlFor(status);
  const tInstall = Date.now();
  await installJuneau(kubectl);
  figure(`${label} box: install kubectl apply -> controller and agents rolled out`, elapsedSince(tInstall));
  return {
    status,
    box: status.box,
    kubectl,
    kubectlBin: path.join(status.binDir, 'kubectl'),
    kubectlArgs: ['--kubeconfig', status.kubeconfigPath],
    router,
    routerIp,
  };
}

/** The router namespace and the box of `dir` removed (whichever exists). */
export async function downNatBox(dir: string, router: string | undefined): Promise<void> {
  if (router) await cmd('ip', ['netns', 'del', router]);
  if (fs.existsSync(path.join(dir, 'box.json'))) boxCli(dir, ['down']);
}

/** The box's ExternalNetwork and pool (EN-12: on the nodes' own subnet), and the ElasticIP `web`
 * attached through the NetworkInterface `web.eth0` (the echo pod `web` with WEB_NETWORKS). */
export function webElasticIPYaml(segment: string): string {
  return `${arpNetworkYaml(segment)}---
apiVersion: juneau.loutres.me/v1alpha1
kind: ElasticIP
metadata: { name: web, namespace: default }
spec: { externalNetwork: box-net }
---
apiVersion: juneau.loutres.me/v1alpha1
kind: ElasticIPAttachment
metadata: { name: web, namespace: default }
spec: { elasticIP: web, networkInterface: web.eth0 }
`;
}

/** The annotation that gives a pod its Juneau NetworkInterface on eth0. */
export const WEB_NETWORKS = { 'juneau.loutres.me/networks': '[{"interface":"eth0"}]' };

/** The address of ElasticIP `name` once Attached. */
export function attachedElasticIP(kubectl: Kubectl, name: string): Promise<string> {
  return until(`ElasticIP ${name} Attached with an address`, async () => {
    const e = JSON.parse(await kubectl(['get', 'elasticip', name, '-o', 'json'])) as {
      status?: { phase?: string; address?: string };
    };
    return e.status?.phase === 'Attached' ? e.status.address : undefined;
  });
}

/** One HTTP GET from the router namespace after it forgets the address's MAC (a router that
 * re-resolves: ARP-8 sends no gratuitous ARP): the page, or '' (2 s). */
export async function routerGet(router: string, ip: string): Promise<string> {
  const script = `ip neigh flush to ${ip} dev eth0; curl -s -m 2 http://${ip}:${ECHO_HTTP_PORT}/ || true`;
  return (await cmd('nsenter', [`--net=/var/run/netns/${router}`, 'bash', '--norc', '-c', script])).trim();
}

/** A bare echo Pod pinned to `node`. */
export function echoPod(name: string, node: string, annotations: Record<string, string>): string {
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

/** Polls `probe` until it returns a value; throws naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
  for (const end = Date.now() + timeoutMs; ; await sleep(200)) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
  }
}

/** The pod `name`, once Running and ready. */
export function runningPod(kubectl: Kubectl, name: string): Promise<PodJson> {
  return until(`pod ${name} Ready`, async () => {
    const p = JSON.parse(await kubectl(['get', 'pod', name, '-o', 'json'])) as PodJson;
    return p.status.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined;
  });
}

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
