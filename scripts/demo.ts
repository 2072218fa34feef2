/**
 * `npm run demo`: Juneau end to end on this machine. Brings up the e2e rig (a real control plane,
 * two controllers, three "worker" network namespaces with their agents, an upstream router),
 * applies the cdk8s examples (dist/examples.k8s.yaml), plays the kubelet for their two pods, and
 * prints the seeds' own views: `kubectl get elasticip`, `kubectl get arpadvertisement`,
 * `kubectl juneau bpf dump external_arp_table`, and an arping from the router showing the one MAC
 * that answers each address. Tears everything down, or keeps it with --keep until Ctrl-C.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { E2ERig } from '../test/e2e/rig';

const exec = promisify(execFile);
const REPO = path.resolve(__dirname, '..');
const HELP = `Usage: npm run demo [-- --keep]

Runs Juneau end to end in network namespaces on this machine and prints what an operator sees.
Needs root (network namespaces, XDP, bpffs), Go and the Debian packages of scripts/install-system-deps.sh.
  --keep   leave the rig running until Ctrl-C (prints how to reach it)
`;

const say = (line = '') => process.stdout.write(`${line}\n`);
const banner = (title: string) => say(`\n\x1b[1m== ${title}\x1b[0m`);

async function prepare(): Promise<void> {
  say('preparing: control-plane binaries, XDP object, bundled binaries, synthesized manifests ...');
  await exec('bash', ['test/cluster/build.sh'], { cwd: REPO });
  await exec('bash', ['bpf/build.sh'], { cwd: REPO });
  await exec(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO });
  await exec('npx', ['cdk8s', 'synth'], { cwd: REPO, env: { ...process.env, CDK8S_CHECK_UPGRADE: 'false' } });
}

/** What a scheduler and a kubelet would do: bind the pod to a node, then report it running and ready. */
async function runPodOn(rig: E2ERig, name: string, node: number, podIP: string): Promise<void> {
  await rig.core.createNamespacedBinding({ namespace: 'default', body: { metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: rig.nodeName(node) } } });
  const now = new Date().toISOString();
  await rig.core.patchNamespacedPodStatus(
    { namespace: 'default', name, body: { status: { phase: 'Running', podIP, podIPs: [{ ip: podIP }], conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({ type, status: 'True', lastTransitionTime: now })) } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) return (say(HELP), 0);
  if (process.getuid?.() !== 0) {
    process.stderr.write('npm run demo needs root: it creates network namespaces and loads XDP programs. Run it as root (e.g. `sudo npm run demo`).\n');
    return 1;
  }
  const keep = argv.includes('--keep');
  await prepare();
  const rig = new E2ERig({ network: false, log: (l) => say(`  ${l}`) });
  const stop = async () => {
    say('\ntearing down ...');
    await rig.stop();
  };
  try {
    await rig.start();
    banner('kubectl apply --server-side -f dist/examples.k8s.yaml');
    say(await rig.kubectl('apply', '--server-side', '-f', path.join(REPO, 'dist', 'examples.k8s.yaml')));
    await runPodOn(rig, 'web', 0, '10.244.1.10');
    await runPodOn(rig, 'nginx', 1, '10.244.2.10');
    say('(playing the kubelet: pod web runs on worker-1, pod nginx on worker-2)');

    const vip = await rig.waitFor('the web Service VIP', async () => (await rig.serviceLoadBalancer('web', 'default'))?.vip, 60_000);
    await rig.net.addVipToAllNodes(vip); // what kube-proxy in ipvs mode does on every node (seed 004)
    // By owner, not by name (names may carry a hash); a timeout prints the owner's status and every
    // ARPAdvertisement there is.
    const owners = [
      { kind: 'ElasticIP', namespace: 'default', name: 'web-eip' },
      { kind: 'ElasticIP', namespace: 'default', name: 'nginx-eip' },
      { kind: 'ServiceLoadBalancer', namespace: 'default', name: 'web' },
    ] as const;
    for (const owner of owners) {
      const ad = await rig.waitForAdvertisement(owner, 60_000);
      // The answering node's agent has written it into its map (ARP-10).
      const node = rig.nodeIndex(ad.nodeName);
      await rig.waitFor(`${ad.address} in the external_arp_table of ${ad.nodeName}`, async () => (await rig.dumpArpTable(node)).includes(ad.address), 30_000, 200, () => rig.dumpArpTable(node));
    }

    banner('kubectl get elasticip');
    say(await rig.kubectl('get', 'elasticip', '-n', 'default'));
    banner('kubectl get arpadvertisement');
    say(await rig.kubectl('get', 'arpadvertisement'));
    banner('kubectl get svc web');
    say(await rig.kubectl('get', 'svc', 'web', '-n', 'default'));
    for (let i = 0; i < rig.net.nodeCount; i++) {
      banner(`${rig.nodeName(i)}: kubectl juneau bpf dump external_arp_table`);
      say(await rig.dumpArpTable(i));
    }

    const eips = JSON.parse(await rig.kubectl('get', 'elasticip', '-n', 'default', '-o', 'json')) as { items: Array<{ metadata: { name: string }; status?: { address?: string } }> };
    const addresses = [...eips.items.map((e) => [e.metadata.name, e.status?.address] as const), ['Service web (VIP, on every kube-ipvs0)', vip] as const];
    banner('arping from the upstream router, a fresh neighbour table for every probe');
    for (const [what, address] of addresses) {
      if (!address) continue;
      const probes = await rig.net.probeFromFreshRouter(address, 5, 300);
      const macs = [...new Set(probes.flat())];
      const who = macs.map((m) => `${m} (${rig.nodeName(rig.net.nodeOfMac(m))})`).join(', ') || 'nobody';
      say(`${address.padEnd(15)} ${what.padEnd(40)} ${probes.filter((p) => p.length === 1).length}/${probes.length} probes answered by exactly one MAC: ${who}`);
    }
    if (keep) {
      banner('the rig keeps running (Ctrl-C to tear down)');
      say(`export KUBECONFIG=${rig.cluster.kubeconfigPath}`);
      say(`export PATH=${rig.cluster.binDir}:$PATH`);
      say(`router: nsenter --net=/var/run/netns/${rig.net.router} arping -I br0 ${vip}`);
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
    return 0;
  } finally {
    await stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  },
);
