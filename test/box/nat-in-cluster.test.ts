// NAT-2 on a stock install: an ElasticIP pod's traffic that stays in the cluster keeps
// the pod's own address, and only what leaves for the outside leaves from the ElasticIP. The
// manifest as `npx cdk8s synth` writes it (no --nat-cluster-cidrs, no --nat-pod-ifaces: the agents
// find cni0 from their pods' routes and translate as packets enter it), on the cluster in a box: two real nodes that route each other's pod
// ranges over eth0 (as host-gw or native routing does), kube-proxy in nftables mode, echo pods
// whose HTTP server answers with the client address it saw (scripts/images/echo.ts).
import { ECHO_HTTP_PORT } from '../../scripts/images/echo';
import { elapsedSince, figure } from '../shared/figures';
import { INSTALL } from '../../api/constants';
import { NAT_TC_POD_HANDLE } from '../../runtime/agent/bpf/nat';
import { inNetns } from './exec';
import { sharedEchoBox, webBehindElasticIp } from './echo-box';
import { podConnects } from './peers';
import { agentPods, describeOnBox, echoPod, getFromPod, podReady, until } from './session';

/** A second Service range, added as a ServiceCIDR during the run (TEST-NET-free private space). */
const EXTRA_SERVICE_CIDR = '10.100.0.0/24';
const EXTRA_CLUSTER_IP = '10.100.0.10';

describeOnBox(
  'NAT-2 on a stock install: an ElasticIP pod keeps its own address inside the cluster, and leaves from the ElasticIP only towards the outside',
  () => {
    const echoBox = sharedEchoBox('juneau-nat-in-cluster-', { nodes: 2, label: 'nat-in-cluster box' });
    const { kubectl, inRouter } = echoBox;
    let eip = '';
    let webIp = '';
    let peerIp = '';
    let clusterIp = '';
    let nodePort = 0;

    const running = (name: string) => podReady(kubectl, name);
    /** A connection the pod `web` opens to the router at `port`, `bytes` each way. */
    const webConnectsToRouter = (port: number, bytes: number) =>
      podConnects(echoBox, 'web', { netns: echoBox.router, address: echoBox.routerIp, port }, bytes);
    /** One HTTP GET by the echo image's Node.js in the pod `web`: the page, or `ERROR <why>` (5 s). */
    const getFromWeb = (url: string) => getFromPod(kubectl, 'web', url);
    const agentPodOn = async (node: string) => (await agentPods(kubectl, node))[0].metadata.name;

    beforeAll(async () => {
      const { box } = echoBox;
      const [n0, n1] = box.nodes.map((n) => n.name);
      const tApply = Date.now();
      // peer (on n1) behind a ClusterIP and a NodePort Service, then web (on n0) behind the ElasticIP.
      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        `apiVersion: v1
kind: Service
metadata: { name: peer, namespace: default }
spec: { selector: { app: peer }, ports: [{ port: 80, targetPort: ${ECHO_HTTP_PORT}, protocol: TCP }] }
---
apiVersion: v1
kind: Service
metadata: { name: peer-nodeport, namespace: default }
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: { app: peer }
  ports: [{ port: 80, targetPort: ${ECHO_HTTP_PORT}, protocol: TCP }]
`,
      );
      await kubectl(['apply', '--server-side', '-f', '-'], echoPod('peer', n1));
      eip = await webBehindElasticIp(echoBox, n0);
      webIp = (await running('web')).status.podIP!;
      peerIp = (await running('peer')).status.podIP!;
      clusterIp = (await kubectl(['get', 'service', 'peer', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
      nodePort = Number(await kubectl(['get', 'service', 'peer-nodeport', '-o', 'jsonpath={.spec.ports[0].nodePort}']));
      // kube-proxy on both nodes has the Services and their endpoint (not what the tests assert:
      // the path they take exists).
      for (const node of box.nodes)
        await until(
          `kube-proxy on ${node.name} programs ${clusterIp} and NodePort ${nodePort} -> ${peerIp}`,
          async () => {
            const table = await inNetns(node.netns, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
            return table.includes(clusterIp) && table.includes(peerIp) && table.includes(String(nodePort))
              ? true
              : undefined;
          },
        );
      figure('nat-in-cluster box: ElasticIP, pods and Services applied -> all paths programmed', elapsedSince(tApply));
    });

    test("NAT-2: HTTP from the ElasticIP pod to a ClusterIP Service whose backend is on another node is answered, and the backend saw the pod's own address", async () => {
      expect(await getFromWeb(`http://${clusterIp}/`)).toBe(
        `client=${webIp} pod=peer node=${echoBox.box.nodes[1].name}`,
      );
    });

    test("NAT-2: HTTP from the ElasticIP pod straight to a pod on another node: that pod saw the pod's own address, not the ElasticIP", async () => {
      expect(await getFromWeb(`http://${peerIp}:${ECHO_HTTP_PORT}/`)).toBe(
        `client=${webIp} pod=peer node=${echoBox.box.nodes[1].name}`,
      );
    });

    test("NAT-2: HTTP from the ElasticIP pod to another node's own address (a NodePort, externalTrafficPolicy Local): the backend saw the pod's own address", async () => {
      expect(await getFromWeb(`http://${echoBox.box.nodes[1].ip}:${nodePort}/`)).toBe(
        `client=${webIp} pod=peer node=${echoBox.box.nodes[1].name}`,
      );
    });

    test("NAT-2, NAT-1: towards the outside the ElasticIP still wins: the pod's connection to the router arrives from the ElasticIP, and the router's GET to the ElasticIP reaches the pod", async () => {
      const { heard, said } = await webConnectsToRouter(9000, 100);
      expect(heard.peer).toBe(eip);
      expect({ received: heard.received, sha: heard.receivedSha256 }).toEqual({ received: 100, sha: said.sentSha256 });
      const page = await inRouter(
        `ip neigh flush to ${eip} dev eth0; curl -s -m 2 http://${eip}:${ECHO_HTTP_PORT}/`,
        60_000,
      );
      expect(page.trim()).toBe(`client=${echoBox.routerIp} pod=web node=${echoBox.box.nodes[0].name}`);
    });

    // With the pod-facing hook (on cni0, where the agent finds its pods routed), the ElasticIP pod's
    // packets are translated as they enter cni0, before kube-proxy rewrites a ClusterIP to a
    // backend: the Service range itself must be known, and only the ServiceCIDRs say what it is.
    test('NAT-2 with the pod-side hook the agent put on cni0 by itself (SNAT before kube-proxy): ClusterIPs keep the pod address from the ServiceCIDR the agent learned, and from a ServiceCIDR added later, which the agent follows; the outside still sees the ElasticIP', async () => {
      const filters = await inNetns(echoBox.box.nodes[0].netns, 'tc', ['filter', 'show', 'dev', 'cni0', 'ingress']);
      expect(filters).toContain(`handle 0x${NAT_TC_POD_HANDLE.toString(16)} `);
      const page = `client=${webIp} pod=peer node=${echoBox.box.nodes[1].name}`;
      expect(await getFromWeb(`http://${clusterIp}/`)).toBe(page);

      const t0 = Date.now();
      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        `apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: { name: extra }
spec: { cidrs: ["${EXTRA_SERVICE_CIDR}"] }
---
apiVersion: v1
kind: Service
metadata: { name: peer-extra, namespace: default }
spec: { clusterIP: ${EXTRA_CLUSTER_IP}, selector: { app: peer }, ports: [{ port: 80, targetPort: ${ECHO_HTTP_PORT}, protocol: TCP }] }
`,
      );
      // The agent on web's node wrote the new range (its log), and kube-proxy there programs the Service.
      await until(`the agent on ${echoBox.box.nodes[0].name} writes ${EXTRA_SERVICE_CIDR}`, async () => {
        const logs = await kubectl(['-n', INSTALL.namespace, 'logs', await agentPodOn(echoBox.box.nodes[0].name)]);
        return logs.split('\n').some((l) => l.includes('in-cluster prefixes written') && l.includes(EXTRA_SERVICE_CIDR))
          ? true
          : undefined;
      });
      figure('nat-in-cluster box: ServiceCIDR applied -> the agent wrote its range', elapsedSince(t0));
      // (An entry in service-ips, not the no-endpoint reject it starts with.)
      const serviceEntry = new RegExp(`${EXTRA_CLUSTER_IP.replace(/\./g, '\\.')} \\. tcp \\. 80 : goto service-`);
      await until(`kube-proxy on ${echoBox.box.nodes[0].name} sends ${EXTRA_CLUSTER_IP} to its endpoint`, async () =>
        serviceEntry.test(await inNetns(echoBox.box.nodes[0].netns, 'nft', ['list', 'table', 'ip', 'kube-proxy']))
          ? true
          : undefined,
      );
      expect(await getFromWeb(`http://${EXTRA_CLUSTER_IP}/`)).toBe(page);
      expect(await getFromWeb(`http://${peerIp}:${ECHO_HTTP_PORT}/`)).toBe(page);

      const { heard } = await webConnectsToRouter(9001, 10);
      expect(heard.peer).toBe(eip);
    });
  },
);
