/**
 * CNI-1: the agent installs `juneau-cni` on its node, and removes it on uninstall: the binary into
 * the node's CNI bin dir, itself into the active conflist's chain (./chain.ts). Checked again every
 * `intervalMs`, because a CNI that owns the conflist (flannel, Calico's install-cni) rewrites it.
 *
 * A node whose configuration cannot be chained into (no conflist, a single-plugin .conf, invalid
 * JSON) is reported, never broken: a log line and a Warning Event on the Node once per change, and
 * `juneau_agent_cni_chained 0`. Its pods then start as before, without their direct ElasticIPs.
 * Writes are atomic (a temporary file renamed), so the runtime never reads half a file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EventRecorder, ObjectReference } from '../../kube/events';
import { silentLogger, type Logger } from '../../kube/log';
import { gauge, metricsOf } from '../metric-table';
import { activeConfFile, chainInto, PLUGIN_TYPE, unchainFrom } from './chain';

const CNI_METRICS = {
  chained: gauge(
    'agent_cni_chained',
    [],
    "1 while juneau-cni is in this node's active CNI conflist chain and its bin dir, 0 when it could not be (the log and the Node's Events say why).",
  ),
};

export class CniMetrics extends metricsOf(CNI_METRICS) {}

export interface CniInstallOptions {
  /** The node's CNI bin dir as the agent sees it (a hostPath). */
  readonly binDir: string;
  /** The node's CNI conf dir as the agent sees it (a hostPath). */
  readonly confDir: string;
  /** The plugin binary in the image (build/cni/juneau-cni). */
  readonly source: string;
  readonly intervalMs: number;
  readonly node: ObjectReference;
  readonly recorder?: EventRecorder;
  readonly metrics?: CniMetrics;
  readonly logger?: Logger;
}

export type InstallState =
  { readonly ok: true; readonly file: string } | { readonly ok: false; readonly reason: string };

/** The binary `juneau-cni` built by cni/build.sh, found above this file as findBuiltObject finds BPF objects. */
export function findPluginBinary(from: string = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'build', 'cni', PLUGIN_TYPE);
    if (fs.existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`${PLUGIN_TYPE} not found above ${from}: run bash cni/build.sh`);
  }
}

export class CniInstaller {
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private reported = '';

  constructor(private readonly options: CniInstallOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: 'cni' });
  }

  start(): void {
    this.ensureAndReport();
    this.timer = setInterval(() => this.ensureAndReport(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The binary in place (replaced when it differs) and the active conflist chaining it. */
  ensure(): InstallState {
    const { binDir, confDir, source } = this.options;
    try {
      copyIfDifferent(source, path.join(binDir, PLUGIN_TYPE));
      const file = activeConfFile(fs.existsSync(confDir) ? fs.readdirSync(confDir) : []);
      if (!file) return { ok: false, reason: `no CNI configuration in ${confDir} yet` };
      const full = path.join(confDir, file);
      const chained = chainInto(file, fs.readFileSync(full, 'utf8'));
      if (!chained.ok) return { ok: false, reason: chained.reason };
      if (chained.changed) writeAtomically(full, chained.text, 0o644);
      return { ok: true, file: full };
    } catch (err) {
      return { ok: false, reason: (err as Error).message };
    }
  }

  /** Uninstall: out of every conflist of the conf dir, and the binary gone. Returns what it did. */
  remove(): string[] {
    const { binDir, confDir } = this.options;
    const done: string[] = [];
    for (const file of fs.existsSync(confDir) ? fs.readdirSync(confDir) : []) {
      const full = path.join(confDir, file);
      if (!activeConfFile([file])) continue;
      const unchained = unchainFrom(file, fs.readFileSync(full, 'utf8'));
      if (unchained.ok && unchained.changed) {
        writeAtomically(full, unchained.text, 0o644);
        done.push(`unchained from ${full}`);
      }
    }
    const bin = path.join(binDir, PLUGIN_TYPE);
    if (fs.existsSync(bin)) {
      fs.rmSync(bin);
      done.push(`removed ${bin}`);
    }
    return done;
  }

  private ensureAndReport(): void {
    const state = this.ensure();
    this.options.metrics?.chained.set(state.ok ? 1 : 0);
    const key = state.ok ? `ok ${state.file}` : state.reason;
    if (key === this.reported) return;
    this.reported = key;
    if (state.ok) {
      this.logger.info('juneau-cni installed and chained', { conflist: state.file, binDir: this.options.binDir });
      return;
    }
    const note = `juneau-cni is not chained on this node: ${state.reason}; pods holding an ElasticIP directly get no address here (CNI-1, docs/cni.md)`;
    this.logger.error(note);
    this.options.recorder?.warning(this.options.node, 'CNIChainFailed', 'InstallCNI', note);
  }
}

function copyIfDifferent(source: string, target: string): void {
  const data = fs.readFileSync(source);
  if (fs.existsSync(target) && fs.readFileSync(target).equals(data)) return;
  writeAtomically(target, data, 0o755);
}

function writeAtomically(target: string, data: string | Buffer, mode: number): void {
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.juneau-tmp`);
  fs.writeFileSync(tmp, data, { mode });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, target);
}
