// One way for all three binaries to find the cluster (runtime/kube/kubeconfig.ts), in
// controller-runtime's order: --kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config; and --context.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SERVICE_ACCOUNT_DIR, loadKubeConfig } from '../../../runtime/kube/kubeconfig';

const twoContexts = `apiVersion: v1
kind: Config
clusters: [{ name: a, cluster: { server: "https://a:6443" } }, { name: b, cluster: { server: "https://b:6443" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: ctx-a, context: { cluster: a, user: u } }, { name: ctx-b, context: { cluster: b, user: u } }]
current-context: ctx-a
`;

describe('loadKubeConfig order and --context', () => {
  let dir: string;
  let file: string;
  const inPod = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-kc-'));
    file = path.join(dir, 'config');
    fs.writeFileSync(file, twoContexts);
    fs.mkdirSync(path.join(dir, SERVICE_ACCOUNT_DIR), { recursive: true });
    fs.writeFileSync(path.join(dir, SERVICE_ACCOUNT_DIR, 'token'), 'tok');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('KUBECONFIG, when set, wins over the in-cluster service account (controller-runtime order)', () => {
    const loaded = loadKubeConfig({ env: { ...inPod, KUBECONFIG: file }, inClusterPathPrefix: dir, homeDir: dir });
    expect(loaded.source).toBe(`KUBECONFIG ${file}`);
    expect(loaded.kubeConfig.getCurrentCluster()?.server).toBe('https://a:6443');
  });

  it('a KUBECONFIG naming no existing file is an error naming it, not a silent fall-back', () => {
    const missing = path.join(dir, 'nope');
    expect(() =>
      loadKubeConfig({ env: { ...inPod, KUBECONFIG: missing }, inClusterPathPrefix: dir, homeDir: dir }),
    ).toThrow(`no Kubernetes configuration found; tried: KUBECONFIG ${missing} (not found). Pass --kubeconfig <file>.`);
  });

  it('--context picks another context of the file; an unknown one is named with the known ones', () => {
    expect(loadKubeConfig({ kubeconfigPath: file, context: 'ctx-b' }).kubeConfig.getCurrentCluster()?.server).toBe(
      'https://b:6443',
    );
    expect(() => loadKubeConfig({ kubeconfigPath: file, context: 'ctx-c' })).toThrow(
      `--context ctx-c: no such context in --kubeconfig ${file} (it has: ctx-a, ctx-b)`,
    );
  });
});
