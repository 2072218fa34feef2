// SEC-1 (H1) end to end: a pod's IP reused by another tenant's pod never inherits its ElasticIP.
// Tenant A's pod `job` (namespace default) holds an ElasticIP through an attachment and completes;
// a completed Pod keeps status.podIP, its NIC and attachment stay, but the CNI frees the address.
// The box's node hands out only a few pod addresses (`up --pod-ips`), so a pod of tenant B
// (namespace tenant-b) on that node soon gets the same address. Then the ElasticIP must reach
// nobody, and B's egress must never leave from it: the agent dropped the binding when A's Pod
// stopped Running with that address. One node; the manifest as `npx cdk8s synth` writes it.
import { bashIn } from './exec';
import { ETH0_NIC, sharedEchoBox } from './echo-box';
import { peerInPod } from './peers';
import {
  arpNetworkYaml,
  describeOnBox,
  echoPod,
  elasticIpAddress,
  elasticIpYaml,
  type PodJson,
  podReady,
  routerGet,
  until,
} from './session';

/** The node's pod addresses: the two controller replicas take two, leaving few for the tenants. */
const POD_IPS = 4;
const TENANT_B = 'tenant-b';
const PORT = 9500;
/** How long A's pod serves before it exits 0. */
const JOB_SECONDS = 45;

describeOnBox(
  'SEC-1: a completed pod’s IP reused by another tenant’s pod gets neither its ElasticIP nor its egress address',
  () => {
    const echoBox = sharedEchoBox('juneau-pod-ip-reuse-', {
      nodes: 1,
      label: 'pod-ip reuse box',
      upArgs: ['--pod-ips', String(POD_IPS)],
      upNote: `Juneau and echo images imported, ${POD_IPS} pod addresses per node`,
    });
    const { kubectl } = echoBox;

    const podIn = async (ns: string, name: string) =>
      JSON.parse(await kubectl(['-n', ns, 'get', 'pod', name, '-o', 'json'])) as PodJson;

    test('SEC-1: the ElasticIP reaches the Running pod, then nobody once it completed; the pod that got its address is not reached through it and does not leave from it', async () => {
      const node = echoBox.box.nodes[0].name;
      // Tenant A: the echo server that exits after JOB_SECONDS, behind ElasticIP `job`.
      const job = JSON.parse(echoPod('job', node, ETH0_NIC)) as {
        spec: { restartPolicy?: string; containers: Array<{ command?: string[] }> };
      };
      job.spec.restartPolicy = 'Never';
      job.spec.containers[0].command = [
        '/usr/bin/node',
        '-e',
        `require('/usr/lib/juneau-echo/server.js'); setTimeout(() => process.exit(0), ${JOB_SECONDS * 1000});`,
      ];
      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        `${arpNetworkYaml(echoBox.box.segment)}---\n${elasticIpYaml('job', 'box-net', 'job.eth0')}`,
      );
      await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(job));
      const eip = await elasticIpAddress(kubectl, 'job');
      const address = (await podReady(kubectl, 'job')).status.podIP!;
      // The positive control: while A's pod runs, the ElasticIP reaches it.
      await until(`HTTP through ElasticIP ${eip} to pod job`, async () =>
        (await routerGet(echoBox.router, eip)).includes('pod=job') ? true : undefined,
      );
      await until(
        'pod job Succeeded',
        async () => ((await podIn('default', 'job')).status.phase === 'Succeeded' ? true : undefined),
        JOB_SECONDS * 1000 + 120_000,
      );
      // The Pod keeps its address in status, as the finding says.
      expect((await podIn('default', 'job')).status.podIP).toBe(address);

      // Tenant B: echo pods on the same node until one holds A's old address (each kept, so the
      // allocator moves on through the few free addresses).
      await kubectl(['create', 'namespace', TENANT_B]);
      let reuser = '';
      for (let i = 0; i < POD_IPS && !reuser; i++) {
        const pod = JSON.parse(echoPod(`b-${i}`, node)) as { metadata: { namespace: string } };
        pod.metadata.namespace = TENANT_B;
        await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(pod));
        const got = await until(`pod ${TENANT_B}/b-${i} Ready`, async () => {
          const p = await podIn(TENANT_B, `b-${i}`);
          return p.status.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined;
        });
        if (got.status.podIP === address) reuser = `b-${i}`;
      }
      expect(reuser).not.toBe('');
      expect((await podIn(TENANT_B, reuser)).spec).toMatchObject({ nodeName: node });

      // Inbound: the ElasticIP reaches nobody (no answer at all, B's pod least of all).
      for (let i = 0; i < 3; i++) expect(await routerGet(echoBox.router, eip)).toBe('');

      // Outbound: B's pod opens a connection to the router; the router's capture sees its SYN, and
      // not from the ElasticIP (the box's nodes do not masquerade: it comes from the pod address).
      const capture = bashIn(
        echoBox.router,
        `timeout 20 tcpdump -lni eth0 -c 1 'tcp dst port ${PORT} and tcp[tcpflags] & tcp-syn != 0' 2>/dev/null || true`,
        30_000,
      );
      await new Promise((r) => setTimeout(r, 1500)); // tcpdump attached before the SYN
      const connect = peerInPod(
        { kubectlBin: echoBox.kubectlBin, kubectlArgs: [...echoBox.kubectlArgs, '-n', TENANT_B] },
        reuser,
        ['connect', echoBox.routerIp, String(PORT), '10'],
      );
      const seen = await capture;
      // Only its SYN matters here: the router has no route back to the pod network, so unstopped
      // the connect would retry its SYN for ~130 s (tcp_syn_retries).
      connect.child.kill();
      await connect.done;
      const source = / IP (\d+\.\d+\.\d+\.\d+)\.\d+ > /.exec(seen)?.[1];
      expect({ source, captured: seen.trim().length > 0 }).toEqual({ source: address, captured: true });
      expect(source).not.toBe(eip);
    });
  },
);
