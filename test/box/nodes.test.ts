// The cluster in a box through its command line, as a developer runs it: `cluster up --nodes 3
// --images busybox.tar`, then real kubelets run real pods — a Deployment spread over every node,
// a hostNetwork DaemonSet, `kubectl exec` and `kubectl logs`, a ClusterIP Service answered through
// each node's kube-proxy (nftables), the `kubernetes` Service with a pod's own token — and `down`
// leaves nothing on the host. A second `up`, killed mid-start, is cleaned up by `down` as well.
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sleep } from '../sleep';
import { runKubectl } from '../cluster/kubectl';
import { REPO_ROOT } from '../cluster/paths';
import { containerdPaths } from './containerd';
import { cmd, inNetns } from './exec';
import { mountNsFile } from './mounts';
import { BUSYBOX_IMAGE, writeBusyboxImage } from './images';
import { leftovers, snapshotHost, HostSnapshot } from './leftovers';
import { rssMiB } from './node';
import { describeOnBox, listPods } from './session';
import { BoxState, readBoxState } from './state';

const log = (line: string) => process.stdout.write(`${line}\n`);
const CLI = path.join(REPO_ROOT, 'test', 'cluster', 'cli.ts');

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI in this Node process's own child (node --import tsx), so a SIGKILL reaches `up` itself. */
function startCli(dir: string, args: string[]): { child: ChildProcess; done: Promise<CliRun> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, JUNEAU_CLUSTER_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c));
  child.stderr!.on('data', (c: Buffer) => (stderr += c));
  const done = new Promise<CliRun>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

async function cli(dir: string, args: string[]): Promise<CliRun> {
  const r = await startCli(dir, args).done;
  if (r.code !== 0) throw new Error(`cluster ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return r;
}

const WEB = `
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: default }
spec:
  replicas: 3
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - { labelSelector: { matchLabels: { app: web } }, topologyKey: kubernetes.io/hostname }
      containers:
        - name: httpd
          image: ${BUSYBOX_IMAGE}
          imagePullPolicy: Never
          command: [sh, -c, 'mkdir -p /www && hostname > /www/index.html && echo "serving $(hostname)" && exec httpd -f -p 8080 -h /www']
          ports: [{ containerPort: 8080 }]
          readinessProbe: { httpGet: { path: /, port: 8080 }, periodSeconds: 1 }
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: default }
spec:
  selector: { app: web }
  ports: [{ port: 80, targetPort: 8080 }]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: { name: hostnet, namespace: default }
spec:
  selector: { matchLabels: { app: hostnet } }
  template:
    metadata: { labels: { app: hostnet } }
    spec:
      hostNetwork: true
      terminationGracePeriodSeconds: 1
      containers:
        - name: sleep
          image: ${BUSYBOX_IMAGE}
          imagePullPolicy: Never
          command: [sleep, '2147483647']
          volumeMounts: [{ name: bpf, mountPath: /bpf }]
      volumes: [{ name: bpf, hostPath: { path: /sys/fs/bpf, type: Directory } }]
`;

describeOnBox('cluster in a box: real nodes (kubelet, containerd, kube-proxy)', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-box-test-'));
  /** The CLI's state directory (JUNEAU_CLUSTER_DIR): `down` deletes it. */
  const dir = path.join(work, 'cluster');
  let before: HostSnapshot;
  let box: BoxState;
  let kubectlRun: (args: string[], input?: string) => ReturnType<typeof runKubectl>;
  let kubectl: (args: string[], input?: string) => Promise<string>;
  const pods = (app: string) => listPods(kubectl, 'default', `app=${app}`);
  const nodeOf = (name: string) => box.nodes.find((n) => n.name === name)!;
  const inPodCidr = (ip: string, cidr: string) => ip.startsWith(cidr.replace(/0\/24$/, ''));

  beforeAll(async () => {
    before = snapshotHost();
    const image = path.join(work, 'busybox.tar');
    await writeBusyboxImage(image);
    const t0 = Date.now();
    const up = await cli(dir, ['up', '--nodes', '3', '--images', image]);
    log(`box figure: cluster up --nodes 3 = ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    log(
      up.stderr
        .split('\n')
        .filter((l) => l.startsWith('box:') || l.startsWith('cluster:build: built'))
        .join('\n'),
    );
    const status = JSON.parse((await cli(dir, ['status', '--json'])).stdout) as {
      binDir: string;
      kubeconfigPath: string;
      box: BoxState;
    };
    box = status.box;
    kubectlRun = (args, input) => runKubectl(status.binDir, status.kubeconfigPath, args, { input });
    kubectl = async (args, input) => {
      const r = await kubectlRun(args, input);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
  });

  afterAll(async () => {
    // A failed test must not leave a box behind.
    if (fs.existsSync(path.join(dir, 'box.json'))) await cli(dir, ['down']);
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('every node registers with its own address, kubelet v1.34.4 and containerd, Ready and untainted', async () => {
    const nodes = JSON.parse(await kubectl(['get', 'nodes', '-o', 'json'])).items as Array<{
      metadata: { name: string };
      spec: { taints?: unknown[] };
      status: {
        addresses: Array<{ type: string; address: string }>;
        nodeInfo: { kubeletVersion: string; containerRuntimeVersion: string };
        conditions: Array<{ type: string; status: string }>;
      };
    }>;
    expect(nodes.map((n) => n.metadata.name).sort()).toEqual(['node-0', 'node-1', 'node-2']);
    for (const n of nodes) {
      expect(n.status.addresses).toContainEqual({ type: 'InternalIP', address: nodeOf(n.metadata.name).ip });
      expect(n.status.nodeInfo.kubeletVersion).toBe('v1.34.4');
      expect(n.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/1\./);
      expect(n.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(n.spec.taints ?? []).toEqual([]);
    }
    for (const p of box.processes)
      log(`box figure: RSS ${p.node ?? 'host'}/${p.name} = ${rssMiB(p.pid)?.toFixed(0)} MiB`);
  });

  test("a Deployment spread over every node runs, pods addressed from their node's range; a hostNetwork DaemonSet runs on every node", async () => {
    const t0 = Date.now();
    await kubectl(['apply', '--server-side', '-f', '-'], WEB);
    await kubectl(['rollout', 'status', 'deployment/web', '--timeout=300s']);
    await kubectl(['rollout', 'status', 'daemonset/hostnet', '--timeout=300s']);
    log(`box figure: Deployment (3 pods) and DaemonSet rolled out in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const web = await pods('web');
    expect(web.map((p) => p.spec.nodeName).sort()).toEqual(['node-0', 'node-1', 'node-2']);
    for (const p of web) {
      expect(p.status.phase).toBe('Running');
      expect(inPodCidr(p.status.podIP!, nodeOf(p.spec.nodeName!).podCidr)).toBe(true);
    }
    const hostnet = await pods('hostnet');
    expect(hostnet.map((p) => [p.spec.nodeName, p.status.phase, p.status.podIP]).sort()).toEqual(
      box.nodes.map((n) => [n.name, 'Running', n.ip]),
    );
  });

  test('kubectl exec and kubectl logs reach a pod on every node', async () => {
    for (const p of await pods('web')) {
      expect((await kubectl(['exec', p.metadata.name, '--', 'hostname'])).trim()).toBe(p.metadata.name);
      expect(await kubectl(['logs', p.metadata.name])).toContain(`serving ${p.metadata.name}`);
    }
  });

  test("each node has its own /sys/fs/bpf: a hostPath into it shows that node's bpffs, not another's or the host's", async () => {
    for (const node of box.nodes)
      await cmd('nsenter', [`--mount=${mountNsFile(node)}`, 'mkdir', `/sys/fs/bpf/${node.name}-${box.id}`]);
    for (const p of await pods('hostnet')) {
      // (A fresh bpffs also holds the kernel's maps.debug and progs.debug.)
      const entries = (await kubectl(['exec', p.metadata.name, '--', 'ls', '/bpf']))
        .split('\n')
        .filter((e) => e && !e.endsWith('.debug'));
      expect(entries).toEqual([`${p.spec.nodeName}-${box.id}`]);
    }
    expect(fs.readdirSync('/sys/fs/bpf').filter((f) => f.includes(box.id))).toEqual([]);
  });

  test('a ClusterIP Service answers from a pod through kube-proxy (nftables): every backend, on every node, answers', async () => {
    const clusterIp = (await kubectl(['get', 'service', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    const web = await pods('web');
    const client = web.find((p) => p.spec.nodeName === 'node-0')!;
    // (busybox 1.35's wget -T segfaults after a successful transfer: `timeout` bounds it instead.)
    const loop = `for i in $(seq 60); do timeout 5 wget -q -O - http://${clusterIp}/; done`;
    const answers = new Set(
      (await kubectl(['exec', client.metadata.name, '--', 'sh', '-c', loop])).split('\n').filter(Boolean),
    );
    expect([...answers].sort()).toEqual(web.map((p) => p.metadata.name).sort());
    // The path is kube-proxy's: its nftables table in the client's node holds the Service address.
    expect(await inNetns(nodeOf('node-0').netns, 'nft', ['list', 'table', 'ip', 'kube-proxy'])).toContain(clusterIp);
  });

  test('a pod reaches the API server through the `kubernetes` Service with its own ServiceAccount token', async () => {
    const [pod] = await pods('web');
    const get = (auth: string) => [
      'exec',
      pod.metadata.name,
      '--',
      'sh',
      '-c',
      `timeout 10 wget -q -O - ${auth} https://10.96.0.1/api`,
    ];
    // Anonymous discovery is refused (403), so an answer proves the projected token authenticated.
    const anonymous = await kubectlRun(get(''));
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toContain('403 Forbidden');
    const api = JSON.parse(
      await kubectl(get('--header "Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)"')),
    ) as {
      kind: string;
      serverAddressByClientCIDRs: Array<{ serverAddress: string }>;
    };
    expect(api.kind).toBe('APIVersions');
    expect(api.serverAddressByClientCIDRs[0].serverAddress).toMatch(
      new RegExp(`^${box.hostIp.replace(/\./g, '\\.')}:\\d+$`),
    );
    // The root-ca publisher's kube-root-ca.crt, projected next to the token.
    expect(
      await kubectl(['exec', pod.metadata.name, '--', 'cat', '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt']),
    ).toContain('BEGIN CERTIFICATE');
  });

  test('`up` again keeps the running box and imports more --images into every node', async () => {
    const image = path.join(work, 'busybox-2.tar');
    await writeBusyboxImage(image, 'juneau.box/busybox:2');
    const again = await cli(dir, ['up', '--nodes', '3', '--images', image]);
    expect(again.stderr).toContain('already running');
    const pids = (b?: BoxState) => b?.processes.map((p) => `${p.node ?? 'host'}/${p.name}:${p.pid}`);
    expect(pids(readBoxState(path.join(dir, 'box.json')))).toEqual(pids(box));
    for (const node of box.nodes) {
      const images = await cmd('ctr', [
        '--address',
        containerdPaths(node).socket,
        '-n',
        'k8s.io',
        'images',
        'ls',
        '-q',
      ]);
      expect(images.split('\n')).toEqual(
        expect.arrayContaining(['juneau.box/busybox:1', 'juneau.box/busybox:2', 'juneau.box/pause:1']),
      );
    }
  });

  test('down stops and removes everything up created', async () => {
    const t0 = Date.now();
    await cli(dir, ['down']);
    log(`box figure: cluster down (3 nodes, running pods) = ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(leftovers(box, before, [dir])).toEqual([]);
    expect(fs.existsSync(dir)).toBe(false);
  });

  test('an `up` killed mid-start leaves daemons running; down removes them all', async () => {
    const { child, done } = startCli(dir, ['up', '--nodes', '1']);
    let crashed: BoxState | undefined;
    for (const until = Date.now() + 300_000; Date.now() < until; await sleep(200)) {
      crashed = readBoxState(path.join(dir, 'box.json'));
      if (crashed?.processes.some((p) => p.name === 'kubelet')) break;
    }
    child.kill('SIGKILL');
    const killed = await done;
    expect(killed.code).toBeNull(); // killed, not finished
    expect(crashed?.processes.map((p) => p.name)).toEqual(
      expect.arrayContaining(['kube-scheduler', 'containerd', 'kubelet']),
    );
    expect(leftovers(crashed!, before).length).toBeGreaterThan(0);
    await cli(dir, ['down']);
    expect(leftovers(crashed!, before, [dir])).toEqual([]);
  });
});
