// The cluster in a box: the harness's control plane (bound to the host's address on the nodes' L2
// segment, ServiceAccount admission on, the controllers a cluster with nodes needs) plus
// kube-scheduler and N real nodes (test/box/node.ts). What it creates is recorded in
// <dir>/box.json before it is created; downBox() removes all of it, also after a crash.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sleep } from '../sleep';
import { Cluster, startCluster } from '../cluster/harness';
import { runKubectl } from '../cluster/kubectl';
import { REPO_ROOT } from '../cluster/paths';
import { commandOf, isAlive, spawnManaged, stopProcesses } from '../cluster/processes';
import { allSteps } from './exec';
import { writePauseImage } from './images';
import { clientKubeconfig } from './kubelet';
import { createBridge, removeNetwork, restoreHostSysctls, saveHostSysctls } from './network';
import { ensureMountNsDir, releaseMountNsDir } from './mounts';
import { removeNode, startNode } from './node';
import {
  BoxRecorder,
  BoxState,
  checkNodeCount,
  newBoxState,
  pauseBinaryName,
  ProcessRecord,
  readBoxState,
  releaseSubnet,
} from './state';

/** Controllers a cluster with real nodes needs, on top of the harness's own. */
export const NODE_CONTROLLERS = [
  'deployment-controller',
  'replicaset-controller',
  'daemonset-controller',
  'node-lifecycle-controller',
  'serviceaccount-controller',
  'root-ca-certificate-publisher-controller',
];
export const NODE_BINARIES = ['kubelet', 'kube-proxy', 'kube-scheduler'];

export interface UpBoxOptions {
  /** The control plane's directory (pki, logs, kubeconfig); box.json is written there too. */
  dir: string;
  nodes: number;
  /** OCI archives imported into every node's containerd (e.g. build/images/*.tar). */
  images?: string[];
  crdFiles?: string[];
  /** The nodes' segment (`parseNodeSubnet`, e.g. `10.225.32`). @default 10.226.k, k the claimed subnet */
  nodeSegment?: string;
  /** How many pod addresses each node's CNI hands out (NodeRecord.podIPs). @default the whole range */
  podIPs?: number;
  /** An API server audit policy file: the audit log is written to `<dir>/logs/audit.log` (test/box/scenarios.test.ts reads what the install's ServiceAccounts asked). @default no audit log */
  auditPolicy?: string;
  log?: (line: string) => void;
  /** @default 300 s: node binaries already built, a busy 2-core machine. */
  timeoutMs?: number;
}

export const boxStateFile = (dir: string) => path.join(dir, 'box.json');
/** Where `up --audit-policy` makes the API server write its audit log. */
export const auditLogPath = (dir: string) => path.join(dir, 'logs', 'audit.log');

/** Builds (or finds in the cache) the node binaries: `build.sh --nodes`, progress to stderr. */
export function buildNodeBinaries(): string {
  const script = path.join(REPO_ROOT, 'test', 'cluster', 'build.sh');
  execFileSync('bash', [script, '--nodes'], { stdio: ['ignore', process.stderr, 'inherit'] });
  return execFileSync('bash', [script, '--print-dir'], { encoding: 'utf8' }).trim();
}

export async function upBox(opts: UpBoxOptions): Promise<{ cluster: Cluster; box: BoxState }> {
  const t0 = Date.now();
  const log = opts.log ?? (() => {});
  const deadline = t0 + (opts.timeoutMs ?? 300_000);
  checkNodeCount(opts.nodes); // before a build that may take many minutes
  const images = (opts.images ?? []).map((f) => path.resolve(f));
  for (const f of images) if (!fs.existsSync(f)) throw new Error(`--images: ${f} does not exist`);
  const binDir = buildNodeBinaries();
  const stateFile = boxStateFile(opts.dir);
  fs.mkdirSync(opts.dir, { recursive: true });
  const rec = new BoxRecorder(stateFile, newBoxState(opts.nodes, stateFile, opts.nodeSegment, opts.podIPs));
  rec.save();
  const state = rec.state;
  let cluster: Cluster | undefined;
  try {
    saveHostSysctls();
    await createBridge(state);
    cluster = await startControlPlane(rec, opts, binDir, log);
    const tControlPlane = Date.now() - t0;
    const controlPlane = { server: cluster.server, pkiDir: path.join(opts.dir, 'pki') };

    const pauseArchive = path.join(state.dataDir, 'images', 'pause.tar');
    await writePauseImage(pauseArchive, path.join(binDir, pauseBinaryName()));
    rec.record((s) => (s.images = images));
    await ensureMountNsDir();
    await Promise.all(
      state.nodes.map((node) =>
        startNode(rec, node, { binDir, controlPlane, images: [pauseArchive, ...images], deadline, log }),
      ),
    );
    const tDaemons = Date.now() - t0;
    await waitForNodesReady(cluster, state, deadline, log);
    await recordPodCidrs(cluster, state);
    rec.record(
      (s) => (s.timings = { controlPlaneMs: tControlPlane, nodesStartedMs: tDaemons, totalMs: Date.now() - t0 }),
    );
    log(
      `box: ${state.nodes.length} node(s) Ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (control plane ${(tControlPlane / 1000).toFixed(1)} s)`,
    );
    return { cluster, box: state };
  } catch (err) {
    log(`box: start failed, removing what was created (${(err as Error).message.split('\n')[0]})`);
    await cluster?.stop();
    const failures = await downBox(opts.dir);
    if (failures.length) log(`box: cleanup after the failed start left problems:\n  ${failures.join('\n  ')}`);
    throw err;
  }
}

/** The harness's control plane, made for nodes: reachable on the box bridge, ServiceAccount
 * admission, the node controllers, system:node bound to the nodes, and kube-scheduler. */
async function startControlPlane(
  rec: BoxRecorder,
  opts: UpBoxOptions,
  binDir: string,
  log: (line: string) => void,
): Promise<Cluster> {
  const pki = (f: string) => path.join(opts.dir, 'pki', f);
  const cluster = await startCluster({
    dir: opts.dir,
    binDir,
    crdFiles: opts.crdFiles,
    persistent: true,
    keepDir: true,
    log,
    apiserverAddress: rec.state.hostIp,
    serviceAccountAdmission: true,
    extraArgs: {
      // The host runs no kube-proxy, so a Service's ClusterIP is not routed here (it would leave by
      // the host's default route): admission webhooks and aggregated APIs are called at one of
      // their Service's ready endpoints instead (pod IPs, routed to their node), as on control
      // planes without kube-proxy.
      'kube-apiserver': [
        '--enable-aggregator-routing=true',
        '--kubelet-preferred-address-types=InternalIP',
        `--kubelet-client-certificate=${pki('admin.crt')}`,
        `--kubelet-client-key=${pki('admin.key')}`,
        ...(opts.auditPolicy
          ? [`--audit-policy-file=${path.resolve(opts.auditPolicy)}`, `--audit-log-path=${auditLogPath(opts.dir)}`]
          : []),
      ],
      // --controllers is a list flag: these add to the harness's.
      'kube-controller-manager': [`--controllers=${NODE_CONTROLLERS.join(',')}`, `--root-ca-file=${pki('ca.crt')}`],
    },
  });
  try {
    // Default RBAC leaves system:node unbound (clusters use the Node authorizer); bind it to every node.
    await kubectlOk(cluster, [
      'create',
      'clusterrolebinding',
      'juneau-box-nodes',
      '--clusterrole=system:node',
      '--group=system:nodes',
    ]);
    await startScheduler(rec, cluster, opts.dir);
    return cluster;
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

async function kubectlOk(cluster: Cluster, args: string[]): Promise<string> {
  const r = await runKubectl(cluster.binDir, cluster.kubeconfigPath, args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return r.stdout;
}

async function startScheduler(rec: BoxRecorder, cluster: Cluster, dir: string): Promise<void> {
  const kubeconfig = await clientKubeconfig(
    { server: cluster.server, pkiDir: path.join(dir, 'pki') },
    'kube-scheduler',
    '/CN=system:kube-scheduler',
    path.join(dir, 'kube-scheduler.kubeconfig'),
  );
  const bin = path.join(cluster.binDir, 'kube-scheduler');
  const logFile = path.join(dir, 'logs', 'kube-scheduler.log');
  const m = spawnManaged(
    bin,
    'kube-scheduler',
    [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--secure-port=0', '--profiling=false'],
    logFile,
    true,
  );
  rec.record((s) => s.processes.push({ name: 'kube-scheduler', pid: m.child.pid!, bin, logFile }));
}

interface NodeJson {
  metadata: { name: string };
  spec: { taints?: Array<{ key: string }> };
  status: { conditions?: Array<{ type: string; status: string }> };
}

/** Every node registered, Ready, and without the not-ready taint (removed by node-lifecycle). */
async function waitForNodesReady(
  cluster: Cluster,
  state: BoxState,
  deadline: number,
  log: (l: string) => void,
): Promise<void> {
  let last = '';
  for (;;) {
    const r = await runKubectl(cluster.binDir, cluster.kubeconfigPath, ['get', 'nodes', '-o', 'json']);
    const nodes = r.code === 0 ? (JSON.parse(r.stdout) as { items: NodeJson[] }).items : [];
    const pending = state.nodes
      .map((n) => {
        const node = nodes.find((o) => o.metadata.name === n.name);
        if (!node) return `${n.name}: not registered`;
        if (!node.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
          return `${n.name}: not Ready`;
        if (node.spec.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready'))
          return `${n.name}: still tainted not-ready`;
        return '';
      })
      .filter(Boolean);
    if (pending.length === 0) return;
    const dead = state.processes.filter((p) => !processAlive(p));
    if (dead.length)
      throw new Error(
        `box: ${dead.map((p) => `${p.node ?? 'host'}/${p.name} (log ${p.logFile})`).join(', ')} exited while waiting for nodes`,
      );
    if (Date.now() > deadline) throw new Error(`box: nodes not Ready in time: ${pending.join('; ')}`);
    if (pending.join() !== last) log(`box: waiting: ${(last = pending.join()).replace(/,/g, '; ')}`);
    await sleep(500);
  }
}

/**
 * Each Node's `spec.podCIDRs` set to the range its CNI config already hands out, as
 * kube-controller-manager's node-ipam (`--allocate-node-cidrs`) records a node's range in a
 * cluster whose CNI reads it from there (flannel, kubenet-like bridges). Set after registration
 * because node-ipam would pick its own ranges, not the fixed ones the box's routes and CNI use; the
 * field can be set once, from empty. Juneau's agents learn the pod ranges from it (NAT-2).
 */
async function recordPodCidrs(cluster: Cluster, state: BoxState): Promise<void> {
  for (const n of state.nodes) {
    const patch = JSON.stringify({ spec: { podCIDR: n.podCidr, podCIDRs: [n.podCidr] } });
    const r = await runKubectl(cluster.binDir, cluster.kubeconfigPath, ['patch', 'node', n.name, '-p', patch]);
    if (r.code !== 0) throw new Error(`box: recording ${n.name}'s pod range ${n.podCidr}: ${r.stderr}`);
  }
}

/** A recorded pid counts only while it still runs the recorded binary (pids get reused). */
export function processAlive(p: ProcessRecord): boolean {
  return isAlive(p.pid) && (commandOf(p.pid) ?? '').startsWith(p.bin);
}

/**
 * Stops and removes everything box.json records: daemons (by pid), then per node whatever is left
 * in its cgroup, its mounts and cgroups; the network; the data directory; the subnet claim; the
 * host's kernel settings when no box is left. Returns the steps that failed (empty: all gone).
 */
export async function downBox(dir: string): Promise<string[]> {
  const stateFile = boxStateFile(dir);
  const state = readBoxState(stateFile);
  if (!state) return [];
  const order = ['kube-proxy', 'kubelet', 'kube-scheduler', 'containerd'];
  const byOrder = [...state.processes].sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  const failures = await allSteps([
    ['stop daemons', () => stopProcesses(byOrder.filter(processAlive).map((p) => p.pid))],
  ]);
  for (const node of state.nodes) failures.push(...(await removeNode(node)));
  failures.push(
    ...(await allSteps([
      ['network', () => removeNetwork(state)],
      [`remove ${state.dataDir}`, () => fs.rmSync(state.dataDir, { recursive: true, force: true })],
      ['subnet claim', () => releaseSubnet(state, stateFile)],
      ['host sysctls', () => restoreHostSysctls()],
      ['mount namespace directory', () => releaseMountNsDir()],
    ])),
  );
  if (failures.length === 0) fs.rmSync(stateFile, { force: true });
  return failures;
}
