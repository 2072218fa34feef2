// `cluster up|down|status`: the test control plane (etcd, kube-apiserver, kube-controller-manager)
// for humans and scripts, running in the background with its state in .juneau/cluster/; with
// `--nodes N`, a cluster in a box made of real nodes (test/box/).
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { downBox, processAlive as boxProcessAlive, upBox } from '../box/box';
import { containerdPaths, importImages } from '../box/containerd';
import { BoxState, parseNodeSubnet, readBoxState } from '../box/state';
import { ClusterState, startCluster } from './harness';
import { applyCrds } from './kubectl';
import { CRD_MANIFEST, REPO_ROOT, resolveBinDir } from './paths';
import { commandOf, isAlive, stopProcesses } from './processes';

/** JUNEAU_CLUSTER_DIR moves it (tests run their own box next to a developer's). */
const STATE_DIR = process.env.JUNEAU_CLUSTER_DIR
  ? path.resolve(process.env.JUNEAU_CLUSTER_DIR)
  : path.join(REPO_ROOT, '.juneau', 'cluster');
const BOX_FILE = path.join(STATE_DIR, 'box.json');
const STATE_FILE = path.join(STATE_DIR, 'state.json');
const PIDS_FILE = path.join(STATE_DIR, '.pids');

const HELP = `Usage: npx tsx test/cluster/cli.ts <command> [options]   (or: npm run -s cluster -- <command>)

A real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-controller-manager with
the garbage-collector, endpointslice and namespace controllers), built from the upstream Go
modules by \`npm run cluster:build\`. It runs in the background; state, logs and the kubeconfig
are in .juneau/cluster/ (or $JUNEAU_CLUSTER_DIR).

Commands:
  up       Start it (or, if it already runs, keep it) and print two lines for a shell to eval:
             export KUBECONFIG=${path.join(STATE_DIR, 'kubeconfig')}
             export PATH=<dir of the built kubectl>:$PATH
           Applies dist/juneau-crds.k8s.yaml (from \`npx cdk8s synth\`) when it exists, also when
           the control plane already runs. Progress goes to stderr.
             eval "$(npx tsx test/cluster/cli.ts up)"
           Jest reuses it with: export JUNEAU_TEST_KUBECONFIG=$KUBECONFIG
           --nodes N   A cluster in a box (root): also kube-scheduler, the deployment, replicaset,
                       daemonset, node-lifecycle, serviceaccount and root-ca publisher controllers,
                       ServiceAccount admission, and N real nodes, each a network namespace
                       (jb-<id>-node-<i>, eth0 on bridge jb<id> whose host address the API server
                       binds) with its own containerd (Debian's, runc, bridge + host-local CNI),
                       kubelet and kube-proxy (nftables), a locally built pause image; waits until
                       every node is Ready. Builds kubelet, kube-proxy and kube-scheduler first if
                       needed (\`npm run cluster:build -- --nodes\`, ~20 min cold).
           --images a.tar,b.tar  OCI archives imported into every node's containerd (use
                       imagePullPolicy IfNotPresent/Never); also into a box already running.
           --node-subnet A.B.C.0/24  The nodes' segment (host .1, node i .11+i) instead of
                       10.226.k.0/24, e.g. 10.225.32.0/24 where the install examples' pool lies.
           --pod-ips N  Each node's CNI hands out only N pod addresses (.2 onwards), so a freed
                       address comes back soon (test/box/pod-ip-reuse.test.ts).
           --audit-policy FILE  The API server writes an audit log with this policy to
                       logs/audit.log of the cluster directory.
  down     Stop it (SIGTERM, then SIGKILL) and delete .juneau/cluster/; with a box, first its nodes:
           daemons by recorded pid, what is left in their cgroups (containers, shims), mounts,
           cgroups, namespaces, links, routes, the subnet claim, and the kernel settings the
           kubelet changed (restored when no box is left). Also after a crash of any of it.
  status   Print what runs: server, kubeconfig, each process's pid and whether it is alive,
           ports, and the API server's /readyz. Exit status 0 when everything runs, 1 otherwise.
           --json prints the same as JSON.
  help     This text (also -h, --help).
`;

function readState(): ClusterState | undefined {
  try {
    return JSON.parse(fs.readFileSync(STATE_FILE, 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

/** A recorded pid counts only while it still runs the recorded binary (pids get reused). */
function processAlive(state: ClusterState, p: { name: string; pid: number }): boolean {
  return isAlive(p.pid) && (commandOf(p.pid) ?? '').startsWith(path.join(state.binDir, p.name));
}

function boxAlive(box: BoxState | undefined): boolean {
  return !!box && box.processes.every(boxProcessAlive);
}

function exportLines(state: ClusterState): string {
  return `export KUBECONFIG=${state.kubeconfigPath}\nexport PATH=${state.binDir}:$PATH\n`;
}

async function down(quiet = false): Promise<void> {
  const box = readBoxState(BOX_FILE);
  if (box) {
    const failures = await downBox(STATE_DIR);
    if (failures.length)
      throw new Error(
        `could not remove all of the box ${box.id} (${BOX_FILE} kept; run down again):\n  ${failures.join('\n  ')}`,
      );
    if (!quiet) process.stderr.write(`cluster: removed box ${box.id} (${box.nodes.length} node(s))\n`);
  }
  const state = readState();
  if (state) {
    const pids = state.processes.filter((p) => processAlive(state, p)).map((p) => p.pid);
    await stopProcesses([...pids].reverse());
    if (!quiet)
      process.stderr.write(
        pids.length ? `cluster: stopped pids ${pids.join(', ')}\n` : 'cluster: nothing was running\n',
      );
  } else {
    // No state.json: an `up` that died while starting. Its processes are listed in .pids; stop
    // those that still run with this directory on their command line.
    const listed = fs.existsSync(PIDS_FILE)
      ? fs.readFileSync(PIDS_FILE, 'utf8').split(/\s+/).filter(Boolean).map(Number)
      : [];
    const pids = listed.filter((pid) => isAlive(pid) && (commandOf(pid) ?? '').includes(STATE_DIR));
    await stopProcesses([...pids].reverse());
    if (!quiet)
      process.stderr.write(
        pids.length
          ? `cluster: stopped pids ${pids.join(', ')} of an incomplete start\n`
          : `cluster: not running (no ${STATE_FILE})\n`,
      );
  }
  fs.rmSync(STATE_DIR, { recursive: true, force: true });
}

interface UpOptions {
  nodes?: number;
  images: string[];
  nodeSegment?: string;
  auditPolicy?: string;
  podIPs?: number;
}

function parseUpOptions(args: string[]): UpOptions {
  const opts: UpOptions = { images: [] };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    const value = () => inline ?? args[++i] ?? '';
    if (flag === '--nodes') {
      const v = value();
      opts.nodes = Number(v);
      if (!/^\d+$/.test(v)) throw new Error(`--nodes: expected a number of nodes, got ${JSON.stringify(v)}`);
    } else if (flag === '--images') {
      opts.images.push(
        ...value()
          .split(',')
          .filter(Boolean)
          .map((f) => path.resolve(f)),
      );
    } else if (flag === '--node-subnet') {
      opts.nodeSegment = parseNodeSubnet(value());
    } else if (flag === '--pod-ips') {
      const v = value();
      opts.podIPs = Number(v);
      if (!/^\d+$/.test(v) || opts.podIPs < 1 || opts.podIPs > 250)
        throw new Error(`--pod-ips: expected a number of pod addresses per node (1-250), got ${JSON.stringify(v)}`);
    } else if (flag === '--audit-policy') {
      opts.auditPolicy = path.resolve(value());
      if (!fs.existsSync(opts.auditPolicy)) throw new Error(`--audit-policy: ${opts.auditPolicy} does not exist`);
    } else {
      throw new Error(
        `up: unknown option ${JSON.stringify(args[i])} (expected --nodes N, --images a.tar,b.tar, --node-subnet A.B.C.0/24, --pod-ips N, --audit-policy FILE)`,
      );
    }
  }
  for (const f of opts.images) if (!fs.existsSync(f)) throw new Error(`--images: ${f} does not exist`);
  if (opts.images.length && opts.nodes === undefined)
    throw new Error('--images needs --nodes N (images go into the nodes)');
  if (opts.nodeSegment && opts.nodes === undefined) throw new Error('--node-subnet needs --nodes N');
  if (opts.auditPolicy && opts.nodes === undefined) throw new Error('--audit-policy needs --nodes N');
  return opts;
}

async function up(opts: UpOptions): Promise<void> {
  const crdFiles = fs.existsSync(CRD_MANIFEST) ? [CRD_MANIFEST] : [];
  const existing = readState();
  const box = readBoxState(BOX_FILE);
  // Plain `up` keeps a running box (it only prints the exports again); `up --nodes N` keeps it
  // when it has N nodes, and replaces it otherwise.
  const sameShape = opts.nodes === undefined || box?.nodes.length === opts.nodes;
  if (existing && existing.processes.every((p) => processAlive(existing, p)) && sameShape && (!box || boxAlive(box))) {
    process.stderr.write(
      `cluster: already running at ${existing.server}${box ? ` with ${box.nodes.length} node(s)` : ''}\n`,
    );
    if (box && opts.images.length) {
      await Promise.all(box.nodes.map((n) => importImages(containerdPaths(n), opts.images)));
      process.stderr.write(
        `cluster: imported ${opts.images.length} image archive(s) into ${box.nodes.length} node(s)\n`,
      );
    }
    if (crdFiles.length) {
      await applyCrds(path.join(existing.binDir, 'kubectl'), existing.kubeconfigPath, crdFiles);
      process.stderr.write(
        `cluster: applied ${path.relative(process.cwd(), CRD_MANIFEST)} (the garbage collector notices new kinds within ~30 s)\n`,
      );
    }
    process.stdout.write(exportLines(existing));
    return;
  }
  if (existing || fs.existsSync(STATE_DIR)) {
    process.stderr.write('cluster: cleaning up a control plane that is no longer (fully) running\n');
    await down(true);
  }
  if (!crdFiles.length)
    process.stderr.write(
      `cluster: ${path.relative(process.cwd(), CRD_MANIFEST)} not found (run \`npx cdk8s synth\`); starting without Juneau CRDs\n`,
    );
  if (opts.nodes !== undefined) {
    if (process.getuid?.() !== 0) throw new Error('up --nodes needs root (network namespaces, cgroups, mounts)');
    const log = (line: string) => process.stderr.write(`${line}\n`);
    const { cluster } = await upBox({
      dir: STATE_DIR,
      nodes: opts.nodes,
      images: opts.images,
      nodeSegment: opts.nodeSegment,
      auditPolicy: opts.auditPolicy,
      podIPs: opts.podIPs,
      crdFiles,
      log,
    });
    const { kubeConfig: _kc, stop: _stop, ...state } = cluster;
    fs.writeFileSync(STATE_FILE, JSON.stringify(state, null, 2) + '\n');
    process.stdout.write(exportLines(state));
    return;
  }
  const binDir = resolveBinDir();
  fs.mkdirSync(STATE_DIR, { recursive: true });
  const cluster = await startCluster({
    dir: STATE_DIR,
    binDir,
    crdFiles,
    persistent: true,
    keepDir: true,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const { kubeConfig: _kc, stop: _stop, ...state } = cluster;
  fs.writeFileSync(STATE_FILE, JSON.stringify(state, null, 2) + '\n');
  process.stdout.write(exportLines(state));
}

function readyz(state: ClusterState): Promise<string> {
  const pki = (f: string) => fs.readFileSync(path.join(state.dir, 'pki', f));
  return new Promise((resolve) => {
    try {
      const req = https.get(
        `${state.server}/readyz`,
        { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key'), timeout: 3000 },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve(res.statusCode === 200 ? body.trim() : `HTTP ${res.statusCode}`));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e) => resolve(`unreachable (${e.message})`));
    } catch (e) {
      resolve(`unreachable (${(e as Error).message})`);
    }
  });
}

async function status(json: boolean): Promise<number> {
  const state = readState();
  if (!state) {
    if (json) process.stdout.write(JSON.stringify({ running: false }) + '\n');
    else process.stdout.write(`cluster: not running (no ${STATE_FILE}; start it with \`up\`)\n`);
    return 1;
  }
  const procs = state.processes.map((p) => ({ ...p, alive: processAlive(state, p) }));
  const ready = await readyz(state);
  const box = readBoxState(BOX_FILE);
  const running = procs.every((p) => p.alive) && ready === 'ok' && (!box || boxAlive(box));
  if (json) {
    const boxJson = box && { ...box, processes: box.processes.map((p) => ({ ...p, alive: boxProcessAlive(p) })) };
    process.stdout.write(
      JSON.stringify({ running, readyz: ready, ...state, processes: procs, box: boxJson }, null, 2) + '\n',
    );
  } else {
    const lines = [
      `cluster: ${running ? 'running' : procs.some((p) => p.alive) ? 'PARTLY running' : 'NOT running (stale state; `down` cleans up)'}`,
      `  server      ${state.server}  /readyz: ${ready}`,
      `  kubeconfig  ${state.kubeconfigPath}`,
      `  binaries    ${state.binDir}`,
      `  started     ${state.startedAt} (came up in ${(state.timings.totalMs / 1000).toFixed(1)} s)`,
      `  etcd        client http://127.0.0.1:${state.ports.etcdClient}, peer http://127.0.0.1:${state.ports.etcdPeer}`,
      ...procs.map(
        (p) => `  ${p.name.padEnd(24)} pid ${String(p.pid).padEnd(8)} ${p.alive ? 'alive' : 'DEAD'}  log ${p.logFile}`,
      ),
      ...boxLines(readBoxState(BOX_FILE)),
    ];
    process.stdout.write(lines.join('\n') + '\n');
  }
  return running ? 0 : 1;
}

function boxLines(box: BoxState | undefined): string[] {
  if (!box) return [];
  return [
    `  box         ${box.id}: bridge ${box.bridge} ${box.hostIp}/24, pods ${box.clusterCidr}, data ${box.dataDir}`,
    ...box.nodes.map((n) => `  ${n.name.padEnd(11)} ${n.ip} netns ${n.netns} pods ${n.podCidr}`),
    ...box.processes.map(
      (p) =>
        `  ${`${p.node ?? 'host'}/${p.name}`.padEnd(24)} pid ${String(p.pid).padEnd(8)} ${boxProcessAlive(p) ? 'alive' : 'DEAD'}  log ${p.logFile}`,
    ),
  ];
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case 'up':
      await up(parseUpOptions(rest));
      return 0;
    case 'down':
      await down();
      return 0;
    case 'status':
      return status(rest.includes('--json'));
    case undefined:
    case 'help':
    case '-h':
    case '--help':
      process.stdout.write(HELP);
      return cmd === undefined ? 2 : 0;
    default:
      process.stderr.write(`cluster: unknown command ${JSON.stringify(cmd)}\n\n${HELP}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: Error) => {
    process.stderr.write(`cluster: ${err.message}\n`);
    process.exitCode = 1;
  },
);
