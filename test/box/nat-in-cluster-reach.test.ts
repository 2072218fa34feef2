// SEC-10: reaching a NAT ElasticIP from inside the cluster, as it is today. The ElasticIP is
// answered (ARP) and translated on its pod's node for traffic that comes in through the node's
// eth0 from outside the cluster; in-cluster clients are another matter. Each client position
// connects (TCP) to the ElasticIP at the port the pod listens on, and to the pod's own address at
// the same port and to a ClusterIP Service in front of the pod, as the positive controls: the
// client and the port work, only the ElasticIP does not.
// The box: two real nodes that route each other's pod ranges over eth0, the manifest as
// `npx cdk8s synth` writes it, and the pod `web` on node 0 behind the ElasticIP (echo-box.ts).
import { ECHO_HTTP_PORT } from '../../scripts/images/echo';
import { inNetns } from './exec';
import { runningIn } from './peers';
import { sharedEchoBox, webBehindElasticIp } from './echo-box';
import { describeOnBox, echoPod, podReady, until } from './session';

/** How long a connection attempt may take before it counts as `timeout`: past the kernel's ARP
 * failure (3 probes, 1 s apart), so that an unresolved neighbour shows as EHOSTUNREACH. */
const CONNECT_MS = 6000;

/** The port of the ClusterIP Service `web` in front of the pod `web`. */
const SERVICE_PORT = 80;

/** `node -e CONNECT HOST PORT MS`: one TCP connect; prints `connected`, the error's code
 * (`ECONNREFUSED`, `EHOSTUNREACH`, …) or `timeout` (no answer within MS ms). */
const CONNECT = `'use strict';
const [host, port, ms] = process.argv.slice(1);
const s = require('node:net').connect({ host, port: Number(port) });
const done = (what) => { console.log(what); process.exit(0); };
s.setTimeout(Number(ms), () => done('timeout'));
s.on('connect', () => done('connected')).on('error', (e) => done(e.code || e.message));
`;

describeOnBox(
  'SEC-10: reaching a NAT ElasticIP from inside the cluster (other node, same node, the pod itself, the node)',
  () => {
    const echoBox = sharedEchoBox('juneau-nat-reach-', { nodes: 2, label: 'nat-in-cluster-reach box' });
    const { kubectl } = echoBox;
    let eip = '';
    let webIp = '';
    let clusterIp = '';

    type Connect = (host: string, port?: number) => Promise<string>;
    const args = (host: string, port: number) => [host, String(port), String(CONNECT_MS)];
    /** What one connect from the Pod `pod` to `host:port` ended with. */
    const fromPod =
      (pod: string): Connect =>
      async (host, port = ECHO_HTTP_PORT) =>
        (await kubectl(['exec', pod, '--', 'node', '-e', CONNECT, ...args(host, port)])).trim();
    /** What one connect from node `i`'s own network namespace to `host:port` ended with. */
    const fromNode =
      (i: number): Connect =>
      async (host, port = ECHO_HTTP_PORT) =>
        (await inNetns(echoBox.box.nodes[i].netns, process.execPath, ['-e', CONNECT, ...args(host, port)])).trim();
    /** The positive controls of one client: the pod address and the ClusterIP. */
    const controls = async (connect: Connect) => ({
      pod: await connect(webIp),
      service: await connect(clusterIp, SERVICE_PORT),
    });
    const BOTH_CONNECT = { pod: 'connected', service: 'connected' };
    /**
     * What `connect` (to the ElasticIP) ended with, and the first SYN-ACK from the pod address that
     * node 1's eth0 received meanwhile, as tcpdump prints it (`''` if none within 20 s).
     */
    const withReplyOnNode1 = async (connect: () => Promise<string>) => {
      const filter = `src host ${webIp} and src port ${ECHO_HTTP_PORT} and tcp[13] & 18 == 18`;
      const dump = runningIn(echoBox.box.nodes[1].netns, 'timeout', [
        '20',
        'tcpdump',
        ...['-i', 'eth0', '-n', '-l', '-c', '1', filter],
      ]);
      await dump.waitFor(/listening on/);
      const result = await connect();
      return { result, reply: (await dump.done).stdout };
    };
    /** A SYN-ACK line of tcpdump from the pod address. */
    const synAckFromPod = () =>
      new RegExp(`IP ${webIp.replace(/\./g, '\\.')}\\.${ECHO_HTTP_PORT} > \\S+: Flags \\[S\\.\\]`);

    beforeAll(async () => {
      const [n0, n1] = echoBox.box.nodes.map((n) => n.name);
      await kubectl(['apply', '--server-side', '-f', '-'], `${echoPod('near', n0)}\n---\n${echoPod('peer', n1)}`);
      eip = await webBehindElasticIp(echoBox, n0);
      webIp = (await podReady(kubectl, 'web')).status.podIP!;
      await podReady(kubectl, 'near');
      await podReady(kubectl, 'peer');
      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        `apiVersion: v1
kind: Service
metadata: { name: web, namespace: default }
spec: { selector: { app: web }, ports: [{ port: ${SERVICE_PORT}, targetPort: ${ECHO_HTTP_PORT}, protocol: TCP }] }
`,
      );
      clusterIp = (await kubectl(['get', 'service', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
      // kube-proxy on both nodes has the Service and its endpoint (the control's path exists).
      for (const node of echoBox.box.nodes)
        await until(`kube-proxy on ${node.name} programs ${clusterIp} -> ${webIp}`, async () => {
          const table = await inNetns(node.netns, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
          return table.includes(clusterIp) && table.includes(webIp) ? true : undefined;
        });
    });

    test("SEC-10: a pod on another node connects to the pod address and the ClusterIP; at the ElasticIP it gets no answer it accepts (timeout): the pod's SYN-ACK comes back from the pod address", async () => {
      expect(await controls(fromPod('peer'))).toEqual(BOTH_CONNECT);
      const { result, reply } = await withReplyOnNode1(() => fromPod('peer')(eip));
      expect(result).toBe('timeout');
      expect(reply).toMatch(synAckFromPod());
    });

    test('SEC-10: the other node itself connects to the pod address and the ClusterIP; at the ElasticIP, timeout, the SYN-ACK coming back from the pod address', async () => {
      expect(await controls(fromNode(1))).toEqual(BOTH_CONNECT);
      const { result, reply } = await withReplyOnNode1(() => fromNode(1)(eip));
      expect(result).toBe('timeout');
      expect(reply).toMatch(synAckFromPod());
    });

    test("SEC-10: a pod on the ElasticIP pod's node connects to the pod address and the ClusterIP; the ElasticIP is not resolved there (EHOSTUNREACH)", async () => {
      expect(await controls(fromPod('near'))).toEqual(BOTH_CONNECT);
      expect(await fromPod('near')(eip)).toBe('EHOSTUNREACH');
    });

    // tc_nat_pod on cni0 (the agents find it by themselves, issue 28) hands a pod's packet to an
    // ElasticIP of its own node to the kernel untranslated (JUNEAU_NAT_PASS_TO_ELASTIC_IP), whose
    // ARP for it fails: EHOSTUNREACH at once, as for the pod next to it, not a hang.
    test('SEC-10: the ElasticIP pod reaches itself at its pod address and its ClusterIP, not at its ElasticIP (EHOSTUNREACH)', async () => {
      expect(await controls(fromPod('web'))).toEqual(BOTH_CONNECT);
      expect(await fromPod('web')(eip)).toBe('EHOSTUNREACH');
    });

    test("SEC-10: hairpin from the ElasticIP pod's node: the node connects to the pod address and the ClusterIP, and does not resolve the ElasticIP (EHOSTUNREACH)", async () => {
      expect(await controls(fromNode(0))).toEqual(BOTH_CONNECT);
      expect(await fromNode(0)(eip)).toBe('EHOSTUNREACH');
    });
  },
);
