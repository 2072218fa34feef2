// How the box tests with echo pods begin and end (traffic, scenarios, nat, nat-in-cluster):
// build what a user builds and the echo image (scripts/images/echo.ts), `up` a box with both
// images imported, add a router namespace on the nodes' segment and install Juneau; at the end,
// remove the namespaces the test added and take the box down.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildEchoImage } from '../../scripts/images/echo';
import { REPO_ROOT } from '../cluster/paths';
import { elapsedSince, figure } from '../e2e/figures';
import { cmd } from './exec';
import type { BoxState } from './state';
import { addRouter } from './upstream';
import {
  boxCli,
  boxStatus,
  buildUserArtifacts,
  IMAGE,
  installJuneau,
  kubectlFor,
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

/** Builds, brings a box up in `dir` (a folder of `work`), adds the router and installs Juneau. */
export async function upEchoBox(work: string, dir: string, o: EchoBoxOptions): Promise<EchoBox> {
  buildUserArtifacts();
  const echo = path.join(work, 'echo.oci.tar');
  fs.writeFileSync(echo, (await buildEchoImage(REPO_ROOT)).archive);
  const t0 = Date.now();
  const subnet = o.nodeSubnet ? ['--node-subnet', `${o.nodeSubnet}.0/24`] : [];
  boxCli(dir, ['up', '--nodes', String(o.nodes), ...subnet, '--images', `${IMAGE},${echo}`, ...(o.upArgs ?? [])]);
  figure(
    `${o.label}: cluster up --nodes ${o.nodes} (${o.upNote ?? 'Juneau and echo images imported'})`,
    elapsedSince(t0),
  );
  const status = boxStatus(dir);
  const kubectl = kubectlFor(status);
  const routerIp = `${status.box.segment}.254`;
  const router = await addRouter(status.box, routerIp);
  const tInstall = Date.now();
  await installJuneau(kubectl);
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

/** Deletes the network namespaces the test added (those set), takes the box in `dir` down and removes `work`. */
export async function downEchoBox(work: string, dir: string, namespaces: readonly string[]): Promise<void> {
  for (const ns of namespaces) if (ns) await cmd('ip', ['netns', 'del', ns]);
  if (fs.existsSync(path.join(dir, 'box.json'))) boxCli(dir, ['down']);
  fs.rmSync(work, { recursive: true, force: true });
}
