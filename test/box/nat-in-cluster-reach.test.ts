// SEC-10: reaching a NAT ElasticIP from inside the cluster, as it is today. The ElasticIP is
// answered (ARP) and translated on its pod's node for traffic that comes in through the node's
// eth0 from outside the cluster; in-cluster clients are another matter. Each client position
// connects (TCP) to the ElasticIP at the port the pod listens on, and to the pod's own address at
// the same port as the positive control: the client and the port work, only the ElasticIP does not.
// The box: two real nodes that route each other's pod ranges over eth0, the manifest as
// `npx cdk8s synth` writes it, and the pod `web` on node 0 behind the ElasticIP (echo-box.ts).
import { ECHO_HTTP_PORT } from '../../scripts/images/echo';
import { inNetns } from './exec';
import { sharedEchoBox, webBehindElasticIp } from './echo-box';
import { describeOnBox, echoPod, podReady } from './session';

/** How long a connection attempt may take before it counts as `timeout`: past the kernel's ARP
 * failure (3 probes, 1 s apart), so that an unresolved neighbour shows as EHOSTUNREACH. */
const CONNECT_MS = 6000;

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

    const args = (host: string) => [host, String(ECHO_HTTP_PORT), String(CONNECT_MS)];
    /** What one connect from the Pod `pod` to `host` ended with. */
    const fromPod = async (pod: string, host: string) =>
      (await kubectl(['exec', pod, '--', 'node', '-e', CONNECT, ...args(host)])).trim();
    /** What one connect from node `i`'s own network namespace to `host` ended with. */
    const fromNode = async (i: number, host: string) =>
      (await inNetns(echoBox.box.nodes[i].netns, process.execPath, ['-e', CONNECT, ...args(host)])).trim();

    beforeAll(async () => {
      const [n0, n1] = echoBox.box.nodes.map((n) => n.name);
      await kubectl(['apply', '--server-side', '-f', '-'], `${echoPod('near', n0)}\n---\n${echoPod('peer', n1)}`);
      eip = await webBehindElasticIp(echoBox, n0);
      webIp = (await podReady(kubectl, 'web')).status.podIP!;
      await podReady(kubectl, 'near');
      await podReady(kubectl, 'peer');
    });

    test('SEC-10: a pod on another node connects to the pod address, and gets no answer from the ElasticIP (timeout): the reply leaves with the pod address, not the ElasticIP', async () => {
      expect(await fromPod('peer', webIp)).toBe('connected');
      expect(await fromPod('peer', eip)).toBe('timeout');
    });

    test('SEC-10: the other node itself connects to the pod address, and gets no answer from the ElasticIP (timeout)', async () => {
      expect(await fromNode(1, webIp)).toBe('connected');
      expect(await fromNode(1, eip)).toBe('timeout');
    });

    test("SEC-10: a pod on the ElasticIP pod's node connects to the pod address; the ElasticIP is not resolved there (EHOSTUNREACH)", async () => {
      expect(await fromPod('near', webIp)).toBe('connected');
      expect(await fromPod('near', eip)).toBe('EHOSTUNREACH');
    });

    test('SEC-10: the ElasticIP pod reaches itself at its pod address, not at its ElasticIP (EHOSTUNREACH)', async () => {
      expect(await fromPod('web', webIp)).toBe('connected');
      expect(await fromPod('web', eip)).toBe('EHOSTUNREACH');
    });

    test("SEC-10: hairpin from the ElasticIP pod's node: the node connects to the pod address, and does not resolve the ElasticIP (EHOSTUNREACH)", async () => {
      expect(await fromNode(0, webIp)).toBe('connected');
      expect(await fromNode(0, eip)).toBe('EHOSTUNREACH');
    });
  },
);
