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
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
// Loaded when a cluster starts, not on import: it takes seconds on a busy machine, and `cluster
// down`/`status` never need it.
import type { KubeConfig } from '@kubernetes/client-node';
import { sleep } from '../sleep';
import { writeKubeconfig } from './kubeconfig';
import { applyCrds } from './kubectl';
import { resolveBinDir } from './paths';
import { makePki } from './pki';
import {
  ClusterStartError,
  freePorts,
  registerExitHandlers,
  signalGroup,
  spawnManaged,
  spawnWatchdog,
  stopProcesses,
  tail,
  unregisterExitHandler,
  type Managed,
} from './processes';

// The harness only starts and stops the control plane; its parts live by concern: processes.ts
// (process groups, logs, ports), pki.ts, kubeconfig.ts, kubectl.ts and paths.ts (repository, CRDs, binaries).

export const CONTROLLERS =
  'garbage-collector-controller,endpointslice-controller,namespace-controller,clusterrole-aggregation-controller';
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
    unregisterExitHandler(killAllSync);
    if (watchdog?.pid) signalGroup(watchdog.pid, 'SIGKILL');
    await stopProcesses(procs.map((p) => p.child.pid!).reverse());
    removeDir();
  };
  // Also in persistent mode while starting: an interrupted `cluster up` must not leave half a cluster.
  registerExitHandlers(killAllSync);

  const start = (name: 'etcd' | 'kube-apiserver' | 'kube-controller-manager', args: string[]): Managed => {
    args = [...args, ...(opts.extraArgs?.[name] ?? [])];
    const m = spawnManaged(
      path.join(binDir, name),
      name,
      args,
      path.join(dir, 'logs', `${name}.log`),
      !!opts.persistent,
    );
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

    await waitUntil(etcd, deadline, 'etcd /health', async () =>
      (await httpGet(`${etcdUrl}/health`)).includes('"true"'),
    );
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
    const tls = {
      ca: fs.readFileSync(pki('ca.crt')),
      cert: fs.readFileSync(pki('admin.crt')),
      key: fs.readFileSync(pki('admin.key')),
    };
    await waitUntil(
      apiserver,
      deadline,
      'kube-apiserver /readyz',
      async () => (await httpsGet(`${server}/readyz`, tls)) === 'ok',
    );
    const apiserverMs = Date.now() - t0;
    log(`cluster: kube-apiserver ready at ${server} after ${apiserverMs} ms`);

    const tCrds = Date.now();
    const crdFiles = opts.crdFiles ?? [];
    if (crdFiles.length > 0) {
      await applyCrds(path.join(binDir, 'kubectl'), kubeconfigPath, crdFiles);
      log(
        `cluster: CRDs from ${crdFiles.map((f) => path.relative(process.cwd(), f)).join(', ')} Established in ${Date.now() - tCrds} ms`,
      );
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
    if (Date.now() > kcmDeadline)
      log(`cluster: kube-controller-manager did not log that its controllers synced within 15 s; going on`);

    const totalMs = Date.now() - t0;
    log(`cluster: control plane up in ${(totalMs / 1000).toFixed(1)} s (logs in ${path.join(dir, 'logs')})`);
    if (opts.persistent) {
      unregisterExitHandler(killAllSync);
      for (const p of procs) p.child.unref();
    }

    const { KubeConfig: KubeConfigClass } =
      require('@kubernetes/client-node') as typeof import('@kubernetes/client-node');
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
    // The start's error is the one to throw; a failure to clean up after it is said, not lost.
    await stop().catch((stopErr: unknown) =>
      process.stderr.write(`cluster: stop after a failed start: ${String(stopErr)}\n`),
    );
    if (keepDir) log(`cluster: start failed; logs kept in ${path.join(dir, 'logs')}`);
    throw err;
  }
}

function startFailure(m: Managed, what: string): ClusterStartError {
  const how = m.exited ? ` (exit code ${m.exited.code}${m.exited.signal ? `, signal ${m.exited.signal}` : ''})` : '';
  return new ClusterStartError(`${what}${how}; log: ${m.logFile}`, tail(m.logFile, 40));
}

async function waitUntil(m: Managed, deadline: number, what: string, probe: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (m.exited) throw startFailure(m, `${m.name} exited while waiting for ${what}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw startFailure(m, `timed out waiting for ${what}`);
    await sleep(100);
  }
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
