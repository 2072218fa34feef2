// A real `pulumi up` of the repository's project (Pulumi.yaml, examples/pulumi): the Pulumi engine,
// the Node.js language host and the Kubernetes provider (built by test/pulumi/build.sh) against the
// real control plane, with Juneau's controller (webhooks included) running in this process. The
// control plane has no scheduler or kubelet: ./kubelet.ts plays them for the example's two pods.
// Juneau itself is installed here by the test, not by the program (stack config `install: false`):
// the install's Deployment and DaemonSet need images and nodes that this control plane cannot run.
import { Chart, Testing } from 'cdk8s';
import { FINALIZERS } from '../../api';
import { AddressPool, ElasticIP, ExternalNetwork } from '../../constructs/cdk8s';

import { main as controllerMain } from '../../runtime/controller/main';
import { JuneauResources, Resources, type ResourceType } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { describeWhen } from '../requirements';
import { clients, ensureNode, testKubeConfig, testKubeconfigPath, waitFor } from '../cluster/fixture';
import { watchForChanges, type ChangeWatch } from '../cluster/quiet-watch';
import { freePort } from '../cluster/webhook-fixture';
import { engineDir, missingBinaries, PulumiCommandError, PulumiStack, type PulumiResult } from './engine';
import { startFakeKubelet, type FakeKubelet } from './kubelet';

const ENGINE_DIR = engineDir();
const missing = missingBinaries(ENGINE_DIR);
const NAMESPACE = 'default'; // the example's
const NODE = 'pulumi-node-a';
const BAD_ADDRESS = '10.225.33.7'; // outside arp-pool (10.225.32.240-10.225.32.250)
const rest = new RestClient(testKubeConfig());

type Status = { address?: string; vip?: string; phase?: string };
type Obj = KubeObject & {
  metadata: NonNullable<KubeObject['metadata']>;
  spec?: Record<string, unknown>;
  status?: Status & { loadBalancer?: { ingress?: { ip?: string }[] } };
};

const list = async (type: ResourceType, namespace?: string): Promise<Obj[]> =>
  (await rest.list<Obj>(type, { namespace })).items;
const names = (objects: Obj[]) => objects.map((o) => o.metadata.name).sort();
/** Services of the example: every Service but the API server's own. */
const exampleServices = async () =>
  (await list(Resources.services, NAMESPACE)).filter((s) => s.metadata.name !== 'kubernetes');
/** Everything the program declares, by kind. */
const programObjects = async () => ({
  addressPools: names(await list(JuneauResources.addressPools)),
  externalNetworks: names(await list(JuneauResources.externalNetworks)),
  elasticIPs: names(await list(JuneauResources.elasticIPs, NAMESPACE)),
  elasticIPAttachments: names(await list(JuneauResources.elasticIPAttachments, NAMESPACE)),
  pods: names(await list(Resources.pods, NAMESPACE)),
  services: names(await exampleServices()),
});
/** What the controller makes from them: it goes with them (finalizers, owner references). */
const derivedObjects = async () => ({
  serviceLoadBalancers: names(await list(JuneauResources.serviceLoadBalancers, NAMESPACE)),
  networkInterfaces: names(await list(JuneauResources.networkInterfaces, NAMESPACE)),
  arpAdvertisements: names(await list(JuneauResources.arpAdvertisements)),
  // subnet-vni is the controller's own pool; a network's VNI claim goes with the network.
  allocationClaims: names(await list(JuneauResources.allocationClaims)),
});
const NOTHING = {
  addressPools: [],
  externalNetworks: [],
  elasticIPs: [],
  elasticIPAttachments: [],
  pods: [],
  services: [],
};

/** The problem line `cdk8s synth` reports for the same ElasticIP (api/validation, shared by both). */
function synthProblem(requestedIP: string): string {
  const app = Testing.app();
  const chart = new Chart(app, 'c');
  const pool = new AddressPool(chart, 'arp-pool', { advertiseMode: 'arp', addresses: ['10.225.32.240-10.225.32.250'] });
  const net = new ExternalNetwork(chart, 'ext-net-arp', { type: 'arp', addressPools: [pool] });
  new ElasticIP(chart, 'web-eip', { metadata: { namespace: NAMESPACE }, externalNetwork: net, requestedIP });
  try {
    app.synthYaml();
  } catch (err) {
    const line = /spec\.requestedIP: .*/.exec((err as Error).message)?.[0];
    if (line) return line;
    throw err;
  }
  throw new Error(`cdk8s synth accepted requestedIP ${requestedIP}`);
}

const timings: string[] = [];
const timed = (what: string, r: PulumiResult) => {
  timings.push(`${what} ${(r.ms / 1000).toFixed(1)} s`);
  process.stdout.write(`pulumi timing: ${what} ${(r.ms / 1000).toFixed(1)} s\n`);
  return r;
};

/** The in-process controller, as the binary runs it: leader election off, webhooks served and registered by URL. */
async function startController(): Promise<{ stop(): Promise<number> }> {
  const port = await freePort();
  let stop!: (signal: string) => void;
  const stopSignal = new Promise<string>((resolve) => (stop = resolve));
  const log: string[] = [];
  const exit = controllerMain(
    [
      '--kubeconfig',
      testKubeconfigPath(),
      '--leader-elect=false',
      `--webhook-url-base=https://127.0.0.1:${port}`,
      '--health-addr=0',
      '--metrics-addr=0',
      '--log-level=info',
    ],
    { stdout: (t) => log.push(t), stderr: (t) => log.push(t), env: {}, stopSignal },
  );
  // Ready once the API server calls the webhooks: until then a create would be refused.
  await waitFor(
    async () =>
      (
        await rest.list<KubeObject & { webhooks?: { clientConfig?: { url?: string } }[] }>({
          group: 'admissionregistration.k8s.io',
          version: 'v1',
          plural: 'validatingwebhookconfigurations',
          kind: 'ValidatingWebhookConfiguration',
          namespaced: false,
        })
      ).items.some((c) => c.webhooks?.some((w) => w.clientConfig?.url?.includes(`:${port}/`))),
    { what: "the controller's webhooks registered", timeoutMs: 60_000 },
  );
  return {
    async stop() {
      stop('SIGTERM');
      const code = await exit;
      if (code !== 0) throw new Error(`the controller exited ${code}:\n${log.join('').slice(-3000)}`);
      return code;
    },
  };
}

describeWhen(
  missing.length === 0,
  `the Pulumi engine is not built (${missing.join(', ')} missing in ${ENGINE_DIR}): run \`bash test/pulumi/build.sh\` (npm run test:pulumi does)`,
  'pulumi up of examples/pulumi: the real engine, the Kubernetes provider, the controller',
  () => {
    let stack: PulumiStack;
    let kubelet: FakeKubelet;
    let controller: { stop(): Promise<number> };
    let destroyed = false;

    beforeAll(async () => {
      const { core } = clients();
      await core.createNamespace({ body: { metadata: { name: 'juneau-system' } } }); // the webhook certificate's Secret
      await ensureNode(NODE, { internalIP: '10.224.0.10' });
      controller = await startController();
      kubelet = startFakeKubelet(NAMESPACE, NODE, '10.244.1.10');
      stack = await PulumiStack.create({
        binDir: ENGINE_DIR,
        kubeconfig: testKubeconfigPath(),
        config: { 'juneau-examples:install': 'false' },
      });
    }, 120_000);

    afterAll(async () => {
      // A test that failed half-way leaves objects behind: destroy them, and say so if that fails too.
      try {
        if (stack && !destroyed) await stack.destroy();
        await stack?.remove();
      } finally {
        await kubelet?.stop();
        await controller?.stop();
        if (timings.length) process.stdout.write(`pulumi timings: ${timings.join(', ')}\n`);
      }
    }, 300_000);

    test('EIP-3, AP-2: an address outside its pool fails `pulumi preview` and `pulumi up` with the synth-time message; nothing is created', async () => {
      await stack.setConfig('juneau-examples:webEipAddress', BAD_ADDRESS);
      const problem = synthProblem(BAD_ADDRESS);
      for (const command of [() => stack.preview(), () => stack.up()]) {
        const failure = await command().then(
          (r) => {
            throw new Error(`pulumi ${r.args[0]} succeeded with requestedIP ${BAD_ADDRESS}:\n${r.stdout}`);
          },
          (err: unknown) => {
            if (err instanceof PulumiCommandError) return err.result;
            throw err;
          },
        );
        expect(failure.stdout + failure.stderr).toContain(problem);
        expect(await programObjects()).toEqual(NOTHING);
      }
      await stack.removeConfig('juneau-examples:webEipAddress');
    }, 300_000);

    test('EIP-1, EIP-3, SLB-2, SLB-4: `pulumi up` creates every object, and its outputs are the addresses the controller wrote', async () => {
      const up = timed('up', await stack.up());
      // The provider is the version @pulumi/kubernetes asks for: no "expected version" or "from $PATH" warning.
      expect(up.stdout + up.stderr).not.toContain('warning');
      expect(await programObjects()).toEqual({
        addressPools: ['arp-pool'],
        externalNetworks: ['ext-net-arp'],
        elasticIPs: ['nginx-eip', 'web-eip'],
        elasticIPAttachments: ['nginx-eip-attach'],
        pods: ['nginx', 'web'],
        services: ['web'],
      });
      const outputs = await stack.outputs();
      const eipObjects = await list(JuneauResources.elasticIPs, NAMESPACE);
      const eips = new Map(eipObjects.map((e) => [e.metadata.name, e.status?.address]));
      const service = (await exampleServices())[0];
      const slb = (await list(JuneauResources.serviceLoadBalancers, NAMESPACE)).find((s) => s.metadata.name === 'web');
      // What `pulumi destroy` will have to wait for: the controller's finalizers (EIP-14, ARP-6).
      expect(eipObjects.map((e) => e.metadata.finalizers)).toEqual([[FINALIZERS.elasticIP], [FINALIZERS.elasticIP]]);
      expect(slb?.metadata.finalizers).toEqual([FINALIZERS.serviceLoadBalancer]);
      expect(outputs).toEqual({
        webEipAddress: eips.get('web-eip'),
        nginxEipAddress: eips.get('nginx-eip'),
        webVip: service.status?.loadBalancer?.ingress?.[0]?.ip,
      });
      expect(outputs.webEipAddress).toBe('10.225.32.241'); // requested (EIP-3)
      expect(outputs.webVip).toBe('10.225.32.242'); // requested (SLB-2)
      expect(outputs.webVip).toBe(slb?.status?.vip); // the ServiceLoadBalancer's VIP, published as the Service's ingress (SLB-4)
      expect(new Set(Object.values(outputs)).size).toBe(3); // three distinct addresses of the pool
    }, 600_000);

    test('a second `pulumi up` changes nothing: the engine reports no change and no object is written', async () => {
      const project = (o: Obj) => ({
        labels: o.metadata.labels,
        annotations: o.metadata.annotations,
        spec: o.spec,
        deleting: o.metadata.deletionTimestamp,
      });
      const watches: ChangeWatch[] = [];
      for (const [type, namespace] of [
        [JuneauResources.addressPools],
        [JuneauResources.externalNetworks],
        [JuneauResources.elasticIPs, NAMESPACE],
        [JuneauResources.elasticIPAttachments, NAMESPACE],
        [Resources.pods, NAMESPACE],
        [Resources.services, NAMESPACE],
      ] as [ResourceType, string?][]) {
        watches.push(await watchForChanges<Obj>({ type, namespace, project }));
      }
      // --expect-no-changes: the engine itself fails the update if any step is not `same`.
      const r = timed('no-op up', await stack.up('--expect-no-changes'));
      const failures = watches.flatMap((w) => {
        try {
          w.expectNoChange();
          return [];
        } catch (err) {
          return [(err as Error).message];
        }
      });
      expect(failures).toEqual([]);
      expect(r.stdout).toMatch(/\d+ unchanged/);
    }, 600_000);

    test("`pulumi preview` after an edit (the web Service's port) shows exactly that edit", async () => {
      await stack.setConfig('juneau-examples:webPort', '8080');
      const preview = JSON.parse((await stack.preview('--json', '--diff')).stdout) as {
        steps: { op: string; urn: string; diffReasons?: string[]; detailedDiff?: Record<string, { kind: string }> }[];
      };
      const changed = preview.steps.filter((s) => s.op !== 'same');
      expect(
        changed.map((s) => ({
          op: s.op,
          resource: s.urn.split('::').slice(-2).join('::'),
          detailedDiff: s.detailedDiff,
        })),
      ).toEqual([
        {
          op: 'update',
          resource: 'juneau:index:LoadBalancerService$kubernetes:core/v1:Service::web',
          detailedDiff: { 'spec.ports[0].port': { kind: 'update', inputDiff: false } },
        },
      ]);
      await stack.removeConfig('juneau-examples:webPort');
    }, 300_000);

    test("EIP-3: a new address for an existing ElasticIP (spec.requestedIP is immutable) fails `pulumi preview` with the API server's reason", async () => {
      await stack.setConfig('juneau-examples:webEipAddress', '10.225.32.245');
      const result = await stack.preview('--diff').then(
        (r) => r,
        (err: unknown) => {
          if (err instanceof PulumiCommandError) return err.result;
          throw err;
        },
      );
      // The provider previews the update as a server-side dry run, so the CRD's rule answers before anything is written.
      expect(result.code).not.toBe(0);
      expect(result.stdout + result.stderr).toContain(
        'spec.requestedIP is immutable: recreate the ElasticIP to reserve another address (EIP-3)',
      );
      const webEip = (await list(JuneauResources.elasticIPs, NAMESPACE)).find((e) => e.metadata.name === 'web-eip');
      expect({ requestedIP: webEip?.spec?.requestedIP, address: webEip?.status?.address }).toEqual({
        requestedIP: '10.225.32.241',
        address: '10.225.32.241',
      });
      await stack.removeConfig('juneau-examples:webEipAddress');
    }, 300_000);

    test('EIP-14, ARP-6: `pulumi destroy` removes every object, finalizers included, and returns; nothing is left', async () => {
      timed('destroy', await stack.destroy());
      destroyed = true;
      // What the program declared is gone when destroy returns: the provider waited for each delete.
      expect(await programObjects()).toEqual(NOTHING);
      // What the controller made goes with it: its finalizers ran before the deletes completed; owner references are collected.
      await waitFor(
        async () => {
          const left = await derivedObjects();
          return Object.values(left).every((v) => v.length === 0) ? left : undefined;
        },
        {
          what: 'no ServiceLoadBalancer, NetworkInterface, ARPAdvertisement or AllocationClaim left',
          timeoutMs: 30_000,
        },
      );
    }, 600_000);
  },
);
