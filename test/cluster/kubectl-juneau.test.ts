// `kubectl juneau status`, `why` and `bpf ... --node` (ARP-10), the bundled plugin
// (build/bin/kubectl-juneau.js, as kubectl runs it) against the real API server, with the
// ElasticIP reconcilers running in-process as the other ElasticIP cluster tests run them.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { ANNOTATIONS, FINALIZERS, GROUP } from '../../api';
import { advertisementName } from '../../runtime/controller/arp/names';
import {
  createRunningPod,
  deletePodNow,
  ensureNode,
  kubectlPath,
  testKubeconfigPath,
  useNamespace,
  waitFor,
} from './fixture';
import { Resources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { condition, createEip, createPod, deleteObject, eipIn, getAd, getEip, rest, useEipSetup } from './eip-harness';

const CLI = path.resolve(__dirname, '..', '..', 'build', 'bin', 'kubectl-juneau.js');
/** One address: the second ElasticIP finds the pool exhausted. */
const ADDRESS = '198.18.207.9';
const { pool: POOL, network: NET, nodes } = useEipSetup('kjw', { addresses: [`${ADDRESS}/32`], networkID: 5077 });

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the plugin with only the flags given: no KUBECONFIG in its environment. */
function plugin(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const clean: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: '/nonexistent', ...env };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, '--kubeconfig', testKubeconfigPath(), ...args],
      { env: clean, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : -1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The first row holding every one of `cells` (the API server is shared: other files' objects show under -A). */
const rowOf = (table: string, ...cells: string[]): string[] | undefined =>
  table
    .split('\n')
    .map((l) => l.split(/\s{3,}/))
    .find((row) => cells.every((c) => row.includes(c)));

describe('kubectl juneau status and why', () => {
  const ns = useNamespace();

  it('ARP-1, EIP-9: status lists each address with network, owner, phase and the answering node; why explains a Pending ElasticIP by its exhausted pool', async () => {
    const namespace = ns();
    await createEip(namespace, 'web', NET);
    await createPod(namespace, 'web', { nodeName: nodes[0], annotations: { [ANNOTATIONS.elasticIP]: 'web' } });
    await eipIn(namespace, 'web', 'Attached');
    await waitFor(
      async () =>
        (await getAd(advertisementName({ kind: 'ElasticIP', namespace, name: 'web' })))?.spec.nodeName === nodes[0],
      { what: 'ARPAdvertisement on the first node' },
    );
    await createEip(namespace, 'spare', NET);
    const pending = await eipIn(namespace, 'spare', 'Pending');
    expect(condition(pending, 'Allocated')?.reason).toBe('NoFreeAddress');

    const status = await plugin(['status', '-n', namespace]);
    expect(status).toMatchObject({ code: 0, stderr: '' });
    const lines = status.stdout.trimEnd().split('\n');
    expect(lines[0].split(/\s{3,}/)).toEqual(['ADDRESS', 'KIND', 'NAME', 'NETWORK', 'OWNER', 'PHASE', 'NODE']);
    expect(rowOf(status.stdout, 'web')).toEqual([
      ADDRESS,
      'ElasticIP',
      'web',
      NET,
      'NetworkInterface/web.eth0',
      'Attached',
      nodes[0],
    ]);
    expect(rowOf(status.stdout, 'spare')).toEqual(['-', 'ElasticIP', 'spare', NET, '-', 'Pending', '-']);
    expect(lines).toHaveLength(3);

    const json = await plugin(['status', '-n', namespace, '-o', 'json']);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        namespace,
        kind: 'ElasticIP',
        name: 'web',
        address: ADDRESS,
        network: NET,
        owner: 'NetworkInterface/web.eth0',
        phase: 'Attached',
        nodes: [nodes[0]],
      },
      {
        namespace,
        kind: 'ElasticIP',
        name: 'spare',
        address: '',
        network: NET,
        owner: '',
        phase: 'Pending',
        nodes: [],
      },
    ]);
    const all = await plugin(['status', '-A']);
    expect(rowOf(all.stdout, namespace, 'web')?.slice(0, 2)).toEqual([namespace, ADDRESS]);

    const why = await plugin(['why', 'eip/spare', '-n', namespace]);
    expect(why.code).toBe(0);
    const explained = why.stdout.split('\n');
    expect(explained[0]).toBe(`ElasticIP ${namespace}/spare: Pending`);
    expect(explained[1]).toMatch(
      new RegExp(`^  because: no free address in AddressPool\\(s\\) ${POOL} \\(1/1 used\\)`),
    );
    // The condition the reason is read from, named (the troubleshooting guide matches it to -o yaml).
    expect(explained[1]).toMatch(/ \(condition [A-Za-z]+=False, reason [A-Za-z]+\)$/);
    expect(explained).toContain(`  ExternalNetwork ${NET}: type arp, networkID 5077, pools ${POOL}`);
    expect(explained.some((l) => l.startsWith(`  AddressPool ${POOL}: arp`))).toBe(true);
    expect(explained).toContain('  used by: nothing (no ElasticIPAttachment or NetworkInterface names it)');

    const attached = await plugin(['why', 'elasticip/web', '-n', namespace]);
    expect(attached.stdout).toContain(
      `  ARPAdvertisement ${advertisementName({ kind: 'ElasticIP', namespace, name: 'web' })}: node ${nodes[0]} answers ARP for ${ADDRESS}`,
    );
  });

  it('why names what is missing: an unknown object, a Service without a ServiceLoadBalancer, an unknown kind', async () => {
    const namespace = ns();
    expect(await plugin(['why', 'eip/nothing', '-n', namespace])).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `kubectl-juneau: ElasticIP nothing not found in namespace ${namespace}\n`,
    });
    expect(await plugin(['why', 'svc/nothing', '-n', namespace])).toMatchObject({
      code: 1,
      stderr: `kubectl-juneau: Service nothing not found in namespace ${namespace}\n`,
    });
    await rest.create(Resources.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'plain', namespace },
      spec: { ports: [{ port: 80 }] },
    } as KubeObject);
    expect(await plugin(['why', 'svc/plain', '-n', namespace])).toMatchObject({
      code: 0,
      stdout: `Service plain in namespace ${namespace} has no ServiceLoadBalancer: it is not type LoadBalancer with loadBalancerClass juneau.loutres.me/load-balancer, or the controller has not seen it (SLB-1)\n`,
    });
    const bad = await plugin(['why', 'pods/x', '-n', namespace]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^kubectl-juneau: unknown kind 'pods': one of addresspool, externalnetwork, elasticip/);
  });
});

describe('kubectl juneau bpf dump --node', () => {
  const ns = useNamespace();
  const agentLabels = { 'app.kubernetes.io/name': 'juneau-agent', 'app.kubernetes.io/part-of': 'juneau' };

  it("runs kubectl exec in the agent Pod of that node, not another node's or another app's; says so when none runs there", async () => {
    const namespace = ns();
    const [a, b] = nodes;
    const lonely = `${nodes[0]}-lonely`;
    await ensureNode(lonely);
    try {
      await createRunningPod({ namespace, name: 'agent-a', labels: agentLabels, nodeName: a, podIP: '10.244.7.1' });
      await createRunningPod({ namespace, name: 'agent-b', labels: agentLabels, nodeName: b, podIP: '10.244.7.2' });
      await createRunningPod({
        namespace,
        name: 'other-on-lonely',
        labels: { 'app.kubernetes.io/name': 'web' },
        nodeName: lonely,
        podIP: '10.244.7.3',
      });

      // There is no kubelet behind these Nodes, so kubectl's exec itself fails; what is asserted is the Pod it was sent to.
      const run = await plugin(['bpf', 'dump', 'external_arp_table', '--node', b, '-n', namespace], {
        KUBECTL: kubectlPath(),
      });
      expect(run.stderr.split('\n')[0]).toBe(`kubectl-juneau: running in Pod ${namespace}/agent-b on node ${b}`);
      expect(run.code).not.toBe(0);

      expect(await plugin(['bpf', 'dump', 'external_arp_table', '--node', lonely, '-n', namespace])).toMatchObject({
        code: 1,
        stderr: `kubectl-juneau: no juneau-agent Pod runs on node ${lonely} (namespace ${namespace}, labels app.kubernetes.io/name=juneau-agent,app.kubernetes.io/part-of=juneau); is Juneau installed there (-n NAMESPACE), and does the agent DaemonSet schedule onto that node?\n`,
      });
      expect(await plugin(['bpf', 'stats', '--node', 'no-such-node-kjw', '-n', namespace])).toMatchObject({
        code: 1,
        stderr: 'kubectl-juneau: node no-such-node-kjw does not exist\n',
      });
    } finally {
      for (const pod of ['agent-a', 'agent-b', 'other-on-lonely']) await deletePodNow(namespace, pod);
      await deleteObject(Resources.nodes, undefined, lonely);
    }
  });
});

describe('kubectl juneau uninstall without a controller', () => {
  const ns = useNamespace();

  it('SEC-21: refuses, naming the ElasticIP whose finalizer would hang the uninstall, and deletes nothing', async () => {
    const namespace = ns();
    await createEip(namespace, 'held', NET);
    await waitFor(
      async () => !!(await getEip(namespace, 'held'))?.metadata.finalizers?.includes(FINALIZERS.elasticIP),
      {
        what: 'the ElasticIP finalizer',
      },
    );

    const refused = await plugin(['uninstall', '-n', namespace]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `no juneau-controller Deployment with an available replica in namespace ${namespace}, so these finalizers would never be released`,
    );
    expect(refused.stderr).toContain(`  ElasticIP ${namespace}/held (${FINALIZERS.elasticIP})\n`);
    expect(refused.stderr).toContain('--force-finalizers');
    // Nothing was deleted: the ElasticIP and the ServiceLoadBalancer CRD stand, neither being deleted.
    expect((await getEip(namespace, 'held'))?.metadata.deletionTimestamp).toBeUndefined();
    const crd = await rest.get<KubeObject>(
      {
        group: 'apiextensions.k8s.io',
        version: 'v1',
        plural: 'customresourcedefinitions',
        kind: 'CustomResourceDefinition',
        namespaced: false,
      },
      undefined,
      `serviceloadbalancers.${GROUP}`,
    );
    expect(crd.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('SEC-21: --help describes uninstall, and two -f flags are refused (the first would be lost)', async () => {
    const help = await plugin(['--help']);
    expect(help.stdout).toContain('uninstall [-f FILE[,FILE]]');
    expect(help.stdout).toContain('--force-finalizers');
    const twice = await plugin(['uninstall', '-f', 'a.yaml', '-f', 'b.yaml']);
    expect(twice).toMatchObject({ code: 2, stderr: expect.stringContaining('comma-separated -f a.yaml,b.yaml') });
  });
});
