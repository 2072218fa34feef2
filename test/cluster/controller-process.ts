// juneau-controller binaries (build/bin, made by scripts/bundle.mjs) as separate processes against
// the test control plane, each with leader election on and its own log file.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { testKubeconfigPath } from './fixture';

export const CONTROLLER_BIN = path.resolve(__dirname, '..', '..', 'build', 'bin', 'juneau-controller.js');

export interface ControllerProcess {
  /** POD_NAME: the start of its leader-election identity. */
  readonly podName: string;
  readonly child: ChildProcess;
  readonly logFile: string;
  /** The exit code, or the signal that ended it. */
  readonly exited: Promise<number | string>;
}

/** Starts a controller electing a leader on the Lease `leaseNamespace/lease`, logging to `<logDir>/<podName>.log`. */
export function spawnController(o: {
  readonly podName: string;
  readonly logDir: string;
  readonly leaseNamespace: string;
  readonly lease: string;
  /** More flags, e.g. the leader-election durations. */
  readonly args?: readonly string[];
  /** @default the test control plane's (e.g. ./api-proxy.ts's proxyKubeconfig to count its requests) */
  readonly kubeconfig?: string;
}): ControllerProcess {
  const logFile = path.join(o.logDir, `${o.podName}.log`);
  const fd = fs.openSync(logFile, 'a');
  const env: NodeJS.ProcessEnv = { ...process.env, POD_NAME: o.podName };
  // Outside a cluster the binary serves no webhooks (nothing to register on the shared API server).
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.POD_NAMESPACE;
  const args = [
    CONTROLLER_BIN,
    '--kubeconfig',
    o.kubeconfig ?? testKubeconfigPath(),
    '--leader-elect=true',
    `--leader-election-namespace=${o.leaseNamespace}`,
    `--leader-election-id=${o.lease}`,
    ...(o.args ?? []),
    '--metrics-addr=0',
    '--health-addr=0',
    '--log-level=info',
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', fd, fd], env });
  fs.closeSync(fd);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code ?? -1)),
  );
  return { podName: o.podName, child, logFile, exited };
}
