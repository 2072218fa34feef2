/**
 * `npm run demo`: Juneau end to end on this machine, on the cluster in a box (test/box): a real
 * control plane and three real nodes (kubelet, containerd, kube-proxy in nftables mode, kube-ipvs0
 * holding every VIP), Juneau installed from the built image and the synthesized manifest, the
 * cdk8s examples (dist/examples.k8s.yaml) applied as a user applies them, and an upstream router
 * namespace on the nodes' segment. Prints the seeds' own views (`kubectl get elasticip`,
 * `kubectl get arpadvertisement`, `kubectl juneau bpf dump` on every node, an arping showing the
 * one MAC that answers each address) and ends with `curl` through the ElasticIPs and the VIP.
 * Tears everything down, or keeps it with --keep until Ctrl-C.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { runKubectl } from '../test/cluster/kubectl';
import { cmd } from '../test/box/exec';
import { writeNginxStandIn } from '../test/box/images';
import { nodesByMac } from '../test/box/router-view';
import type { BoxState } from '../test/box/state';
import { addRouter, pidsOf } from '../test/box/upstream';
import { sleep } from '../test/sleep';
import { readFlags } from '../runtime/kube/flags';

const exec = promisify(execFile);
const REPO = path.resolve(__dirname, '..');
/** The examples' pool is 10.225.32.240-250: the nodes must sit in that subnet (EN-12). */
const SEGMENT = '10.225.32';
const ROUTER_IP = `${SEGMENT}.254`;
const HELP = `Usage: npm run demo [-- --keep]

Runs Juneau end to end on a cluster in a box on this machine and prints what an operator sees.
Needs root (network namespaces, kubelets, containerd, XDP), Go and the Debian packages of
scripts/install-system-deps.sh; the nodes take 10.225.32.0/24, the examples' subnet.
  --keep   leave the box running until Ctrl-C (prints how to reach it)
`;

const say = (line = '') => process.stdout.write(`${line}\n`);
const banner = (title: string) => say(`\n\x1b[1m== ${title}\x1b[0m`);

async function prepare(): Promise<void> {
  say('preparing: control-plane and node binaries, eBPF objects, bundled binaries, image, synthesized manifests ...');
  await exec('bash', ['test/cluster/build.sh', '--nodes'], { cwd: REPO, maxBuffer: 64 << 20 });
  await exec('bash', ['bpf/build.sh'], { cwd: REPO });
  await exec(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO });
  await exec('npm', ['run', '-s', 'images'], { cwd: REPO, maxBuffer: 64 << 20 });
  await exec('npx', ['cdk8s', 'synth'], { cwd: REPO, env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false' } });
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 180_000): Promise<T> {
  for (const end = Date.now() + timeoutMs; ; await sleep(500)) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

async function main(argv: string[]): Promise<number> {
  const flags = { keep: false };
  if (readFlags(argv, { keep: { field: 'keep', boolean: true } }, {}, flags)) return (say(HELP), 0);
  if (process.getuid?.() !== 0) {
    process.stderr.write(
      'npm run demo needs root: it creates network namespaces, runs kubelets and loads eBPF programs. Run it as root (e.g. `sudo npm run demo`).\n',
    );
    return 1;
  }
  const { keep } = flags;
  await prepare();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-demo-'));
  const dir = path.join(work, 'cluster');
  const cli = (args: string[]) =>
    exec(process.execPath, ['--import', 'tsx', path.join(REPO, 'test', 'cluster', 'cli.ts'), ...args], {
      cwd: REPO,
      env: { ...process.env, JUNEAU_CLUSTER_DIR: dir },
      maxBuffer: 64 << 20,
    }).then((r) => r.stdout);
  let router = '';
  try {
    const nginx = path.join(work, 'nginx.tar');
    await writeNginxStandIn(nginx);
    say(
      `cluster up --nodes 3 --node-subnet ${SEGMENT}.0/24 (the Juneau image and a busybox httpd standing in for the examples' nginx:1.27 imported; no registry here) ...`,
    );
    await cli([
      'up',
      '--nodes',
      '3',
      '--node-subnet',
      `${SEGMENT}.0/24`,
      '--images',
      `${path.join(REPO, 'build', 'images', 'juneau.oci.tar')},${nginx}`,
    ]);
    const status = JSON.parse(await cli(['status', '--json'])) as {
      binDir: string;
      kubeconfigPath: string;
      box: BoxState;
    };
    const box = status.box;
    const kubectl = async (...args: string[]) => {
      const r = await runKubectl(status.binDir, status.kubeconfigPath, args);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout.trimEnd();
    };
    router = await addRouter(box, ROUTER_IP);
    const inRouter = (script: string) =>
      cmd('nsenter', [`--net=/var/run/netns/${router}`, 'bash', '--norc', '-c', script]);

    banner('kubectl apply --server-side -f dist/juneau-crds.k8s.yaml -f dist/juneau-install.k8s.yaml');
    say(
      await kubectl(
        'apply',
        '--server-side',
        '-f',
        path.join(REPO, 'dist', 'juneau-crds.k8s.yaml'),
        '-f',
        path.join(REPO, 'dist', 'juneau-install.k8s.yaml'),
      ),
    );
    await kubectl('-n', 'juneau-system', 'rollout', 'status', 'deployment/juneau-controller', '--timeout=300s');
    await kubectl('-n', 'juneau-system', 'rollout', 'status', 'daemonset/juneau-agent', '--timeout=300s');

    banner('kubectl apply --server-side -f dist/examples.k8s.yaml');
    say(await kubectl('apply', '--server-side', '-f', path.join(REPO, 'dist', 'examples.k8s.yaml')));
    await kubectl('wait', '-n', 'default', 'pod/web', 'pod/nginx', '--for=condition=Ready', '--timeout=300s');
    // web-eip is used directly (EIP-4): juneau-cni, which the agents chained into each node's CNI
    // configuration, put it on pod web's eth0 (CNI-1); the demo only shows it.
    const webEip = JSON.parse(await kubectl('get', 'elasticip', 'web-eip', '-n', 'default', '-o', 'json')) as {
      status?: { address?: string };
    };
    const [webPid] = pidsOf('httpd', (pid) =>
      fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes('HOSTNAME=web'),
    );
    if (!webPid || !webEip.status?.address) throw new Error('pod web or the address of ElasticIP web-eip not found');
    banner('ip -4 addr show dev eth0, inside pod web');
    say(await cmd('nsenter', [`--net=/proc/${webPid}/ns/net`, 'ip', '-4', 'addr', 'show', 'dev', 'eth0']));

    await waitFor('the three ARPAdvertisements', async () => {
      const items = (
        JSON.parse(await kubectl('get', 'arpadvertisements', '-o', 'json')) as {
          items: Array<{ spec: { address: string; nodeName: string } }>;
        }
      ).items;
      return items.length >= 3 ? items : undefined;
    });
    banner('kubectl get elasticip');
    say(await kubectl('get', 'elasticip', '-n', 'default'));
    banner('kubectl get arpadvertisement');
    say(await kubectl('get', 'arpadvertisement'));
    banner('kubectl get svc web');
    say(await kubectl('get', 'svc', 'web', '-n', 'default'));
    const agents = (
      JSON.parse(
        await kubectl('-n', 'juneau-system', 'get', 'pods', '-l', 'app.kubernetes.io/name=juneau-agent', '-o', 'json'),
      ) as { items: Array<{ metadata: { name: string }; spec: { nodeName: string } }> }
    ).items;
    for (const a of agents.sort((x, y) => x.spec.nodeName.localeCompare(y.spec.nodeName))) {
      for (const table of ['external_arp_table', 'nat']) {
        banner(`${a.spec.nodeName}: kubectl juneau bpf dump ${table}`);
        say(
          await kubectl('-n', 'juneau-system', 'exec', a.metadata.name, '--', 'kubectl-juneau', 'bpf', 'dump', table),
        );
      }
    }

    const macs = await nodesByMac(box);
    const vip = await waitFor(
      'the web Service VIP',
      async () =>
        (
          JSON.parse(await kubectl('get', 'svc', 'web', '-n', 'default', '-o', 'json')) as {
            status?: { loadBalancer?: { ingress?: Array<{ ip?: string }> } };
          }
        ).status?.loadBalancer?.ingress?.[0]?.ip,
    );
    const eips = (
      JSON.parse(await kubectl('get', 'elasticip', '-n', 'default', '-o', 'json')) as {
        items: Array<{ metadata: { name: string }; status?: { address?: string } }>;
      }
    ).items;
    const addresses = [
      ...eips.map((e) => [`ElasticIP ${e.metadata.name}`, e.status?.address ?? ''] as const),
      ['Service web (VIP, on every kube-ipvs0)', vip] as const,
    ];
    banner('arping from the upstream router, a fresh neighbour table for every probe');
    for (const [what, address] of addresses) {
      const seen: string[][] = [];
      for (let i = 0; i < 5; i++) {
        const r = await inRouter(`ip neigh flush to ${address} dev eth0; arping -c 1 -w 2 -I eth0 ${address} || true`);
        seen.push([
          ...new Set([...r.matchAll(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/g)].map((m) => m[1].toLowerCase())),
        ]);
      }
      const who = [...new Set(seen.flat())].map((m) => `${m} (${macs.get(m) ?? '?'})`).join(', ') || 'nobody';
      say(
        `${address.padEnd(15)} ${what.padEnd(40)} ${seen.filter((s) => s.length === 1).length}/${seen.length} probes answered by exactly one MAC: ${who}`,
      );
    }

    // The pages are the pods' hostnames: which pod answered.
    const nat = eips.find((e) => e.metadata.name === 'nginx-eip')?.status?.address;
    banner('curl from the upstream router');
    for (const [what, url] of [
      ['ElasticIP nginx-eip (1:1 NAT to pod nginx)', `http://${nat}/`],
      ['ElasticIP web-eip (held by pod web)', `http://${webEip.status.address}:8080/`],
      ['Service web VIP (kube-proxy -> pod web)', `http://${vip}/`],
    ]) {
      const line = `curl -s -m 5 ${url}`;
      const page = await waitFor(
        `${line} from the router`,
        async () => (await inRouter(`${line} || true`)).trim() || undefined,
        60_000,
      );
      say(`$ ${line.padEnd(40)} # ${what}\n${page}`);
    }

    if (keep) {
      banner('the box keeps running (Ctrl-C to tear down)');
      say(`export KUBECONFIG=${status.kubeconfigPath}`);
      say(`export PATH=${status.binDir}:$PATH`);
      say(`router: nsenter --net=/var/run/netns/${router} curl http://${vip}/`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
    return 0;
  } finally {
    say('\ntearing down ...');
    if (router) await cmd('ip', ['netns', 'del', router]);
    if (fs.existsSync(path.join(dir, 'box.json'))) await cli(['down']);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
