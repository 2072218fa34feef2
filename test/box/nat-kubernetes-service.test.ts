// NAT-2 for the `kubernetes` Service: an ElasticIP pod reaches the API server through
// `kubernetes.default`'s ClusterIP when the API server is not a Node, as on a managed or external
// control plane and on the box (its API server runs on the host, at the segment's .1). kube-proxy
// DNATs the ClusterIP to the API server's address; the connection leaves through the node's eth0,
// where the agent's SNAT to the ElasticIP must leave it alone: translated, the reply came back to
// the ElasticIP and was turned into the pod address past conntrack, so the ClusterIP was never
// restored as its source and the pod's connection got no answer. The agent learns the addresses
// from the Service's EndpointSlices. The manifest as `npx cdk8s synth` writes it; one node.
import { elapsedSince, figure } from '../shared/figures';
import { inNetns } from './exec';
import { sharedEchoBox, webBehindElasticIp } from './echo-box';
import { describeOnBox, getFromPod, until } from './session';

describeOnBox('NAT-2: an ElasticIP pod reaches the kubernetes Service when the API server is not a Node', () => {
  const echoBox = sharedEchoBox('juneau-nat-kubernetes-', { nodes: 1, label: 'nat-kubernetes box' });
  const { kubectl } = echoBox;
  let kubernetesIp = '';
  let apiServers: string[] = [];

  const jsonpath = async (args: string[], path: string) => (await kubectl([...args, '-o', `jsonpath=${path}`])).trim();

  beforeAll(async () => {
    const [node] = echoBox.box.nodes;
    await webBehindElasticIp(echoBox, node.name);
    kubernetesIp = await jsonpath(['get', 'service', 'kubernetes'], '{.spec.clusterIP}');
    apiServers = (
      await jsonpath(
        ['get', 'endpointslices', '-l', 'kubernetes.io/service-name=kubernetes'],
        '{.items[*].endpoints[*].addresses[*]}',
      )
    ).split(/\s+/);
    // The path exists: kube-proxy on the node sends the ClusterIP to the API server.
    await until(`kube-proxy on ${node.name} programs ${kubernetesIp} -> ${apiServers.join()}`, async () => {
      const table = await inNetns(node.netns, 'nft', ['list', 'table', 'ip', 'kube-proxy']);
      return table.includes(kubernetesIp) && apiServers.every((a) => table.includes(a)) ? true : undefined;
    });
  });

  test("NAT-2: HTTPS from the ElasticIP pod to the kubernetes Service's ClusterIP is answered by the API server, which is not a Node", async () => {
    // What makes this case: no Node has the API server's address, so nothing but the
    // EndpointSlice names it.
    const nodeAddresses = (await jsonpath(['get', 'nodes'], '{.items[*].status.addresses[*].address}')).split(/\s+/);
    expect(apiServers.filter((a) => nodeAddresses.includes(a))).toEqual([]);
    expect(apiServers).toEqual([echoBox.box.hostIp]);
    const t0 = Date.now();
    expect(await getFromPod(kubectl, 'web', `https://${kubernetesIp}:443/version`, 'status')).toMatch(/^status=\d{3}$/);
    figure('nat-kubernetes box: HTTPS GET from the ElasticIP pod to the kubernetes ClusterIP', elapsedSince(t0));
  });
});
