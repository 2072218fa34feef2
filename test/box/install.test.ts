// The install manifest applied as is on the cluster in a box: `npm run images`
// and `npx cdk8s synth` as a user runs them, `cluster up --nodes 3` with the image imported into
// every node, then `kubectl apply --server-side -f dist/juneau-crds.k8s.yaml -f
// dist/juneau-install.k8s.yaml` unchanged: both controller replicas Ready with one leader, the
// webhooks called by the API server through their Service, the agent on every node with exactly
// CAP_BPF + CAP_NET_ADMIN and its XDP responder attached to the node's eth0, `kubectl exec` into an
// agent running kubectl-juneau; then dist/examples.k8s.yaml answered over ARP by exactly one MAC
// per address, asked from a router namespace plugged into the box's bridge.
//
// Two things stand in for what this machine has not: the examples' `nginx:1.27` is a busybox
// httpd image of that name imported into the nodes (no registry; the examples pull IfNotPresent),
// and the nodes sit on 10.225.32.0/24 (`up --node-subnet`) because the examples' pool
// 10.225.32.240-250 must lie in the nodes' subnet (EN-12).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sleep } from '../sleep';
import { runKubectl } from '../cluster/kubectl';
import { REPO_ROOT } from '../cluster/paths';
import { cmd, inNetns } from './exec';
import { writeNginxStandIn } from './images';
import { answeringMacs, macOf } from './router-view';
import { BoxState } from './state';
import { addRouter, agentPidsInNetns } from './upstream';
import {
  boxCli,
  boxStatus,
  DIST,
  cleanUpBox,
  IMAGE,
  installJuneau,
  juneauInAgent,
  type Kubectl,
  kubectlFor,
  describeOnBox,
  listPods,
  type PodJson,
} from './session';

const log = (line: string) => process.stdout.write(`${line}\n`);
const NODE_SUBNET = '10.225.32';
const ROUTER_IP = `${NODE_SUBNET}.254`;
const NS = 'juneau-system';
/** CAP_NET_ADMIN (12), CAP_NET_RAW (13, FO-1 announcements) and CAP_BPF (39): the agent's effective set, nothing else. */
const AGENT_CAP_EFF = (1n << 12n) | (1n << 13n) | (1n << 39n);

describeOnBox('the install manifest applied as is on real nodes', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-install-box-'));
  const dir = path.join(work, 'cluster');
  let box: BoxState;
  let router = '';
  let kubectlRun: (args: string[], input?: string) => ReturnType<typeof runKubectl>;
  let kubectl: Kubectl;
  let tInstall = 0;
  let plugin: (args: string[]) => Promise<{ code: number; stdout: string; stderr: string }>;
  const nodeOf = (name: string) => box.nodes.find((n) => n.name === name)!;
  const pods = (ns: string, selector: string) => listPods(kubectl, ns, selector);
  const ready = (p: PodJson) =>
    p.status.phase === 'Running' && !!p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  const xdpProgId = async (netns: string) =>
    (
      JSON.parse(await inNetns(netns, 'ip', ['-j', '-d', 'link', 'show', 'dev', 'eth0'])) as Array<{
        xdp?: { prog?: { id: number } };
      }>
    )[0].xdp?.prog?.id ?? 0;

  beforeAll(async () => {
    // What the user builds, the image and the manifests from this tree: the global setup built them.
    log(`install figure: image ${IMAGE} = ${(fs.statSync(IMAGE).size / 1e6).toFixed(1)} MB`);
    const nginx = path.join(work, 'nginx.tar');
    await writeNginxStandIn(nginx);
    const t0 = Date.now();
    boxCli(dir, ['up', '--nodes', '3', '--node-subnet', `${NODE_SUBNET}.0/24`, '--images', `${IMAGE},${nginx}`]);
    log(`install figure: cluster up --nodes 3 (with the image imported) = ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const status = boxStatus(dir);
    box = status.box;
    kubectlRun = (args, input) => runKubectl(status.binDir, status.kubeconfigPath, args, { input });
    // The bundled plugin beside the box's kubectl, as `kubectl juneau` runs it on a workstation.
    plugin = (args) =>
      new Promise((resolve) =>
        execFile(
          process.execPath,
          [path.join(REPO_ROOT, 'build', 'bin', 'kubectl-juneau.js'), '--kubeconfig', status.kubeconfigPath, ...args],
          { env: { ...process.env, KUBECTL: path.join(status.binDir, 'kubectl') } },
          (err, stdout, stderr) =>
            resolve({ code: err ? Number((err as { code?: unknown }).code ?? -1) : 0, stdout, stderr }),
        ),
      );
    kubectl = kubectlFor(status);
    router = await addRouter(box, ROUTER_IP);
  });

  afterAll(() => cleanUpBox(work, dir, [router]));

  test('kubectl apply --server-side of the synthesized CRDs and install: both controllers Ready with one leader, the agent on every node', async () => {
    tInstall = Date.now();
    await installJuneau(kubectl);
    log(
      `install figure: kubectl apply -> controller and agents rolled out = ${((Date.now() - tInstall) / 1000).toFixed(1)} s`,
    );
    const controllers = await pods(NS, 'app.kubernetes.io/name=juneau-controller');
    expect(controllers.map(ready)).toEqual([true, true]);
    const lease = JSON.parse(await kubectl(['-n', NS, 'get', 'lease', 'juneau-controller', '-o', 'json'])) as {
      spec: { holderIdentity: string };
    };
    expect(controllers.filter((p) => lease.spec.holderIdentity.startsWith(`${p.metadata.name}_`))).toHaveLength(1);
    const agents = await pods(NS, 'app.kubernetes.io/name=juneau-agent');
    expect(agents.map((p) => [p.spec.nodeName, ready(p)]).sort()).toEqual(box.nodes.map((n) => [n.name, true]));
  });

  test("the agent runs with CAP_BPF, CAP_NET_ADMIN and CAP_NET_RAW (FO-1) only, its own bpffs directory, and its XDP responder attached to each node's eth0", async () => {
    for (const p of await pods(NS, 'app.kubernetes.io/name=juneau-agent')) {
      expect(p.spec.containers[0].securityContext?.capabilities).toEqual({
        drop: ['ALL'],
        add: ['BPF', 'NET_ADMIN', 'NET_RAW'],
      });
      // Its bpffs directory, and the node's CNI dirs juneau-cni is installed into (CNI-1).
      expect(p.spec.volumes?.filter((v) => v.hostPath).map((v) => v.hostPath!.path)).toEqual([
        '/sys/fs/bpf/juneau',
        '/opt/cni/bin',
        '/etc/cni/net.d',
      ]);
      const node = nodeOf(p.spec.nodeName!);
      expect(await xdpProgId(node.netns)).toBeGreaterThan(0);
      // The running process's effective capabilities, read from the host (the image has no shell).
      const agentPids = agentPidsInNetns(node.netns);
      expect(agentPids).toHaveLength(1);
      const capEff = /CapEff:\s*([0-9a-f]+)/.exec(fs.readFileSync(`/proc/${agentPids[0]}/status`, 'utf8'))![1];
      expect(BigInt(`0x${capEff}`)).toBe(AGENT_CAP_EFF);
      // The pins, in the node's own bpffs under the agent's directory.
      const pins = await cmd('nsenter', [
        `--mount=/run/juneau-box/mnt/${node.netns}`,
        'ls',
        '/sys/fs/bpf/juneau/juneau/v1',
      ]);
      expect(pins.split('\n')).toContain('external_arp_table');
    }
  });

  test('the examples are answered over ARP from a router by exactly one MAC each, the MAC of the node their ARPAdvertisement names', async () => {
    const tExamples = Date.now();
    await kubectl(['apply', '--server-side', '-f', DIST('examples.k8s.yaml')]);
    const macs = new Map(
      await Promise.all(box.nodes.map(async (n) => [n.name, await macOf(n.netns, 'eth0')] as const)),
    );
    // The examples' three addresses: two ElasticIPs and the LoadBalancer Service's VIP.
    let adverts: Array<{ spec: { address: string; nodeName: string } }> = [];
    for (const until = Date.now() + 300_000; Date.now() < until; await sleep(500)) {
      adverts = (
        JSON.parse(await kubectl(['get', 'arpadvertisements', '-A', '-o', 'json'])) as { items: typeof adverts }
      ).items;
      if (adverts.length >= 3) break;
    }
    expect(adverts).toHaveLength(3);
    const answered = new Map<string, string[]>();
    for (const until = Date.now() + 120_000; Date.now() < until && answered.size < adverts.length;) {
      for (const a of adverts)
        if (!answered.has(a.spec.address)) {
          const m = await answeringMacs(router, a.spec.address);
          if (m.length) answered.set(a.spec.address, m);
        }
    }
    log(
      `install figure: examples answered ${((Date.now() - tExamples) / 1000).toFixed(1)} s after their apply, ${((Date.now() - tInstall) / 1000).toFixed(1)} s after the install's kubectl apply`,
    );
    expect(Object.fromEntries(answered)).toEqual(
      Object.fromEntries(adverts.map((a) => [a.spec.address, [macs.get(a.spec.nodeName)]])),
    );
    for (const a of adverts) expect(a.spec.address.startsWith(`${NODE_SUBNET}.`)).toBe(true);
  });

  /** The ARPAdvertisements now: address and node. */
  const advertisements = async () =>
    (
      JSON.parse(await kubectl(['get', 'arpadvertisements', '-A', '-o', 'json'])) as {
        items: Array<{ spec: { address: string; nodeName: string } }>;
      }
    ).items.map((a) => a.spec);
  const addressesOn = (adverts: Array<{ address: string; nodeName: string }>, node: string) =>
    adverts
      .filter((a) => a.nodeName === node)
      .map((a) => a.address)
      .sort();

  // After the examples: each node's table then holds the addresses its ARPAdvertisements name, and
  // the router's requests (at least the 3 broadcasts that found each address answered) are counted.
  test("kubectl exec into an agent runs kubectl-juneau bpf dump external_arp_table: on every node, a table of exactly the addresses its ARPAdvertisements name, with the router's requests and the replies counted", async () => {
    const adverts = await advertisements();
    expect(adverts).toHaveLength(3);
    for (const agent of await pods(NS, 'app.kubernetes.io/name=juneau-agent')) {
      const node = agent.spec.nodeName!;
      const r = await kubectlRun(juneauInAgent(agent.metadata.name, ['bpf', 'dump', 'external_arp_table']));
      log(`kubectl-juneau bpf dump external_arp_table on ${node}:\n${r.stdout}`);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      const [header, ...lines] = r.stdout.trimEnd().split('\n');
      expect(header.split(/\s{2,}/)).toEqual([
        'ADDRESS',
        'REQUESTS',
        'REPLIES',
        'CONFLICTS',
        'LAST CONFLICT MAC',
        'LAST CONFLICT',
      ]);
      const rows = lines.map((l) => l.split(/\s+/));
      expect({ node, addresses: rows.map((c) => c[0]) }).toEqual({ node, addresses: addressesOn(adverts, node) });
      for (const [address, requests, replies, conflicts] of rows) {
        expect({ address, requests: Number(requests) >= 3, replies: Number(replies) >= 3, conflicts }).toEqual({
          address,
          requests: true,
          replies: true,
          conflicts: '0',
        });
      }
    }
  });

  test("kubectl juneau bpf dump --node NAME -o json runs the dump in that node's agent Pod: its rows are that node's addresses, answered, no conflict", async () => {
    const adverts = await advertisements();
    // The node holding the most of the examples' addresses (at least one of the three).
    const node = box.nodes
      .map((n) => n.name)
      .sort((x, y) => addressesOn(adverts, y).length - addressesOn(adverts, x).length)[0];
    const agent = (await pods(NS, 'app.kubernetes.io/name=juneau-agent')).find((p) => p.spec.nodeName === node)!;
    const r = await plugin(['bpf', 'dump', 'external_arp_table', '--node', node, '-o', 'json']);
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 0,
      stderr: `kubectl-juneau: running in Pod ${NS}/${agent.metadata.name} on node ${node}\n`,
    });
    const rows = JSON.parse(r.stdout) as Array<{
      address: string;
      requests: number;
      replies: number;
      conflicts: number;
      lastConflictMac: string | null;
    }>;
    log(`kubectl juneau bpf dump external_arp_table --node ${node} -o json: ${JSON.stringify(rows)}`);
    expect(rows.map((x) => x.address)).toEqual(addressesOn(adverts, node));
    expect(rows.length).toBeGreaterThan(0);
    for (const x of rows)
      expect({ ...x, requests: x.requests >= 3, replies: x.replies >= 3 }).toEqual({
        ...x,
        requests: true,
        replies: true,
        conflicts: 0,
        lastConflictMac: null,
      });
  });

  test('the API server calls the webhook through its Service: an ExternalNetwork sharing arp-pool (EN-4) is refused', async () => {
    const second = `apiVersion: juneau.loutres.me/v1alpha1\nkind: ExternalNetwork\nmetadata: { name: second }\nspec: { type: arp, addressPools: [arp-pool] }\n`;
    const r = await kubectlRun(['apply', '--server-side', '-f', '-'], second);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('admission webhook "externalnetworks.juneau.loutres.me" denied the request');
    expect(r.stderr).toContain('arp-pool');
  });

  test('a rolling restart of the agents keeps the responder attached and its pinned maps (adopted by the new agents, not recreated)', async () => {
    const before = new Set((await pods(NS, 'app.kubernetes.io/name=juneau-agent')).map((p) => p.metadata.name));
    await kubectl(['-n', NS, 'rollout', 'restart', 'daemonset/juneau-agent']);
    await kubectl(['-n', NS, 'rollout', 'status', 'daemonset/juneau-agent', '--timeout=300s']);
    const after = await pods(NS, 'app.kubernetes.io/name=juneau-agent');
    expect(after.filter((p) => before.has(p.metadata.name))).toEqual([]);
    for (const p of after) {
      // An agent that detached and unpinned on its stop would leave the next one nothing to adopt.
      const attached = (await kubectl(['-n', NS, 'logs', p.metadata.name]))
        .split('\n')
        .filter((l) => l.includes('"responder attached"'))
        .map((l) => JSON.parse(l) as { adoptedMaps: string[] });
      expect(attached).toHaveLength(1);
      expect(attached[0].adoptedMaps).toContain('external_arp_table');
      expect(await xdpProgId(nodeOf(p.spec.nodeName!).netns)).toBeGreaterThan(0);
    }
  });

  test('SEC-21: kubectl juneau uninstall with the examples still present (ElasticIPs, an attachment, a LoadBalancer Service) completes, leaves no CRD or namespace Terminating, detaches the responder and removes the pins on every node', async () => {
    const lbService = async () =>
      JSON.parse(await kubectl(['get', 'service', 'web', '-n', 'default', '-o', 'json'])) as {
        status?: { loadBalancer?: { ingress?: Array<{ ip: string }> } };
      };
    // The positive controls: what the finalizers hold is there before the uninstall.
    expect((await lbService()).status?.loadBalancer?.ingress?.length).toBe(1);
    const held = await kubectl(['get', 'elasticips,elasticipattachments,serviceloadbalancers', '-A', '-o', 'name']);
    expect(held).toContain('elasticipattachment.juneau.loutres.me/nginx-eip-attach');
    expect(held).toContain('serviceloadbalancer.juneau.loutres.me/web');
    const t0 = Date.now();
    const files = [DIST('juneau-crds.k8s.yaml'), DIST('juneau-install.k8s.yaml')].join(',');
    const running = plugin(['uninstall', '-f', files, '--timeout', '300s']);
    // EIP-15: the example Pod `web` holds web-eip directly; its deletion waits for the Pod, as an
    // operator reads in the progress output. Delete the Pod once the ElasticIP is waiting for it.
    const deadline = Date.now() + 60_000;
    const waitingForPod = async () =>
      (await kubectl(['get', 'elasticip', 'web-eip', '-n', 'default', '-o', 'json', '--ignore-not-found'])).includes(
        'WaitingForNetworkInterfaces',
      );
    while (!(await waitingForPod())) {
      if (Date.now() > deadline) throw new Error('web-eip never waited for the Pod that holds it (EIP-15)');
      await sleep(500);
    }
    await kubectl(['delete', 'pod', 'web', '-n', 'default', '--wait=false']);
    const r = await running;
    log(`install figure: kubectl juneau uninstall = ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    log(`kubectl juneau uninstall, exit ${r.code}:\n${r.stdout}${r.stderr}`);
    expect(r).toEqual({ code: 0, stdout: expect.any(String), stderr: expect.not.stringContaining('uninstall:') });
    expect(r.stdout).toContain(`uninstall: controller ${NS}/juneau-controller is running`);
    expect(r.stdout).toContain('uninstall: deleted ElasticIPAttachment default/nginx-eip-attach');
    expect(r.stdout).toMatch(
      /uninstall: waiting for the controller to release (ElasticIP|ServiceLoadBalancer|CustomResourceDefinition)/,
    );
    expect(r.stdout).toContain('uninstall: done');
    // The controller released the Service's VIP (the SLB finalizer ran), and nothing Juneau is left.
    expect((await lbService()).status?.loadBalancer?.ingress).toBeUndefined();
    const crds = JSON.parse(await kubectl(['get', 'customresourcedefinitions', '-o', 'json'])) as {
      items: Array<{ spec: { group: string }; metadata: { name: string } }>;
    };
    expect(crds.items.filter((c) => c.spec.group === 'juneau.loutres.me').map((c) => c.metadata.name)).toEqual([]);
    expect((await kubectlRun(['get', 'namespace', NS])).stderr).toContain('NotFound');
    for (const node of box.nodes) {
      expect({ node: node.name, xdp: await xdpProgId(node.netns) }).toEqual({ node: node.name, xdp: 0 });
      // The kubelet's hostPath directory stays (it never removes one); the agent's pins are gone.
      const left = await cmd('nsenter', [
        `--mount=/run/juneau-box/mnt/${node.netns}`,
        'ls',
        '-A',
        '/sys/fs/bpf/juneau',
      ]);
      expect({ node: node.name, left: left.split('\n').filter(Boolean) }).toEqual({ node: node.name, left: [] });
    }
  });
});
