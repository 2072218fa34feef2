// How the box tests with echo pods begin and end (traffic, scenarios, nat, nat-in-cluster,
// nat-kubernetes-service), around their describe block (`sharedEchoBox`): `up` a box with the
// images the box project's global setup built (Juneau's, the echo image) imported, add a router
// namespace on the nodes' segment and install Juneau; at the end, remove the namespaces the test
// added and take the box down.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { JuneauInstallProps } from '../../constructs/cdk8s';
import { elapsedSince, figure } from '../shared/figures';
import { bashIn } from './exec';
import type { BoxState } from './state';
import { addRouter } from './upstream';
import { REPO_ROOT } from '../cluster/paths';
import {
  arpNetworkYaml,
  boxCli,
  boxStatus,
  cleanUpBox,
  ECHO_ARCHIVE,
  echoPod,
  elasticIpAddress,
  elasticIpYaml,
  IMAGE,
  installJuneau,
  kubectlFor,
  podReady,
  routerGet,
  synthInstall,
  until,
  type BoxStatus,
  type Kubectl,
} from './session';

export interface EchoBoxOptions {
  readonly nodes: number;
  /** What the figures are named after, e.g. 'nat box'. */
  readonly label: string;
  /** The nodes' /24 (`up --node-subnet A.B.C.0/24`). @default the one `up` picks */
  readonly nodeSubnet?: string;
  /** More `up` arguments. @default none */
  readonly upArgs?: readonly string[];
  /** What the `up` figure says was done besides. @default 'Juneau and echo images imported' */
  readonly upNote?: string;
  /** The install's options (`synthInstall`), e.g. `{ bgpDaemon: true }`. @default the manifest of `npx cdk8s synth` */
  readonly install?: JuneauInstallProps;
}

/** A box up with Juneau installed and a router at .254 of the nodes' segment. */
export interface EchoBox {
  readonly status: BoxStatus;
  readonly box: BoxState;
  readonly kubectl: Kubectl;
  /** kubectl's binary and its arguments to reach the box, for a process the test streams. */
  readonly kubectlBin: string;
  readonly kubectlArgs: string[];
  readonly router: string;
  readonly routerIp: string;
}

/** Brings a box up in `dir` (a folder of `work`) with the global setup's images, adds the router and installs Juneau. */
async function upEchoBox(work: string, dir: string, o: EchoBoxOptions): Promise<EchoBox> {
  for (const archive of [IMAGE, ECHO_ARCHIVE])
    if (!fs.existsSync(archive))
      throw new Error(`${archive} is missing: the box project's global setup (test/box/global-setup.ts) builds it`);
  const t0 = Date.now();
  const subnet = o.nodeSubnet ? ['--node-subnet', `${o.nodeSubnet}.0/24`] : [];
  boxCli(dir, [
    'up',
    '--nodes',
    String(o.nodes),
    ...subnet,
    '--images',
    `${IMAGE},${ECHO_ARCHIVE}`,
    ...(o.upArgs ?? []),
  ]);
  figure(
    `${o.label}: cluster up --nodes ${o.nodes} (${o.upNote ?? 'Juneau and echo images imported'})`,
    elapsedSince(t0),
  );
  const status = boxStatus(dir);
  const kubectl = kubectlFor(status);
  const routerIp = `${status.box.segment}.254`;
  const router = await addRouter(status.box, routerIp);
  const tInstall = Date.now();
  await installJuneau(kubectl, o.install?.namespace, o.install ? synthInstall(work, o.install) : undefined);
  figure(`${o.label}: install kubectl apply -> controller and agents rolled out`, elapsedSince(tInstall));
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

/** The echo box a describe block shares (`sharedEchoBox`): its folders at once, the rest once its beforeAll ran. */
export interface SharedEchoBox extends EchoBox {
  /** The test's folder (removed at the end), and the box's in it. */
  readonly work: string;
  readonly dir: string;
  /** Network namespaces the test adds (a server behind the router), deleted before the router at the end. */
  readonly namespaces: string[];
  /** A bash script in the router namespace: its stdout. @default timeoutMs 120 s */
  inRouter(script: string, timeoutMs?: number): Promise<string>;
}

/**
 * The echo box of the describe block that calls it: a folder `<tmp>/<prefix>…` made now, the box up
 * (`upEchoBox`) in a beforeAll registered before the block's own, and down (`cleanUpBox`) in an
 * afterAll. `options` may be made from the folder (an audit policy written there), when the
 * beforeAll runs.
 */
export function sharedEchoBox(
  prefix: string,
  options: EchoBoxOptions | ((work: string) => EchoBoxOptions),
): SharedEchoBox {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const dir = path.join(work, 'cluster');
  let up: EchoBox | undefined;
  const current = (): EchoBox => {
    if (!up) throw new Error(`the echo box in ${dir} is not up (its beforeAll has not run, or failed)`);
    return up;
  };
  const shared: SharedEchoBox = {
    work,
    dir,
    namespaces: [],
    get status() {
      return current().status;
    },
    get box() {
      return current().box;
    },
    // Functions, not getters (as inRouter): `const { kubectl } = …` in the describe block, before the box is up.
    kubectl: (args, input) => current().kubectl(args, input),
    get kubectlBin() {
      return current().kubectlBin;
    },
    get kubectlArgs() {
      return current().kubectlArgs;
    },
    get router() {
      return current().router;
    },
    get routerIp() {
      return current().routerIp;
    },
    inRouter: (script, timeoutMs) => bashIn(current().router, script, timeoutMs),
  };
  beforeAll(async () => {
    up = await upEchoBox(work, dir, typeof options === 'function' ? options(work) : options);
  });
  afterAll(() => cleanUpBox(work, dir, [...shared.namespaces, up?.router ?? '']));
  return shared;
}

/** The annotation that makes an echo pod's eth0 a Juneau NetworkInterface (`<pod>.eth0`). */
export const ETH0_NIC = { 'juneau.loutres.me/networks': '[{"interface":"eth0"}]' };

/**
 * What the NAT tests start from: the pool and network of the box's segment (`arpNetworkYaml`), the
 * ElasticIP `web` attached to `web.eth0`, and the echo pod `web` on `node` with that interface. Once
 * the ElasticIP has its address and the pod is ready, the router's GETs (re-resolving each time)
 * until one reaches the pod through it: the ElasticIP is translated on the pod's node. Its address.
 */
export async function webBehindElasticIp(echoBox: EchoBox, node: string): Promise<string> {
  const { kubectl } = echoBox;
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    `${arpNetworkYaml(echoBox.box.segment)}---\n${elasticIpYaml('web', 'box-net', 'web.eth0')}`,
  );
  await kubectl(['apply', '--server-side', '-f', '-'], echoPod('web', node, ETH0_NIC));
  const eip = await elasticIpAddress(kubectl, 'web');
  await podReady(kubectl, 'web');
  await until(`HTTP through ElasticIP ${eip}`, async () =>
    (await routerGet(echoBox.router, eip)).startsWith('client=') ? true : undefined,
  );
  return eip;
}

/** `kubectl juneau ARGS` as a user runs it on the box: the bundled plugin, with the box's kubeconfig and kubectl. */
export const kubectlJuneau =
  (echoBox: Pick<EchoBox, 'kubectlArgs' | 'kubectlBin'>) =>
  (args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) =>
      execFile(
        process.execPath,
        [path.join(REPO_ROOT, 'build', 'bin', 'kubectl-juneau.js'), ...echoBox.kubectlArgs, ...args],
        { env: { ...process.env, KUBECTL: echoBox.kubectlBin } },
        (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: unknown }).code ?? -1) : 0, stdout, stderr }),
      ),
    );
