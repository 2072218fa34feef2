// The end-to-end scenarios that moved from the old rig (deleted; it wrote pod status) to the
// cluster in a box: Juneau installed from the built image and the synthesized
// manifest unchanged, the echo image (scripts/images/echo.ts) as real pods behind an
// `externalTrafficPolicy: Local` LoadBalancer Service, each backend change made as an operator
// makes it (cordon and delete a pod, a second Deployment, scale to 0), and the answers seen from a
// router namespace on the nodes' segment with Linux's default neighbour timers.
//
// The box picks its own subnet (slot b, beside install/traffic.test.ts on 10.225.32.0/24): the pool
// is taken from the nodes' segment, as EN-12 requires. The API server writes an audit log of the
// install's ServiceAccounts (`up --audit-policy`), read by the last test.
import * as path from 'node:path';
import { ECHO_IMAGE } from '../../scripts/images/echo';
import { INSTALL } from '../../api/constants';
import { sleep } from '../sleep';
import { elapsedSince, figure } from '../shared/figures';
import { auditOf, installManifest, rulesOf, writeAuditPolicy } from '../shared/install-identity';
import { auditLogPath } from './box';
import { inNetns } from './exec';
import { KUBE_IPVS0 } from './ipvs';
import { ARP_REPLY } from '../netns/pcap';
import {
  answeringMacs,
  arpAnswers,
  captureArp,
  macOf,
  firstBroadcastAsk,
  gratuitousFor,
  neighbourMac,
  watchLines,
} from './router-view';
import { sharedEchoBox } from './echo-box';
import {
  advertisedNodes,
  echoDeployment,
  echoServiceYaml,
  agentPods,
  describeOnBox,
  arpNetworkYaml,
  juneauInAgent,
  listPods,
} from './session';

const log = (line: string) => process.stdout.write(`${line}\n`);
const NS = INSTALL.namespace;
/** One line per ARPAdvertisement event: any write changes its resourceVersion. */
const ADVERT_COLUMNS =
  'custom-columns=NAME:.metadata.name,ADDRESS:.spec.address,NODE:.spec.nodeName,RV:.metadata.resourceVersion';

/** A pool in the nodes' segment (EN-12), its network, and the Local LoadBalancer Service echo on `vip`. */
const network = (segment: string, vip: string) =>
  `${arpNetworkYaml(segment)}---\n${echoServiceYaml({ network: 'box-net', vip })}`;

interface ServiceLoadBalancerStatus {
  phase?: string;
  arpAnnouncingNode?: string;
  advertisingNodes?: string[];
}

describeOnBox('the e2e scenarios on real nodes: one answer per address, from a node that can serve it', () => {
  const echoBox = sharedEchoBox('juneau-scenarios-box-', (work) => {
    const policy = path.join(work, 'audit-policy.json');
    writeAuditPolicy(policy, NS);
    return {
      nodes: 3,
      label: 'box scenarios',
      upArgs: ['--audit-policy', policy],
      upNote: 'images imported, audit log on',
    };
  });
  const { kubectl, inRouter } = echoBox;
  let vip = '';
  const macs = new Map<string, string>();
  let routerMac = '';
  const nodeNames = () => echoBox.box.nodes.map((n) => n.name);
  /** `kubectl get --watch` of the ARPAdvertisements, one line per event. */
  const watchAdverts = () =>
    watchLines(echoBox.kubectlBin, echoBox.status.kubeconfigPath, ['arpadvertisements', '-o', ADVERT_COLUMNS], 1);

  /** Polls `fn` until it returns a value; on timeout says what the last poll saw. */
  async function waitFor<T>(
    what: string,
    fn: () => Promise<T | undefined | false>,
    timeoutMs = 120_000,
    intervalMs = 250,
  ): Promise<T> {
    let last = 'no poll finished';
    for (const until = Date.now() + timeoutMs; ; await sleep(intervalMs)) {
      try {
        const v = await fn();
        if (v !== undefined && v !== false) return v as T;
        last = `last poll: ${String(v)}`;
      } catch (err) {
        last = `last poll failed: ${(err as Error).message}`;
      }
      if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${last}`);
    }
  }

  /** The nodes the VIP's ARPAdvertisements name (one, or none). */
  const advertised = () => advertisedNodes(kubectl, vip);
  const slbStatus = async () =>
    (
      JSON.parse(await kubectl(['-n', 'default', 'get', 'serviceloadbalancers', 'echo', '-o', 'json'])) as {
        status?: ServiceLoadBalancerStatus;
      }
    ).status ?? {};
  /** One GET from the router to the VIP with its neighbour cache as it is (never flushed): the node that served it. */
  const routerServedBy = async () => /node=(\S+)/.exec(await inRouter(`curl -s -m 2 http://${vip}/ || true`))?.[1];

  beforeAll(async () => {
    vip = `${echoBox.box.segment}.241`;
    routerMac = await macOf(echoBox.router);
    for (const n of echoBox.box.nodes) macs.set(n.name, await macOf(n.netns));
  });

  test('SLB-5, SLB-6, OPS-2, ARP-10: echo on node-0 and node-1 behind a Local Service -> one MAC answers, the node the ARPAdvertisement names; kubectl exec kubectl-juneau bpf dump external_arp_table shows the VIP on that node only', async () => {
    const [n0, n1] = nodeNames();
    const tApply = Date.now();
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${network(echoBox.box.segment, vip)}---\n${echoDeployment({ name: 'echo', nodes: [n0, n1], replicas: 2, labels: { deployment: 'echo' } })}`,
    );
    const [node] = await waitFor("the VIP's ARPAdvertisement", async () =>
      (await advertised()).length ? advertised() : undefined,
    );
    expect([n0, n1]).toContain(node);
    const answering = await waitFor(`${node} answering ARP for ${vip}`, async () => {
      const m = await answeringMacs(echoBox.router, vip, 1);
      return m.length > 0 && m;
    });
    figure('box scenarios: kubectl apply -> the VIP answered over ARP', elapsedSince(tApply));
    expect(answering).toEqual([macs.get(node)]);
    // OPS-2: counted, not one look: 10 broadcast requests, each answered once, by that MAC.
    const counted = await arpAnswers(echoBox.router, vip, 10);
    figure('box scenarios: OPS-2: 10 broadcast ARP requests for the VIP, answers by MAC', JSON.stringify(counted));
    expect(counted).toEqual({ requests: 10, replies: 10, byMac: { [macs.get(node)!]: 10 } });

    const agents = await agentPods(kubectl);
    expect(agents.map((a) => a.spec.nodeName).sort()).toEqual(nodeNames());
    const dumps = new Map<string, string>();
    for (const a of agents)
      dumps.set(a.spec.nodeName!, await kubectl(juneauInAgent(a.metadata.name, ['bpf', 'dump', 'external_arp_table'])));
    log(`kubectl-juneau bpf dump external_arp_table on ${node}:\n${dumps.get(node)}`);
    expect(nodeNames().map((n) => [n, dumps.get(n)!.includes(vip)])).toEqual(nodeNames().map((n) => [n, n === node]));
  });

  test('SLB-7, SLB-9, ARP-8: the answering node loses its backend (cordoned, pod deleted) -> the ARPAdvertisement moves to the other backend node; no gratuitous ARP at the router; the router (default neighbour timers, never flushed) keeps the old MAC and follows once its entry expires', async () => {
    const [from] = await advertised();
    const to = nodeNames()
      .slice(0, 2)
      .find((n) => n !== from)!;
    expect(await waitFor(`the router served by ${from}`, routerServedBy)).toBe(from);
    expect(await neighbourMac(echoBox.router, vip)).toBe(macs.get(from));

    const capture = await captureArp(echoBox.router);
    const watch = await watchAdverts();
    let frames;
    let changes: string[] = [];
    const t0 = Date.now();
    try {
      await kubectl(['cordon', from]);
      const [pod] = await listPods(kubectl, 'default', 'app=echo', `spec.nodeName=${from}`);
      await kubectl(['-n', 'default', 'delete', 'pod', pod.metadata.name, '--wait=false']);
      await waitFor(`the ARPAdvertisement to move to ${to}`, async () => (await advertised()).join() === to);
      figure('box scenarios: backend pod deleted -> ARPAdvertisement moved', elapsedSince(t0));
      // ARP-8: nobody told the router; its entry still holds the old node's MAC.
      expect(await neighbourMac(echoBox.router, vip)).toBe(macs.get(from));
      // The router's own traffic, a GET a second: to the old MAC (dropped there: Local policy, no
      // endpoint) until the kernel's neighbour entry fails and a broadcast request finds the new node.
      await waitFor(`the router served by ${to}`, async () => (await routerServedBy()) === to, 180_000, 1000);
      figure(
        'box scenarios: backend pod deleted -> router (default neighbour timers) served by the new node',
        elapsedSince(t0),
      );
    } finally {
      frames = await capture.stop();
      changes = await watch.stop();
    }
    // The watch the next test relies on to prove that nothing moved sees this move.
    expect(changes.some((l) => l.split(/\s+/)[2] === to)).toBe(true);
    expect(gratuitousFor(frames, vip)).toEqual([]);
    // The router asked again only once its entry had failed (its unicast probes of the old MAC
    // unanswered: the guard keeps the old node silent), and nothing on the wire spoke for the VIP
    // before that broadcast request; every answer came from the new node.
    const ask = firstBroadcastAsk(frames, vip, routerMac);
    expect(ask).toBeDefined();
    const forVip = frames.filter((f) => f.arp?.sip === vip);
    expect(forVip.filter((f) => f.timeMs < ask!.timeMs)).toEqual([]);
    const replies = forVip.filter((f) => f.arp!.op === ARP_REPLY).map((f) => f.arp!.sha.toLowerCase());
    expect([...new Set(replies)]).toEqual([macs.get(to)]);
    expect(await neighbourMac(echoBox.router, vip)).toBe(macs.get(to));
    expect((await slbStatus()).arpAnnouncingNode).toBe(to);
  });

  test('SLB-7: backends come back on the old node and appear on a third one -> the VIP stays where it is (a watch on ARPAdvertisements sees no change; fresh probes answered by the same MAC)', async () => {
    const [current] = await advertised();
    const [n0, n1, n2] = nodeNames();
    const watch = await watchAdverts();
    let changes: string[] = [];
    try {
      for (const n of [n0, n1]) await kubectl(['uncordon', n]);
      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        echoDeployment({ name: 'echo-extra', nodes: [n2], replicas: 1, labels: { deployment: 'echo-extra' } }),
      );
      await kubectl(['-n', 'default', 'rollout', 'status', 'deployment/echo', '--timeout=300s']);
      await kubectl(['-n', 'default', 'rollout', 'status', 'deployment/echo-extra', '--timeout=300s']);
      await waitFor(
        'all three nodes in advertisingNodes',
        async () => ((await slbStatus()).advertisingNodes ?? []).slice().sort().join() === nodeNames().join(),
      );
      expect(await arpAnswers(echoBox.router, vip, 5)).toEqual({
        requests: 5,
        replies: 5,
        byMac: { [macs.get(current)!]: 5 },
      });
    } finally {
      changes = await watch.stop();
    }
    expect(changes).toEqual([]);
  });

  test("SLB-8, ARP-7: all backends gone (both Deployments scaled to 0) -> the ARPAdvertisement is deleted, phase Degraded, and nobody answers the VIP although every node's kernel holds it on kube-ipvs0", async () => {
    const t0 = Date.now();
    await kubectl(['-n', 'default', 'scale', 'deployment', 'echo', 'echo-extra', '--replicas=0']);
    await waitFor('the ARPAdvertisement deleted', async () => (await advertised()).length === 0);
    figure('box scenarios: all backends scaled to 0 -> ARPAdvertisement deleted', elapsedSince(t0));
    await waitFor('phase Degraded', async () => (await slbStatus()).phase === 'Degraded');
    // Without the guard every kernel would answer: the VIP stays on each node's kube-ipvs0, arp_ignore=0.
    for (const n of echoBox.box.nodes) {
      const addrs = await inNetns(n.netns, 'ip', ['-4', '-o', 'addr', 'show', 'dev', KUBE_IPVS0]);
      expect({ node: n.name, vip: addrs.includes(` ${vip}/32 `) }).toEqual({ node: n.name, vip: true });
    }
    const silent = await answeringMacs(echoBox.router, vip, 5);
    figure('box scenarios: all backends gone: MACs answering 5 broadcast requests', silent.length);
    expect(silent).toEqual([]);
  });

  // Not the direct-ElasticIP scenario itself (EIP-17..19 with traffic: test/box/nat.test.ts): what
  // makes the controller use its ElasticIP, NetworkInterface and release rules, for the audit below.
  test('ALLOC, EIP-17, EIP-18, ARP-7 (for the RBAC audit): an ElasticIP named by a pod on node-2 is answered by node-2; the pod deleted, nobody answers; the ElasticIP deleted, its claim is released', async () => {
    const address = `${echoBox.box.segment}.242`;
    const node = nodeNames()[2];
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `apiVersion: juneau.loutres.me/v1alpha1
kind: ElasticIP
metadata: { name: web-eip, namespace: default }
spec: { externalNetwork: box-net, requestedIP: "${address}" }
---
apiVersion: v1
kind: Pod
metadata: { name: eip-pod, namespace: default, annotations: { juneau.loutres.me/elastic-ip: web-eip } }
spec:
  nodeSelector: { kubernetes.io/hostname: ${node} }
  containers: [{ name: echo, image: ${ECHO_IMAGE}, imagePullPolicy: Never }]
`,
    );
    const advertisedFor = (a: string) => advertisedNodes(kubectl, a);
    await waitFor(`the ElasticIP advertised on ${node}`, async () => (await advertisedFor(address)).join() === node);
    await waitFor(
      `${node} answering ARP for ${address}`,
      async () => (await answeringMacs(echoBox.router, address, 1)).join() === macs.get(node),
    );
    await kubectl(['-n', 'default', 'delete', 'pod', 'eip-pod', '--wait=true', '--timeout=120s']);
    await waitFor('no ARPAdvertisement while unused', async () => (await advertisedFor(address)).length === 0);
    expect(await answeringMacs(echoBox.router, address, 3)).toEqual([]);
    await kubectl(['-n', 'default', 'delete', 'elasticip', 'web-eip', '--wait=true', '--timeout=120s']);
    const claimed = async () =>
      (
        JSON.parse(await kubectl(['get', 'allocationclaims', '-o', 'json'])) as {
          items: Array<{ spec: { value: string } }>;
        }
      ).items.map((c) => c.spec.value);
    await waitFor(`the claim of ${address} released`, async () => !(await claimed()).includes(address));
  });

  // Last: it reads what the install's ServiceAccounts asked of the API server during the scenarios above.
  test('RBAC: the controller and agents, with the tokens the kubelet gave their pods, were never Forbidden, and used every rule of the install manifest that these scenarios reach', () => {
    const manifest = installManifest();
    const user = (sa: string) => `system:serviceaccount:${NS}:${sa}`;
    const { forbidden, unused } = auditOf(auditLogPath(echoBox.dir), {
      [user(INSTALL.controllerName)]: rulesOf(manifest, INSTALL.controllerName),
      [user(INSTALL.agentName)]: rulesOf(manifest, INSTALL.agentName),
    });
    log(`install RBAC: rules not used by the box scenarios: ${unused.join(', ') || 'none'}`);
    expect(forbidden).toEqual([]);
    expect(unused.filter((r) => !(r in NOT_REACHED_ON_BOX))).toEqual([]);
  });
});

/**
 * Rules of the install manifest that the scenarios above do not reach, each with the reason. A rule
 * that becomes unused without being listed here fails the audit test; a listed one that the code
 * no longer needs must be removed from the manifest, not from this table.
 */
const NOT_REACHED_ON_BOX: Record<string, string> = {
  'juneau-controller: get juneau.loutres.me/externalnetworks':
    'the orphan-claim sweep (ALLOC-2) reads a holder only for a claim whose holder left the cache',
  'juneau-controller: get juneau.loutres.me/serviceloadbalancers': 'the orphan-claim sweep, as above',
  'juneau-controller: create juneau.loutres.me/serviceloadbalancers':
    'server-side apply creates them: the API server authorizes create inside the patch request, and the audit log records the patch',
  'juneau-controller: delete juneau.loutres.me/serviceloadbalancers':
    'only when a Service stops being a Juneau LoadBalancer; no scenario changes a Service class',
  'juneau-controller: delete juneau.loutres.me/networkinterfaces':
    'a Pod that stops naming an interface; Pods here are deleted whole (garbage collection)',
  'juneau-controller: patch juneau.loutres.me/elasticipattachments/status':
    'no scenario here uses an ElasticIPAttachment (NAT: test/box/nat.test.ts)',
  'juneau-controller: patch juneau.loutres.me/arpadvertisements/status':
    'the duplicate detector writes it only for two advertisements of one address',
  'juneau-controller: update core/secrets':
    'the webhook certificate Secret is rewritten only to rotate it before expiry; no box runs that long',
  'juneau-controller: get juneau.loutres.me/natgateways': 'no scenario here declares a NATGateway (test/cluster/ngw-*)',
  'juneau-controller: patch juneau.loutres.me/natgateways': 'its finalizer, as above',
  'juneau-controller: patch juneau.loutres.me/natgateways/status': 'its status, as above',
  'juneau-controller: patch juneau.loutres.me/bgppeers/status':
    'no scenario here declares a BGPPeer (test/cluster/bgp-controller.test.ts)',
  'juneau-agent: create events.k8s.io/events':
    'agents report only address conflicts and refused addresses, which no scenario makes',
  'juneau-agent: patch events.k8s.io/events': 'a repeated agent Event, as above',
  'juneau-controller: create authentication.k8s.io/tokenreviews':
    'asked only when something scrapes /metrics, which no scenario here does (test/cluster/metrics-auth.test.ts)',
  'juneau-controller: create authorization.k8s.io/subjectaccessreviews': 'a /metrics scrape, as above',
  'juneau-agent: create authentication.k8s.io/tokenreviews': 'a /metrics scrape, as above',
  'juneau-agent: create authorization.k8s.io/subjectaccessreviews': 'a /metrics scrape, as above',
};
