// MetalLB L2 on the cluster in a box: its real speaker and controller, built from the Go module
// pinned in bench/peers/go.mod (bench/peers/build.sh), its CRDs from that module's config/crd,
// an IPAddressPool + L2Advertisement. The binaries run as host processes: the controller in the
// host namespace (as FACTS.md tried it: no webhook), one speaker per node inside the node's
// network namespace (`nsenter --net`), so it sees exactly the node's interfaces and its
// memberlist binds the node's address. What a DaemonSet would give each speaker and a host
// process lacks, the bench provides for real: the speaker looks up its own Pod (`--pod-name`) and
// finds its memberlist peers by listing Pods with its labels, so each node gets a hostNetwork Pod
// of the box's pause image (run by the node's kubelet; its podIP is the node's address).
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sleep } from '../../test/sleep';
import { PAUSE_IMAGE } from '../../test/box/images';
import { BoxState } from '../../test/box/state';
import type { Kubectl } from '../../test/box/session';

export const METALLB_NS = 'metallb-system';
const BUILD = path.join(__dirname, 'build.sh');
const ML_PORT = 7946;

export interface MetalLB {
  readonly version: string;
  readonly controller: ChildProcess;
  /** One speaker per node, by node name. */
  readonly speakers: Map<string, ChildProcess>;
  /** Starts `node`'s speaker again (after a crash the bench caused). */
  restartSpeaker(node: string): void;
  stop(): Promise<void>;
}

/** Builds (or finds cached) the speaker and controller; returns the binaries' and the module's directories. */
export function buildMetalLB(): { binDir: string; moduleDir: string; version: string } {
  execFileSync('bash', [BUILD], { stdio: ['ignore', process.stderr, 'inherit'] });
  const binDir = execFileSync('bash', [BUILD, '--print-dir'], { encoding: 'utf8' }).trim();
  const moduleDir = execFileSync('bash', [BUILD, '--print-module-dir'], { encoding: 'utf8' }).trim();
  return { binDir, moduleDir, version: path.basename(binDir).replace(/^metallb-/, '') };
}

function speakerPods(box: BoxState): string {
  return box.nodes
    .map(
      (n) => `apiVersion: v1
kind: Pod
metadata:
  name: speaker-${n.name}
  namespace: ${METALLB_NS}
  labels: { app: metallb, component: speaker }
spec:
  nodeName: ${n.name}
  hostNetwork: true
  tolerations: [{ operator: Exists }]
  containers: [{ name: identity, image: ${PAUSE_IMAGE}, imagePullPolicy: Never }]
`,
    )
    .join('---\n');
}

function poolManifest(addresses: string): string {
  return `apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: { name: bench-pool, namespace: ${METALLB_NS} }
spec: { addresses: ["${addresses}"] }
---
apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata: { name: bench-l2, namespace: ${METALLB_NS} }
spec:
  ipAddressPools: [bench-pool]
  # The nodes' segment only: a speaker answers on every broadcast-capable interface that is up.
  interfaces: [eth0]
`;
}

function launch(cmd: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): ChildProcess {
  const out = fs.openSync(logFile, 'a');
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  await exited;
}

/**
 * Installs MetalLB's CRDs, pool and advertisement and starts its controller and one speaker per
 * node. `kubeconfig` must name a server the nodes can reach (the box's API server address).
 */
export async function startMetalLB(opts: {
  box: BoxState;
  kubectl: Kubectl;
  kubeconfig: string;
  addresses: string;
  work: string;
}): Promise<MetalLB> {
  const { box, kubectl, kubeconfig, work } = opts;
  const { binDir, moduleDir, version } = buildMetalLB();
  await kubectl(['create', 'namespace', METALLB_NS]);
  const crdDir = path.join(moduleDir, 'config', 'crd', 'bases');
  for (const f of fs
    .readdirSync(crdDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    await kubectl(['apply', '--server-side', '-f', path.join(crdDir, f)]);
  }
  await kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/ipaddresspools.metallb.io',
    'crd/l2advertisements.metallb.io',
  ]);
  await kubectl(['apply', '--server-side', '-f', '-'], poolManifest(opts.addresses));
  await kubectl(['apply', '--server-side', '-f', '-'], speakerPods(box));
  await kubectl(['-n', METALLB_NS, 'wait', '--for=condition=Ready', '--timeout=180s', 'pod', '-l', 'app=metallb']);

  // memberlist's shared key, as the controller's Secret would hold it (a file `secretkey`).
  const keyDir = path.join(work, 'metallb-memberlist');
  fs.mkdirSync(keyDir, { recursive: true });
  fs.writeFileSync(path.join(keyDir, 'secretkey'), randomBytes(16).toString('hex'));

  const env = { KUBECONFIG: kubeconfig };
  const controller = launch(
    path.join(binDir, 'controller'),
    [`--namespace=${METALLB_NS}`, '--webhook-mode=disabled', '--disable-cert-rotation', `--port=${17472 + box.subnet}`],
    env,
    path.join(work, 'metallb-controller.log'),
  );
  const speakers = new Map<string, ChildProcess>();
  const startSpeaker = (name: string) => {
    const n = box.nodes.find((x) => x.name === name)!;
    speakers.set(
      n.name,
      launch(
        'nsenter',
        [
          `--net=/var/run/netns/${n.netns}`,
          path.join(binDir, 'speaker'),
          `--namespace=${METALLB_NS}`,
          `--node-name=${n.name}`,
          `--pod-name=speaker-${n.name}`,
          `--host=${n.ip}`,
          `--ml-bindaddr=${n.ip}`,
          `--ml-bindport=${ML_PORT}`,
          '--ml-labels=app=metallb,component=speaker',
          `--ml-secret-key-path=${keyDir}`,
        ],
        env,
        path.join(work, `metallb-speaker-${n.name}.log`),
      ),
    );
  };
  for (const n of box.nodes) startSpeaker(n.name);
  const all = () => [controller, ...speakers.values()];
  await sleep(2000);
  const dead = all().filter((c) => c.exitCode !== null || c.signalCode !== null);
  if (dead.length > 0)
    throw new Error(`MetalLB exited at start (${dead.length} of ${all().length} processes); logs in ${work}`);
  return {
    version,
    controller,
    speakers,
    restartSpeaker: startSpeaker,
    async stop() {
      await Promise.all(all().map(stopChild));
      await kubectl(['delete', 'namespace', METALLB_NS, '--wait=true', '--timeout=120s']);
    },
  };
}
