// NAT-2 for the `kubernetes` Service (issue 14): an ElasticIP pod reaches the API server through
// `kubernetes.default`'s ClusterIP when the API server is not a Node, as on a managed or external
// control plane and on the box (its API server runs on the host, at the segment's .1). kube-proxy
// DNATs the ClusterIP to the API server's address; the connection leaves through the node's eth0,
// where the agent's SNAT to the ElasticIP must leave it alone: translated, the reply came back to
// the ElasticIP and was turned into the pod address past conntrack, so the ClusterIP was never
// restored as its source and the pod's connection got no answer. The agent learns the addresses
// from the Service's EndpointSlices. The manifest as `npx cdk8s synth` writes it; one node.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { elapsedSince, figure } from '../e2e/figures';
import { inNetns } from './exec';
import type { BoxState } from './state';
import { downEchoBox, upEchoBox } from './echo-box';
import {
  arpNetworkYaml,
  describeOnBox,
  echoPod,
  elasticIpAddress,
  elasticIpYaml,
  getFromPod,
  type Kubectl,
  podReady,
  routerGet,
  until,
} from './session';

jest.setTimeout(1_800_000);

describeOnBox('NAT-2: an ElasticIP pod reaches the kubernetes Service when the API server is not a Node', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-nat-kubernetes-'));
  const dir = path.join(work, 'cluster');
  let box: BoxState;
  let kubectl: Kubectl;
  let router = '';
  let kubernetesIp = '';
  let apiServers: string[] = [];

  const jsonpath = async (args: string[], path: string) => (await kubectl([...args, '-o', `jsonpath=${path}`])).trim();

  beforeAll(async () => {
    ({ box, kubectl, router } = await upEchoBox(work, dir, { nodes: 1, label: 'nat-kubernetes box' }));
    const [node] = box.nodes;
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${arpNetworkYaml(box.segment)}---\n${elasticIpYaml('web', 'box-net', 'web.eth0')}`,
    );
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      echoPod('web', node.name, { 'juneau.loutres.me/networks': '[{"interface":"eth0"}]' }),
    );
    const eip = await elasticIpAddress(kubectl, 'web');
    await podReady(kubectl, 'web');
    // The ElasticIP is translated on the pod's node: the router's GET reaches the pod through it.
    await until(`HTTP through ElasticIP ${eip}`, async () =>
      (await routerGet(router, eip)).startsWith('client=') ? true : undefined,
    );
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

  afterAll(() => downEchoBox(work, dir, [router]));

  test("NAT-2: HTTPS from the ElasticIP pod to the kubernetes Service's ClusterIP is answered by the API server, which is not a Node", async () => {
    // What makes this case: no Node has the API server's address, so nothing but the
    // EndpointSlice names it.
    const nodeAddresses = (await jsonpath(['get', 'nodes'], '{.items[*].status.addresses[*].address}')).split(/\s+/);
    expect(apiServers.filter((a) => nodeAddresses.includes(a))).toEqual([]);
    expect(apiServers).toEqual([box.hostIp]);
    const t0 = Date.now();
    expect(await getFromPod(kubectl, 'web', `https://${kubernetesIp}:443/version`, 'status')).toMatch(/^status=\d{3}$/);
    figure('nat-kubernetes box: HTTPS GET from the ElasticIP pod to the kubernetes ClusterIP', elapsedSince(t0));
  });
});
