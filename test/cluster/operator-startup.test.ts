// What an operator reads when the binaries cannot start: the bundled
// juneau-controller, juneau-agent and kubectl-juneau (build/bin, as the image runs them) print one
// line naming the problem — no kubeconfig, an unreachable API server, a missing file, a bad flag —
// and a controller whose Lease namespace does not exist says so once and keeps trying, against the
// real API server of the test harness.
import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Resources } from '../../runtime/kube/resources';
import { isNotFound, RestClient } from '../../runtime/kube/rest';
import { testKubeConfig, testKubeconfigPath, waitFor } from './fixture';

const BIN = path.resolve(__dirname, '..', '..', 'build', 'bin');
const VERSION = (
  JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }
).version;
const rest = new RestClient(testKubeConfig());
let home = '';
beforeAll(() => (home = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-startup-'))));
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A binary with an environment holding no cluster: no KUBECONFIG, no service account, an empty HOME. */
function run(binary: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(BIN, `${binary}.js`), ...args],
      { env: { PATH: process.env.PATH, HOME: home }, timeout: 30_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: unknown }).code ?? -1) : 0, stdout, stderr });
      },
    );
  });
}

/** The one stderr line, parsed (JSON log format). */
function oneJsonLine(r: Run): { level: string; msg: string } {
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]) as { level: string; msg: string };
}

function writeKubeconfig(name: string, cluster: string): string {
  const file = path.join(home, name);
  fs.writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { ${cluster} } }]\nusers: [{ name: u, user: { token: t } }]\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\ncurrent-context: x\n`,
  );
  return file;
}

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('startup errors: one line naming the problem', () => {
  it('no kubeconfig: the controller and the agent name every place they looked', async () => {
    const tried = `no Kubernetes configuration found; tried: in-cluster (KUBERNETES_SERVICE_HOST/PORT not set); default ${path.join(home, '.kube', 'config')} (not found). Pass --kubeconfig <file>.`;
    const controller = await run('juneau-controller', []);
    expect(controller.code).toBe(1);
    expect(oneJsonLine(controller)).toMatchObject({ level: 'error', msg: `cannot start: ${tried}` });
    const agent = await run('juneau-agent', ['--node-name', 'n1']);
    expect(agent.code).toBe(1);
    expect(oneJsonLine(agent)).toMatchObject({ level: 'error', msg: `agent failed: ${tried}` });
    const cli = await run('kubectl-juneau', ['status']);
    expect(cli).toMatchObject({ code: 1, stderr: `kubectl-juneau: ${tried}\n` });
  });

  it('an unreachable API server is named with its address; --log-format text gives the same one line', async () => {
    const server = `https://127.0.0.1:${await closedPort()}`;
    const kubeconfig = writeKubeconfig('unreachable', `server: "${server}", insecure-skip-tls-verify: true`);
    const controller = await run('juneau-controller', [
      '--kubeconfig',
      kubeconfig,
      '--metrics-bind-address=0',
      '--health-probe-bind-address=0',
    ]);
    expect(controller.code).toBe(1);
    expect(oneJsonLine(controller).msg).toBe(
      `cannot start: cannot reach the API server at ${server}: connection refused`,
    );
    const text = await run('juneau-controller', ['--kubeconfig', kubeconfig, '--log-format=text']);
    expect(text.stderr).toMatch(
      new RegExp(
        `^\\S+Z ERROR controller: cannot start: cannot reach the API server at ${server.replace(/\./g, '\\.')}: connection refused\\n$`,
      ),
    );
    const agent = await run('juneau-agent', ['--node-name', 'n1', '--kubeconfig', kubeconfig]);
    expect(oneJsonLine(agent).msg).toBe(`agent failed: cannot reach the API server at ${server}: connection refused`);
    expect(await run('kubectl-juneau', ['status', '--kubeconfig', kubeconfig])).toMatchObject({
      code: 1,
      stderr: `kubectl-juneau: cannot reach the API server at ${server}: connection refused\n`,
    });
  });

  it('a file the kubeconfig names that does not exist is named', async () => {
    const ca = path.join(home, 'missing-ca.crt');
    const kubeconfig = writeKubeconfig('missing-ca', `server: "https://127.0.0.1:1", certificate-authority: "${ca}"`);
    const controller = await run('juneau-controller', ['--kubeconfig', kubeconfig]);
    expect(controller.code).toBe(1);
    expect(oneJsonLine(controller).msg).toBe(`cannot start: file not found: ${ca}`);
    const gone = path.join(home, 'no-such-kubeconfig');
    expect(oneJsonLine(await run('juneau-controller', ['--kubeconfig', gone])).msg).toBe(
      `cannot start: --kubeconfig ${gone}: cannot load kubeconfig: file not found`,
    );
  });

  it('a bad flag: exit 2, the flag named, on each binary', async () => {
    expect(await run('juneau-controller', ['--metrics-bind-address'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'juneau-controller: --metrics-bind-address needs a value\n',
    });
    expect(await run('juneau-controller', ['--log-format=yaml'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "juneau-controller: log format 'yaml' is not one of json, text\n",
    });
    expect(await run('juneau-agent', ['--node-name=n1', '--health-addr'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'juneau-agent: --health-addr needs a value\n',
    });
    expect(await run('kubectl-juneau', ['status', '--nope'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'kubectl-juneau: unknown flag --nope (see --help)\n',
    });
  });

  it('--version prints the package version on all three binaries', async () => {
    for (const binary of ['juneau-controller', 'juneau-agent', 'kubectl-juneau']) {
      expect(await run(binary, ['--version'])).toEqual({ code: 0, stdout: `${binary} ${VERSION}\n`, stderr: '' });
    }
  });
});

describe('a controller whose Lease namespace does not exist', () => {
  const suffix = Math.random().toString(36).slice(2, 7);
  const namespace = `juneau-lease-${suffix}`;
  afterAll(async () => {
    await rest.delete(Resources.namespaces, undefined, namespace).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  });

  it('says so in one line, once, keeps trying, and notices when the namespace appears', async () => {
    const child = spawn(
      process.execPath,
      [
        path.join(BIN, 'juneau-controller.js'),
        '--kubeconfig',
        testKubeconfigPath(),
        `--leader-election-namespace=${namespace}`,
        '--leader-election-id=startup',
        '--metrics-bind-address=0',
        '--health-probe-bind-address=0',
        '--log-level=debug',
      ],
      { env: { PATH: process.env.PATH, HOME: home }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const lines: Array<{ level: string; msg: string }> = [];
    let partial = '';
    child.stderr.on('data', (chunk: Buffer) => {
      const text = partial + chunk.toString();
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts.filter(Boolean).map((l) => JSON.parse(l) as { level: string; msg: string }));
    });
    const missing = `cannot take the Lease: namespace "${namespace}" does not exist; create it (the install manifest does) or pass --leader-election-namespace; reconciling nothing until then, retrying`;
    try {
      await waitFor(() => lines.some((l) => l.msg === missing), {
        what: 'the missing-namespace line',
        timeoutMs: 30_000,
      });
      // Three failed attempts (the elector's own debug line each): the retries go on, the error line is not repeated.
      await waitFor(() => lines.filter((l) => l.msg === 'lease attempt failed').length >= 3, {
        what: 'three failed Lease attempts',
        timeoutMs: 30_000,
      });
      expect(lines.filter((l) => l.msg === missing)).toHaveLength(1);
      await rest.create(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
      // Held by another identity for an hour: the controller campaigns but never leads (it would
      // otherwise reconcile the other test files' objects on this shared API server).
      await rest.create(Resources.leases, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'startup', namespace },
        spec: {
          holderIdentity: 'someone-else',
          leaseDurationSeconds: 3600,
          renewTime: new Date().toISOString().replace('Z', '000Z'),
        },
      } as never);
      await waitFor(() => lines.some((l) => l.msg === 'the Lease is within reach now; campaigning for it'), {
        what: 'the resolved line',
        timeoutMs: 30_000,
      });
      expect(lines.filter((l) => l.msg === missing)).toHaveLength(1);
      expect(lines.find((l) => l.msg === missing)?.level).toBe('error');
      expect(lines.some((l) => l.msg === 'became leader')).toBe(false);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
