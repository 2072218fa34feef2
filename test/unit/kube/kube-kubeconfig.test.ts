import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SERVICE_ACCOUNT_DIR, loadKubeConfig } from '../../../runtime/kube/kubeconfig';

const kubeconfig = (server: string): string => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${server}" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

describe('loadKubeConfig', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-kc-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, server: string): string => {
    const file = path.join(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, kubeconfig(server));
    return file;
  };

  it('uses --kubeconfig first, even in a cluster', () => {
    const file = write('flag', 'https://flag:6443');
    const loaded = loadKubeConfig({
      kubeconfigPath: file,
      env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' },
    });
    expect(loaded.kubeConfig.getCurrentCluster()?.server).toBe('https://flag:6443');
    expect(loaded.source).toBe(`--kubeconfig ${file}`);
  });

  it('names a --kubeconfig file that cannot be loaded', () => {
    expect(() => loadKubeConfig({ kubeconfigPath: path.join(dir, 'missing') })).toThrow(
      `--kubeconfig ${path.join(dir, 'missing')}: cannot load kubeconfig`,
    );
  });

  it('uses the service account in a pod', () => {
    fs.mkdirSync(path.join(dir, SERVICE_ACCOUNT_DIR), { recursive: true });
    fs.writeFileSync(path.join(dir, SERVICE_ACCOUNT_DIR, 'token'), 'tok');
    const loaded = loadKubeConfig({
      env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' },
      inClusterPathPrefix: dir,
      homeDir: dir,
    });
    expect(loaded.source).toBe('in-cluster');
    expect(loaded.kubeConfig.getCurrentCluster()?.server).toBe('https://10.0.0.1:443');
  });

  it('falls back to KUBECONFIG, then ~/.kube/config', () => {
    const fromEnv = write('env', 'https://env:6443');
    write('.kube/config', 'https://home:6443');
    expect(loadKubeConfig({ env: { KUBECONFIG: fromEnv }, homeDir: dir }).kubeConfig.getCurrentCluster()?.server).toBe(
      'https://env:6443',
    );
    expect(loadKubeConfig({ env: {}, homeDir: dir }).kubeConfig.getCurrentCluster()?.server).toBe('https://home:6443');
  });

  it('says what it tried when nothing is found', () => {
    expect(() => loadKubeConfig({ env: {}, homeDir: dir })).toThrow(
      `no Kubernetes configuration found; tried: in-cluster (KUBERNETES_SERVICE_HOST/PORT not set); default ${path.join(dir, '.kube', 'config')} (not found). Pass --kubeconfig <file>.`,
    );
  });
});
