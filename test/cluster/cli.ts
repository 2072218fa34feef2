// `cluster up|down|status`: the test control plane (etcd, kube-apiserver, kube-controller-manager)
// for humans and scripts, running in the background with its state in .juneau/cluster/.
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { ClusterState, commandOf, CRD_MANIFEST, isAlive, REPO_ROOT, applyCrds, resolveBinDir, startCluster, stopProcesses } from './harness';

const STATE_DIR = path.join(REPO_ROOT, '.juneau', 'cluster');
const STATE_FILE = path.join(STATE_DIR, 'state.json');
const PIDS_FILE = path.join(STATE_DIR, '.pids');

const HELP = `Usage: npx tsx test/cluster/cli.ts <command>     (or: npm run -s cluster -- <command>)

A real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-controller-manager with
the garbage-collector, endpointslice and namespace controllers), built from the upstream Go
modules by \`npm run cluster:build\`. It runs in the background; state, logs and the kubeconfig
are in .juneau/cluster/.

Commands:
  up       Start it (or, if it already runs, keep it) and print two lines for a shell to eval:
             export KUBECONFIG=${path.join(STATE_DIR, 'kubeconfig')}
             export PATH=<dir of the built kubectl>:$PATH
           Applies dist/juneau-crds.k8s.yaml (from \`npx cdk8s synth\`) when it exists, also when
           the control plane already runs. Progress goes to stderr.
             eval "$(npx tsx test/cluster/cli.ts up)"
           Jest reuses it with: export JUNEAU_TEST_KUBECONFIG=$KUBECONFIG
  down     Stop it (SIGTERM, then SIGKILL) and delete .juneau/cluster/.
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

function exportLines(state: ClusterState): string {
  return `export KUBECONFIG=${state.kubeconfigPath}\nexport PATH=${state.binDir}:$PATH\n`;
}

async function down(quiet = false): Promise<void> {
  const state = readState();
  if (state) {
    const pids = state.processes.filter((p) => processAlive(state, p)).map((p) => p.pid);
    await stopProcesses([...pids].reverse());
    if (!quiet) process.stderr.write(pids.length ? `cluster: stopped pids ${pids.join(', ')}\n` : 'cluster: nothing was running\n');
  } else {
    // No state.json: an `up` that died while starting. Its processes are listed in .pids; stop
    // those that still run with this directory on their command line.
    const listed = fs.existsSync(PIDS_FILE) ? fs.readFileSync(PIDS_FILE, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];
    const pids = listed.filter((pid) => isAlive(pid) && (commandOf(pid) ?? '').includes(STATE_DIR));
    await stopProcesses([...pids].reverse());
    if (!quiet) process.stderr.write(pids.length ? `cluster: stopped pids ${pids.join(', ')} of an incomplete start\n` : 'cluster: not running (no .juneau/cluster/state.json)\n');
  }
  fs.rmSync(STATE_DIR, { recursive: true, force: true });
}

async function up(): Promise<void> {
  const crdFiles = fs.existsSync(CRD_MANIFEST) ? [CRD_MANIFEST] : [];
  const existing = readState();
  if (existing && existing.processes.every((p) => processAlive(existing, p))) {
    process.stderr.write(`cluster: already running at ${existing.server}\n`);
    if (crdFiles.length) {
      await applyCrds(path.join(existing.binDir, 'kubectl'), existing.kubeconfigPath, crdFiles);
      process.stderr.write(`cluster: applied ${path.relative(process.cwd(), CRD_MANIFEST)} (the garbage collector notices new kinds within ~30 s)\n`);
    }
    process.stdout.write(exportLines(existing));
    return;
  }
  if (existing || fs.existsSync(STATE_DIR)) {
    process.stderr.write('cluster: cleaning up a control plane that is no longer (fully) running\n');
    await down(true);
  }
  if (!crdFiles.length) process.stderr.write(`cluster: ${path.relative(process.cwd(), CRD_MANIFEST)} not found (run \`npx cdk8s synth\`); starting without Juneau CRDs\n`);
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
      const req = https.get(`${state.server}/readyz`, { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key'), timeout: 3000 }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(res.statusCode === 200 ? body.trim() : `HTTP ${res.statusCode}`));
      });
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
    else process.stdout.write('cluster: not running (no .juneau/cluster/state.json; start it with `up`)\n');
    return 1;
  }
  const procs = state.processes.map((p) => ({ ...p, alive: processAlive(state, p) }));
  const ready = await readyz(state);
  const running = procs.every((p) => p.alive) && ready === 'ok';
  if (json) {
    process.stdout.write(JSON.stringify({ running, readyz: ready, ...state, processes: procs }, null, 2) + '\n');
  } else {
    const lines = [
      `cluster: ${running ? 'running' : procs.some((p) => p.alive) ? 'PARTLY running' : 'NOT running (stale state; `down` cleans up)'}`,
      `  server      ${state.server}  /readyz: ${ready}`,
      `  kubeconfig  ${state.kubeconfigPath}`,
      `  binaries    ${state.binDir}`,
      `  started     ${state.startedAt} (came up in ${(state.timings.totalMs / 1000).toFixed(1)} s)`,
      `  etcd        client http://127.0.0.1:${state.ports.etcdClient}, peer http://127.0.0.1:${state.ports.etcdPeer}`,
      ...procs.map((p) => `  ${p.name.padEnd(24)} pid ${String(p.pid).padEnd(8)} ${p.alive ? 'alive' : 'DEAD'}  log ${p.logFile}`),
    ];
    process.stdout.write(lines.join('\n') + '\n');
  }
  return running ? 0 : 1;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case 'up':
      await up();
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
