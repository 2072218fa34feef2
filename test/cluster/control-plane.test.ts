// The control plane itself: versions, identity and RBAC, warm start time, stop() and start failures.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import { startCluster } from './harness';
import { CRD_MANIFEST } from './paths';
import { ClusterStartError, isAlive } from './processes';
import { parseAllDocuments } from 'yaml';
import { kubectl, requireCrd, testBinDir } from './fixture';
import { itWhen } from '../requirements';

const goMod = fs.readFileSync(path.join(__dirname, 'go.mod'), 'utf8');
const k8sVersion = /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)\b/m.exec(goMod)![1];

describe('control plane built from the upstream modules', () => {
  it(`kubectl version reports ${k8sVersion} for client and server`, async () => {
    const { stdout } = await kubectl(['version', '--output=json']);
    const v = JSON.parse(stdout) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
    expect(k8sVersion).toMatch(/^v1\.34\./);
    expect(v.clientVersion.gitVersion).toBe(k8sVersion);
    expect(v.serverVersion.gitVersion).toBe(k8sVersion);
  });

  it('the test client is admin in system:masters, and RBAC authorizes everybody else', async () => {
    const whoami = JSON.parse((await kubectl(['auth', 'whoami', '--output=json'])).stdout) as {
      status: { userInfo: { username: string; groups: string[] } };
    };
    expect(whoami.status.userInfo.username).toBe('admin');
    expect(whoami.status.userInfo.groups).toContain('system:masters');
    const nobody = await kubectl(['auth', 'can-i', 'list', 'pods', '--as=nobody'], { allowFailure: true });
    expect(nobody.stdout.trim()).toBe('no');
    const admin = await kubectl(['auth', 'can-i', '*', '*']);
    expect(admin.stdout.trim()).toBe('yes');
  });

  it('runs the garbage collector, EndpointSlice and namespace controllers', async () => {
    // The namespace controller is what finishes a namespace deletion.
    const name = `jt-nsctl-${Date.now()}`;
    await kubectl(['create', 'namespace', name]);
    await kubectl(['delete', 'namespace', name, '--wait=true', '--timeout=30s']);
    const gone = await kubectl(['get', 'namespace', name], { allowFailure: true });
    expect(gone.stderr).toContain('NotFound');
  });
});

// The CRDs themselves (CEL rules, printer columns, selectable fields) are tested by their owners.
itWhen(
  fs.existsSync(CRD_MANIFEST),
  `${CRD_MANIFEST} missing: run \`npx cdk8s synth\``,
  'the synthesized CRDs (dist/juneau-crds.k8s.yaml) are installed and Established',
  async () => {
    const crds = parseAllDocuments(fs.readFileSync(CRD_MANIFEST, 'utf8'))
      .map((d) => d.toJS() as { kind?: string; spec?: { group: string; names: { plural: string } } } | null)
      .filter((d) => d?.kind === 'CustomResourceDefinition');
    expect(crds.length).toBeGreaterThan(0);
    for (const crd of crds) await requireCrd(crd!.spec!.names.plural, crd!.spec!.group);
  },
);

describe('harness', () => {
  it('a warm start (cached binaries) of etcd + kube-apiserver + kube-controller-manager takes under 15 s, and stop() leaves nothing behind', async () => {
    const crdFiles = fs.existsSync(CRD_MANIFEST) ? [CRD_MANIFEST] : [];
    const t0 = Date.now();
    const cluster = await startCluster({ binDir: testBinDir(), crdFiles });
    const ms = Date.now() - t0;
    try {
      process.stderr.write(
        `cluster: warm start ${(ms / 1000).toFixed(1)} s (etcd ${cluster.timings.etcdMs} ms, apiserver ready ${cluster.timings.apiserverMs} ms, CRDs ${cluster.timings.crdsMs} ms)\n`,
      );
      expect(ms).toBeLessThan(15_000);
      const namespaces = await new RestClient(cluster.kubeConfig).list(Resources.namespaces);
      expect(namespaces.items.map((n) => n.metadata!.name)).toContain('kube-system');
      expect(cluster.processes.map((p) => p.name)).toEqual(['etcd', 'kube-apiserver', 'kube-controller-manager']);
      expect(cluster.processes.every((p) => isAlive(p.pid))).toBe(true);
    } finally {
      await cluster.stop();
    }
    expect(cluster.processes.filter((p) => isAlive(p.pid))).toEqual([]);
    expect(fs.existsSync(cluster.dir)).toBe(false);
  }, 60_000);

  it('a process that fails at start is reported with the tail of its log, and nothing is left running', async () => {
    let err: unknown;
    const before = new Set(fs.readdirSync('/tmp').filter((f) => f.startsWith('juneau-cluster-')));
    try {
      const c = await startCluster({ binDir: testBinDir(), extraArgs: { 'kube-apiserver': ['--no-such-flag=1'] } });
      await c.stop();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ClusterStartError);
    const message = (err as Error).message;
    expect(message).toContain('kube-apiserver exited');
    expect(message).toContain('unknown flag: --no-such-flag');
    const after = fs.readdirSync('/tmp').filter((f) => f.startsWith('juneau-cluster-') && !before.has(f));
    expect(after).toEqual([]);
  }, 60_000);
});
