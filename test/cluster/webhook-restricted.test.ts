// The webhook becomes ready where the controller's container puts it: as non-root (uid 65532), on a
// filesystem it cannot write (Node's permission model refuses every write and every child process),
// with no `openssl` on PATH and HOME/TMPDIR that do not exist. It still issues its CA and serving
// certificate (in-process), keeps them in the Secret, registers the CA bundle with the real API
// server, and serves: the API server refuses a bad object through it (EN-4).
// Before this, certificates were made by running `openssl` in os.tmpdir(), and this test failed
// ("webhook not ready yet": the temporary directory, then the openssl CLI, refused).
import { JuneauResources } from '../../runtime/kube/resources';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { build, stop as stopEsbuild } from 'esbuild';
import { splitPem } from '../../runtime/controller/webhook/certificates';
import {
  certificatesFromSecret,
  SecretResource,
  type SecretObject,
} from '../../runtime/controller/webhook/cert-secret';
import {
  ValidatingWebhookConfigurationResource,
  type ValidatingWebhookConfiguration,
} from '../../runtime/controller/webhook/registration';
import { RestClient } from '../../runtime/kube/rest';
import { createNamespace, deleteNamespace, testKubeConfig, testKubeconfigPath } from './fixture';
import {
  addressPool,
  apply,
  applyOk,
  deleteClusterObjects,
  externalNetwork,
  freePort,
  randomId,
  randomSubnet,
  WEBHOOK_LABEL,
} from './webhook-fixture';

const NONROOT = 65532;
const id = `restricted-${randomId()}`;
const labels = { [WEBHOOK_LABEL]: id };
const configurationName = `juneau-test-${id}`;
const secretName = 'juneau-webhook-cert';
const net = randomSubnet();
const rest = new RestClient(testKubeConfig());

let dir: string;
let namespace: string;
let child: ChildProcess;
let output = '';
let port: number;

beforeAll(async () => {
  // A directory the non-root child can read but not write: the bundle and the kubeconfig.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-restricted-'));
  fs.chmodSync(dir, 0o755);
  await build({
    entryPoints: [path.join(__dirname, 'webhook-restricted-child.ts')],
    outfile: path.join(dir, 'child.js'),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['koffi'],
    logLevel: 'warning',
  });
  fs.copyFileSync(testKubeconfigPath(), path.join(dir, 'kubeconfig'));
  fs.chmodSync(path.join(dir, 'kubeconfig'), 0o644);
  namespace = await createNamespace('webhook-restricted');
  const urlPort = await freePort();
  const config = {
    kubeconfig: path.join(dir, 'kubeconfig'),
    urlBase: `https://127.0.0.1:${urlPort}`,
    namespace,
    configurationName,
    secretName,
    selector: labels,
  };
  // Reads are allowed everywhere (a read-only root filesystem is readable); writes and child processes nowhere.
  child = spawn(process.execPath, ['--experimental-permission', '--allow-fs-read=*', path.join(dir, 'child.js')], {
    uid: NONROOT,
    gid: NONROOT,
    cwd: dir,
    env: {
      PATH: '/nonexistent/bin',
      HOME: '/nonexistent/home',
      TMPDIR: '/nonexistent/tmp',
      JUNEAU_CHILD: JSON.stringify(config),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  port = await readyPort(child, 45_000);
}, 90_000);

/** The port of the child's `READY <port>` line; rejects with its output if it exits or takes too long. */
function readyPort(p: ChildProcess, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the restricted webhook was not ready after ${timeoutMs} ms; its output:\n${output}`)),
      timeoutMs,
    );
    const collect = (d: Buffer) => {
      output += d.toString();
      const m = /READY (\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    p.stdout?.on('data', collect);
    p.stderr?.on('data', collect);
    p.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the webhook process exited (${code}) before it was ready:\n${output}`));
    });
  });
}

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await deleteClusterObjects(JuneauResources.externalNetworks, [`a-${id}`, `b-${id}`]);
  await deleteClusterObjects(JuneauResources.addressPools, [`p-${id}`]);
  if (namespace) await deleteNamespace(namespace);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  // esbuild's service process outlives the build and kept Jest (in band on 2 cores) from exiting.
  await stopEsbuild();
});

test('the process really is restricted: uid 65532, no file writes, no child processes (so no openssl)', () => {
  const probed = JSON.parse(/RESTRICTIONS (.*)/.exec(output)?.[1] ?? '{}');
  expect(probed).toEqual({
    uid: NONROOT,
    writeTmp: 'ERR_ACCESS_DENIED',
    mkdtemp: 'ERR_ACCESS_DENIED',
    openssl: 'ERR_ACCESS_DENIED',
  });
  expect(child.exitCode).toBeNull();
  expect(output).not.toMatch(/"level":"(warn|error)"/);
});

test('the CA bundle is registered and verifies the certificate the process serves; the Secret holds the same CA', async () => {
  const config = await rest.get<ValidatingWebhookConfiguration>(
    ValidatingWebhookConfigurationResource,
    undefined,
    configurationName,
  );
  const bundles = new Set((config.webhooks ?? []).map((w) => w.clientConfig.caBundle));
  expect(bundles.size).toBe(1);
  const caBundle = Buffer.from([...bundles][0] ?? '', 'base64').toString();
  expect((config.webhooks ?? []).every((w) => w.clientConfig.url?.startsWith(`https://127.0.0.1:${port}/`))).toBe(true);

  const served = await new Promise<tls.PeerCertificate>((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca: caBundle }, () => {
      resolve(socket.getPeerCertificate());
      socket.end();
    });
    socket.once('error', reject);
  });
  const secret = certificatesFromSecret(await rest.get<SecretObject>(SecretResource, namespace, secretName));
  expect(served.fingerprint256).toBe(new X509Certificate(secret.tlsCert).fingerprint256);
  expect(splitPem(caBundle)[0]).toBe(secret.caCert.trim());
});

test('EN-4: the API server refuses a second network on the same pool, through the restricted webhook', async () => {
  await applyOk(addressPool(`p-${id}`, [`${net}0/28`], labels));
  await applyOk(externalNetwork(`a-${id}`, [`p-${id}`], labels));
  const refused = await apply(externalNetwork(`b-${id}`, [`p-${id}`], labels));
  expect(refused.ok).toBe(false);
  expect(refused.output).toContain(`is already listed by ExternalNetwork a-${id}`);
});
