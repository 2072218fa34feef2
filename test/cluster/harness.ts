// A real Kubernetes control plane on loopback for tests (the way controller-runtime's envtest
// does it): etcd, kube-apiserver and kube-controller-manager built from the upstream Go modules by
// test/cluster/build.sh. No mocks: CRDs, CEL, RBAC, ownerReference GC and EndpointSlices are real.
//
//   const cluster = await startCluster({ crdFiles: ['dist/juneau-crds.k8s.yaml'] });
//   ... cluster.kubeConfig.makeApiClient(CoreV1Api) ...
//   await cluster.stop();
//
// Each process runs in its own process group with its log in <dir>/logs/. stop() kills the groups
// and deletes the temporary directory; so do exit/SIGINT/SIGTERM/SIGHUP handlers, and a small shell
// watchdog does it if the Node process dies without running them (SIGKILL, OOM).
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
// Loaded when a cluster starts, not on import: it takes seconds on a busy machine, and `cluster
// down`/`status` never need it.
import type { KubeConfig } from '@kubernetes/client-node';
import { sleep } from '../sleep';

export { sleep };

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** The CRD manifest `npx cdk8s synth` writes; applied by the Jest global setup and `cluster up`. */
export const CRD_MANIFEST = path.join(REPO_ROOT, 'dist', 'juneau-crds.k8s.yaml');
export const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'] as const;
export const CONTROLLERS = 'garbage-collector-controller,endpointslice-controller,namespace-controller';
/** Dual-stack, IPv4 first: Services default to IPv4 as on most clusters, and IPv6-only or
 * dual-stack Services can be created, so the controller's SLB-10 handling of them runs for real. */
export const SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/16,fd00:10:96::/112';

export interface StartClusterOptions {
  /** CRD manifests (multi-document YAML) applied and waited on until Established before
   * kube-controller-manager starts, so its garbage collector knows the kinds from the start. */
  crdFiles?: string[];
  /** Where the binaries are; default: `JUNEAU_K8S_BIN_DIR`, else `test/cluster/build.sh --print-dir`. */
  binDir?: string;
  /** Use this (empty or absent) directory instead of a fresh temporary one. */
  dir?: string;
  /** Leave the processes running when this Node process exits once startCluster has resolved (no
   * exit/signal handlers after that, no watchdog, children unref'd). For `cluster up`; stop them
   * later with stopProcesses(). The pids are also listed in <dir>/.pids as they start. */
  persistent?: boolean;
  /** Keep the directory (logs, etcd data) after stop(). Also `JUNEAU_KEEP_CLUSTER_DIR=1`. */
  keepDir?: boolean;
  /** Extra command-line flags per process, appended after the harness's own (later flags win). */
  extraArgs?: Partial<Record<'etcd' | 'kube-apiserver' | 'kube-controller-manager', string[]>>;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /** Give up starting after this long (default 90 s). */
  timeoutMs?: number;
  /** The address kube-apiserver binds to and advertises (the `kubernetes` Service's endpoint), also
   * in its certificate. Real nodes in network namespaces need one they can reach.
   * @default 127.0.0.1 */
  apiserverAddress?: string;
  /** Turn the ServiceAccount admission plugin on (pods get their token volume); real kubelets
   * need it, tests without nodes do not (no serviceaccount controller creates `default`).
   * @default false */
  serviceAccountAdmission?: boolean;
}

export interface ProcessInfo {
  name: string;
  pid: number;
  logFile: string;
}

export interface ClusterState {
  dir: string;
  binDir: string;
  kubeconfigPath: string;
  server: string;
  ports: { etcdClient: number; etcdPeer: number; apiserver: number };
  processes: ProcessInfo[];
  startedAt: string;
  timings: Timings;
}

export interface Timings {
  certsMs: number;
  etcdMs: number;
  apiserverMs: number;
  crdsMs: number;
  totalMs: number;
}

export interface Cluster extends ClusterState {
  /** Admin (system:masters) client configuration for @kubernetes/client-node. */
  kubeConfig: KubeConfig;
  /** Kills the process groups (SIGTERM, then SIGKILL) and deletes the directory. Idempotent. */
  stop(): Promise<void>;
}

export class ClusterStartError extends Error {
  constructor(message: string, readonly logTail?: string) {
    super(logTail ? `${message}\n--- last lines of the log ---\n${logTail}` : message);
    this.name = 'ClusterStartError';
  }
}

export function resolveBinDir(binDir?: string): string {
  const dir =
    binDir ??
    process.env.JUNEAU_K8S_BIN_DIR ??
    require('node:child_process')
      .execFileSync('bash', [path.join(__dirname, 'build.sh'), '--print-dir'], { encoding: 'utf8' })
      .trim();
  const missing = BINARIES.filter((b) => !isExecutable(path.join(dir, b)));
  if (missing.length > 0) {
    throw new ClusterStartError(
      `control-plane binaries missing in ${dir}: ${missing.join(', ')}. Build them with \`npm run cluster:build\` ` +
        `(a cold build takes many minutes; later ones are instant).`,
    );
  }
  return dir;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function startCluster(opts: StartClusterOptions = {}): Promise<Cluster> {
  const t0 = Date.now();
  const log = opts.log ?? (() => {});
  const deadline = t0 + (opts.timeoutMs ?? 90_000);
  const binDir = resolveBinDir(opts.binDir);
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-cluster-'));
  const keepDir = opts.keepDir ?? process.env.JUNEAU_KEEP_CLUSTER_DIR === '1';
  for (const sub of ['pki', 'logs', 'etcd']) fs.mkdirSync(path.join(dir, sub), { recursive: true, mode: 0o700 });
  const pki = (f: string) => path.join(dir, 'pki', f);
  const kubeconfigPath = path.join(dir, 'kubeconfig');

  const procs: Managed[] = [];
  let watchdog: ChildProcess | undefined;
  let stopped = false;
  const killAllSync = () => {
    if (watchdog?.pid) signalGroup(watchdog.pid, 'SIGKILL');
    for (const p of procs) signalGroup(p.child.pid!, 'SIGKILL');
    removeDir();
  };
  const removeDir = () => {
    if (keepDir) return;
    if (ownDir) fs.rmSync(dir, { recursive: true, force: true });
    else for (const sub of ['etcd', 'pki', '.pids']) fs.rmSync(path.join(dir, sub), { recursive: true, force: true });
  };
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    liveClusters.delete(killAllSync);
    if (watchdog?.pid) signalGroup(watchdog.pid, 'SIGKILL');
    await stopProcesses(procs.map((p) => p.child.pid!).reverse());
    removeDir();
  };
  // Also in persistent mode while starting: an interrupted `cluster up` must not leave half a cluster.
  registerExitHandlers(killAllSync);

  const start = (name: 'etcd' | 'kube-apiserver' | 'kube-controller-manager', args: string[]): Managed => {
    args = [...args, ...(opts.extraArgs?.[name] ?? [])];
    const m = spawnManaged(path.join(binDir, name), name, args, path.join(dir, 'logs', `${name}.log`), !!opts.persistent);
    procs.push(m);
    fs.appendFileSync(path.join(dir, '.pids'), `${m.child.pid}\n`);
    if (!opts.persistent && !watchdog) watchdog = spawnWatchdog(dir, ownDir && !keepDir);
    return m;
  };

  try {
    const [etcdClient, etcdPeer, apiserverPort] = await freePorts(3);
    const address = opts.apiserverAddress ?? '127.0.0.1';
    const server = `https://${address}:${apiserverPort}`;

    // etcd starts while the certificates are made.
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    const peerUrl = `http://127.0.0.1:${etcdPeer}`;
    const etcd = start('etcd', [
      '--name=juneau-test',
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=juneau-test=${peerUrl}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    const tCerts = Date.now();
    await makePki(path.join(dir, 'pki'), address === '127.0.0.1' ? [] : [address]);
    const certsMs = Date.now() - tCerts;
    writeKubeconfig(kubeconfigPath, server, pki);
    log(`cluster: certificates in ${certsMs} ms`);

    await waitUntil(etcd, deadline, 'etcd /health', async () => (await httpGet(`${etcdUrl}/health`)).includes('"true"'));
    const etcdMs = Date.now() - t0;
    log(`cluster: etcd ready at ${etcdUrl} after ${etcdMs} ms`);

    const apiserver = start('kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${path.join(dir, 'pki')}`,
      `--tls-cert-file=${pki('apiserver.crt')}`,
      `--tls-private-key-file=${pki('apiserver.key')}`,
      `--client-ca-file=${pki('ca.crt')}`,
      `--secure-port=${apiserverPort}`,
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
      '--allow-privileged=true',
      ...(opts.serviceAccountAdmission ? [] : ['--disable-admission-plugins=ServiceAccount']),
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki('sa.pub')}`,
      `--service-account-signing-key-file=${pki('sa.key')}`,
      '--profiling=false',
    ]);
    const tls = { ca: fs.readFileSync(pki('ca.crt')), cert: fs.readFileSync(pki('admin.crt')), key: fs.readFileSync(pki('admin.key')) };
    await waitUntil(apiserver, deadline, 'kube-apiserver /readyz', async () => (await httpsGet(`${server}/readyz`, tls)) === 'ok');
    const apiserverMs = Date.now() - t0;
    log(`cluster: kube-apiserver ready at ${server} after ${apiserverMs} ms`);

    const tCrds = Date.now();
    const crdFiles = opts.crdFiles ?? [];
    if (crdFiles.length > 0) {
      await applyCrds(path.join(binDir, 'kubectl'), kubeconfigPath, crdFiles);
      log(`cluster: CRDs from ${crdFiles.map((f) => path.relative(process.cwd(), f)).join(', ')} Established in ${Date.now() - tCrds} ms`);
    }
    const crdsMs = Date.now() - tCrds;

    const kcm = start('kube-controller-manager', [
      `--kubeconfig=${kubeconfigPath}`,
      `--controllers=${CONTROLLERS}`,
      '--leader-elect=false',
      '--use-service-account-credentials=false',
      '--secure-port=0',
      '--concurrent-gc-syncs=5',
      '--profiling=false',
    ]);
    // No health endpoint with --secure-port=0. Its log says when the garbage collector and the
    // EndpointSlice controller have synced their caches; wait for that (soft: log wording may change).
    const synced = [/Proceeding to collect garbage/, /Caches are synced" controller="endpoint_slice"/];
    const tKcm = Date.now();
    const kcmDeadline = Math.min(deadline, tKcm + 15_000);
    await waitUntil(kcm, deadline, 'kube-controller-manager', async () => {
      const text = fs.readFileSync(kcm.logFile, 'utf8');
      return synced.every((re) => re.test(text)) || Date.now() > kcmDeadline;
    });
    if (Date.now() > kcmDeadline) log(`cluster: kube-controller-manager did not log that its controllers synced within 15 s; going on`);

    const totalMs = Date.now() - t0;
    log(`cluster: control plane up in ${(totalMs / 1000).toFixed(1)} s (logs in ${path.join(dir, 'logs')})`);
    if (opts.persistent) {
      liveClusters.delete(killAllSync);
      for (const p of procs) p.child.unref();
    }

    const { KubeConfig: KubeConfigClass } = require('@kubernetes/client-node') as typeof import('@kubernetes/client-node');
    const kubeConfig = new KubeConfigClass();
    kubeConfig.loadFromFile(kubeconfigPath);
    return {
      dir,
      binDir,
      kubeconfigPath,
      server,
      ports: { etcdClient, etcdPeer, apiserver: apiserverPort },
      processes: procs.map((p) => ({ name: p.name, pid: p.child.pid!, logFile: p.logFile })),
      startedAt: new Date(t0).toISOString(),
      timings: { certsMs, etcdMs, apiserverMs, crdsMs, totalMs },
      kubeConfig,
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    if (keepDir) log(`cluster: start failed; logs kept in ${path.join(dir, 'logs')}`);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// processes

export interface Managed {
  name: string;
  child: ChildProcess;
  logFile: string;
  exited?: { code: number | null; signal: NodeJS.Signals | null };
}

export function spawnManaged(bin: string, name: string, args: string[], logFile: string, persistent: boolean): Managed {
  const fd = fs.openSync(logFile, 'a');
  fs.writeSync(fd, `# ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
  // detached: its own process group, so a terminal's Ctrl-C reaches only us and stop() can kill the group.
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  const m: Managed = { name, child, logFile };
  child.on('exit', (code, signal) => (m.exited = { code, signal }));
  child.on('error', (err) => {
    m.exited = { code: -1, signal: null };
    fs.appendFileSync(logFile, `spawn error: ${err.message}\n`);
  });
  if (persistent) child.unref();
  return m;
}

/** A shell that outlives us only to clean up: when our pid is gone it kills the process groups
 * listed in <dir>/.pids (SIGKILL, SIGINT to Jest, OOM: cases where no handler of ours runs). */
function spawnWatchdog(dir: string, removeDir: boolean): ChildProcess {
  const script = `
    while kill -0 "$2" 2>/dev/null; do sleep 1; done
    for p in $(cat "$1/.pids" 2>/dev/null); do kill -KILL "-$p" 2>/dev/null; done
    if [ "$3" = 1 ]; then rm -rf "$1"; fi`;
  const child = spawn('sh', ['-c', script, 'juneau-cluster-watchdog', dir, String(process.pid), removeDir ? '1' : '0'], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
  return child;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

/** Alive and not a zombie (a zombie's group cannot be signalled usefully). */
export function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The command line of a pid, to check that a recorded pid is still ours. */
export function commandOf(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return undefined;
  }
}

/** SIGTERM to each process group, SIGKILL after graceMs for any still alive. */
export async function stopProcesses(pids: number[], graceMs = 3000): Promise<void> {
  for (const pid of pids) signalGroup(pid, 'SIGTERM');
  const until = Date.now() + graceMs;
  while (pids.some(isAlive) && Date.now() < until) await sleep(50);
  for (const pid of pids) if (isAlive(pid)) signalGroup(pid, 'SIGKILL');
  const hard = Date.now() + 2000;
  while (pids.some(isAlive) && Date.now() < hard) await sleep(20);
}

const liveClusters = new Set<() => void>();
let handlersInstalled = false;
function registerExitHandlers(killAllSync: () => void): void {
  liveClusters.add(killAllSync);
  if (handlersInstalled) return;
  handlersInstalled = true;
  const cleanup = () => {
    for (const k of liveClusters) {
      try {
        k();
      } catch {
        /* best effort */
      }
    }
    liveClusters.clear();
  };
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      cleanup();
      process.removeListener(sig, onSignal);
      // If nobody else handles the signal, take the default action (terminate) as if we were not here.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

function startFailure(m: Managed, what: string): ClusterStartError {
  const how = m.exited ? ` (exit code ${m.exited.code}${m.exited.signal ? `, signal ${m.exited.signal}` : ''})` : '';
  return new ClusterStartError(`${what}${how}; log: ${m.logFile}`, tail(m.logFile, 40));
}

export function tail(file: string, lines: number): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

async function waitUntil(m: Managed, deadline: number, what: string, probe: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (m.exited) throw startFailure(m, `${m.name} exited while waiting for ${what}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw startFailure(m, `timed out waiting for ${what}`);
    await sleep(100);
  }
}


async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<net.Server>((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

function httpGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

function httpsGet(url: string, tls: { ca: Buffer; cert: Buffer; key: Buffer }): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ...tls, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? body.trim() : `${res.statusCode}: ${body}`));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

// ---------------------------------------------------------------------------------------------
// certificates and kubeconfig

function run(cmd: string, args: string[], opts: { cwd?: string; input?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { cwd: opts.cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err && typeof (err as NodeJS.ErrnoException).code === 'string') return reject(err); // ENOENT etc.
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

async function openssl(cwd: string, args: string[]): Promise<void> {
  const r = await run('openssl', args, { cwd });
  if (r.code !== 0) throw new ClusterStartError(`openssl ${args.join(' ')} failed (exit ${r.code})`, r.stderr.trim());
}

const opensslCnf = (extraIps: string[]) => `[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[serving]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1,IP:10.96.0.1,${extraIps.map((ip) => `IP:${ip},`).join('')}DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
`;

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** CA, apiserver serving cert, admin client cert (CN=admin, O=system:masters), service-account keys. */
async function makePki(dir: string, extraIps: string[]): Promise<void> {
  fs.writeFileSync(path.join(dir, 'openssl.cnf'), opensslCnf(extraIps));
  await openssl(dir, ['req', '-x509', '-config', 'openssl.cnf', '-extensions', 'ca', ...EC_KEY, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '3650', '-subj', '/CN=juneau-test-ca']);
  const leaf = (name: string, subj: string, ext: 'serving' | 'client') => issueCertificate(dir, name, subj, ext);
  const saKey = async () => {
    await openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'sa.key']);
    await openssl(dir, ['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
  };
  await Promise.all([leaf('apiserver', '/CN=kube-apiserver', 'serving'), leaf('admin', '/O=system:masters/CN=admin', 'client'), saKey()]);
}

/**
 * A key and certificate `<name>.key`/`<name>.crt` in a control plane's pki directory, signed by its
 * CA, for subject `subj` (e.g. `/O=system:nodes/CN=system:node:node-0`).
 */
export async function issueCertificate(pkiDir: string, name: string, subj: string, ext: 'serving' | 'client'): Promise<void> {
  await openssl(pkiDir, ['req', '-new', '-config', 'openssl.cnf', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj]);
  const serial = '0x' + require('node:crypto').randomBytes(8).toString('hex');
  await openssl(pkiDir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', serial, '-days', '3650', '-out', `${name}.crt`, '-extfile', 'openssl.cnf', '-extensions', ext]);
}

/** A kubeconfig for `server` authenticating with the client certificate `<user>.crt` of `pki`. */
export function writeKubeconfig(file: string, server: string, pki: (f: string) => string, user = 'admin'): void {
  const b64 = (f: string) => fs.readFileSync(pki(f)).toString('base64');
  const yaml = `apiVersion: v1
kind: Config
clusters:
- name: juneau-test
  cluster:
    server: ${server}
    certificate-authority-data: ${b64('ca.crt')}
users:
- name: ${user}
  user:
    client-certificate-data: ${b64(`${user}.crt`)}
    client-key-data: ${b64(`${user}.key`)}
contexts:
- name: juneau-test
  context:
    cluster: juneau-test
    user: ${user}
    namespace: default
current-context: juneau-test
`;
  fs.writeFileSync(file, yaml, { mode: 0o600 });
}

// ---------------------------------------------------------------------------------------------
// kubectl

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl (the one in binDir) against kubeconfigPath. Does not throw on a non-zero exit. */
export function runKubectl(binDir: string, kubeconfigPath: string, args: string[], opts: { input?: string } = {}): Promise<KubectlResult> {
  return run(path.join(binDir, 'kubectl'), [`--kubeconfig=${kubeconfigPath}`, ...args], opts);
}

/** Server-side applies CRD manifests and waits until every CRD in them is Established. */
export async function applyCrds(kubectl: string, kubeconfigPath: string, files: string[], timeoutS = 30): Promise<void> {
  const binDir = path.dirname(kubectl);
  const fileArgs = files.flatMap((f) => ['-f', f]);
  const applied = await runKubectl(binDir, kubeconfigPath, ['apply', '--server-side', '--force-conflicts', '--field-manager=juneau-test-harness', ...fileArgs]);
  if (applied.code !== 0) throw new ClusterStartError(`kubectl apply of ${files.join(', ')} failed`, (applied.stderr || applied.stdout).trim());
  const waited = await runKubectl(binDir, kubeconfigPath, ['wait', '--for=condition=Established', `--timeout=${timeoutS}s`, ...fileArgs]);
  if (waited.code !== 0) throw new ClusterStartError(`CRDs in ${files.join(', ')} did not become Established`, (waited.stderr || waited.stdout).trim());
}
