// The Pulumi engine of test/pulumi (the binaries test/pulumi/build.sh caches) driving the
// repository's own project (Pulumi.yaml, examples/pulumi) as a user would from a shell: a local
// file backend, the passphrase from the environment, the stack's config in a file outside the
// repository. Each command's output and duration are kept for the test's assertions and timings.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { REPO_ROOT } from '../cluster/paths';

export const ENGINE_BINARIES = ['pulumi', 'pulumi-language-nodejs', 'pulumi-resource-kubernetes'] as const;
/** The provider build.sh builds, and the @pulumi/kubernetes (devDependency) that asks for it. */
export const KUBERNETES_PROVIDER_VERSION = '4.25.0';

/** Where build.sh puts (or has put) the engine, keyed by the versions its go.mods pin. */
export function engineDir(): string {
  return execFileSync('bash', [path.join(__dirname, 'build.sh'), '--print-dir'], { encoding: 'utf8' }).trim();
}

/** The binaries that are missing from `dir`, by name. */
export function missingBinaries(dir: string): string[] {
  return ENGINE_BINARIES.filter((b) => !fs.existsSync(path.join(dir, b)));
}

export interface PulumiResult {
  readonly args: readonly string[];
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** A command that exited non-zero, with its output: Jest shows what the engine said. */
export class PulumiCommandError extends Error {
  constructor(readonly result: PulumiResult) {
    super(
      `pulumi ${result.args.join(' ')} exited ${result.code} after ${result.ms} ms\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
    );
  }
}

export interface StackOptions {
  /** The engine binaries (engineDir()). */
  readonly binDir: string;
  /** The kubeconfig the Kubernetes provider uses (stack config `kubernetes:kubeconfig`). */
  readonly kubeconfig: string;
  /** Stack config of the program, `key: value` without the project prefix. */
  readonly config?: Readonly<Record<string, string>>;
}

/**
 * One stack of the repository's project in a local file backend. PULUMI_HOME is private (the
 * provider plugin is installed there), so nothing of the user's ~/.pulumi is read or written.
 */
export class PulumiStack {
  readonly name = `jt-${randomBytes(3).toString('hex')}`;
  readonly tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-pulumi-'));
  /** The stack's config file (Pulumi.<stack>.yaml), kept out of the repository. */
  readonly configFile = path.join(this.tmp, `Pulumi.${this.name}.yaml`);
  private readonly env: NodeJS.ProcessEnv;

  private constructor(private readonly opts: StackOptions) {
    // On PATH only the language host; the provider is installed as a plugin (create()), as the
    // engine would download it: an ambient provider on PATH is used whatever version the program
    // asks for, with a warning on every command.
    const bin = path.join(this.tmp, 'bin');
    fs.mkdirSync(bin);
    fs.symlinkSync(path.join(opts.binDir, 'pulumi-language-nodejs'), path.join(bin, 'pulumi-language-nodejs'));
    this.env = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      PULUMI_HOME: path.join(this.tmp, 'home'),
      // A user exports it; a run without one gets a random one (the state lives only as long as the test).
      PULUMI_CONFIG_PASSPHRASE: process.env.PULUMI_CONFIG_PASSPHRASE ?? randomBytes(12).toString('hex'),
      PULUMI_SKIP_UPDATE_CHECK: 'true',
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true',
      KUBECONFIG: opts.kubeconfig,
    };
  }

  /** `pulumi login file://…`, `pulumi stack init`, and the stack config. */
  static async create(opts: StackOptions): Promise<PulumiStack> {
    const stack = new PulumiStack(opts);
    const state = path.join(stack.tmp, 'state');
    fs.mkdirSync(state); // the file backend does not create its directory
    await stack.run(['login', `file://${state}`]);
    await stack.run([
      'plugin',
      'install',
      'resource',
      'kubernetes',
      KUBERNETES_PROVIDER_VERSION,
      '--file',
      path.join(opts.binDir, 'pulumi-resource-kubernetes'),
    ]);
    // `stack init` writes the passphrase's salt to Pulumi.<stack>.yaml in the project directory
    // (it has no --config-file); the file moves out of the repository at once.
    await stack.run(['stack', 'init', stack.name, '--no-select']);
    fs.renameSync(path.join(REPO_ROOT, `Pulumi.${stack.name}.yaml`), stack.configFile);
    await stack.setConfig('kubernetes:kubeconfig', opts.kubeconfig);
    for (const [k, v] of Object.entries(opts.config ?? {})) await stack.setConfig(k, v);
    return stack;
  }

  setConfig(key: string, value: string): Promise<PulumiResult> {
    return this.run(['config', 'set', key, value, ...this.stackArgs()]);
  }

  removeConfig(key: string): Promise<PulumiResult> {
    return this.run(['config', 'rm', key, ...this.stackArgs()]);
  }

  /**
   * `pulumi up --yes`, extra flags after: preview first, as a user's `up` does (the update starts
   * only if the preview succeeds).
   */
  up(...flags: string[]): Promise<PulumiResult> {
    return this.run(['up', '--yes', ...this.stackArgs(), ...flags]);
  }

  preview(...flags: string[]): Promise<PulumiResult> {
    return this.run(['preview', ...this.stackArgs(), ...flags]);
  }

  destroy(): Promise<PulumiResult> {
    return this.run(['destroy', '--yes', ...this.stackArgs()]);
  }

  /** The stack outputs as JSON. */
  async outputs(): Promise<Record<string, unknown>> {
    return JSON.parse((await this.run(['stack', 'output', '--json', '--stack', this.name])).stdout) as Record<
      string,
      unknown
    >;
  }

  /** Removes the stack from the backend and the temporary directory (the backend with it). */
  async remove(): Promise<void> {
    await this.run(['stack', 'rm', '--yes', '--force', '--stack', this.name]);
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }

  private stackArgs(): string[] {
    return ['--stack', this.name, '--config-file', this.configFile];
  }

  /** Runs `pulumi ARGS --non-interactive` in the project; rejects with the output on a non-zero exit. */
  async run(args: string[], opts: { allowFailure?: boolean } = {}): Promise<PulumiResult> {
    const full = [...args, '--non-interactive', '--color', 'never'];
    const started = Date.now();
    const result = await new Promise<PulumiResult>((resolve, reject) => {
      const child = spawn(path.join(this.opts.binDir, 'pulumi'), full, {
        cwd: REPO_ROOT,
        env: this.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ args: full, code, stdout, stderr, ms: Date.now() - started }));
    });
    if (result.code !== 0 && !opts.allowFailure) throw new PulumiCommandError(result);
    return result;
  }
}
