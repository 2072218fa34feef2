// EIP-19 (ARP-8) with real agents: an ElasticIP used directly by a Pod moves to a Pod on another
// node, and the segment is captured all along. Neither node sends an ARP frame about the address
// on its own — no gratuitous announcement by the new node, nothing from the old one — although the
// new node answers as soon as someone asks. Two "node" network namespaces on one bridge, one
// juneau-agent in each against the test control plane; the ElasticIP reconcilers in-process.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ANNOTATIONS, type ARPAdvertisement } from '../../api';
import { ArpMaps, PIN_SUBDIR, removePins } from '../../runtime/agent/bpf';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { CLIENT_IP, Rig, SUBNET, arpFramesAbout, describeAsRoot, repliesFor } from '../netns/rig';
import { AgentProcess, ApiBridge } from './agent-harness';
import {
  createEip,
  createNetwork,
  createPod,
  createPool,
  deleteObject,
  eipIn,
  rest,
  startReplica,
  type Replica,
} from './eip-harness';
import {
  createNamespace,
  deleteNamespace,
  deletePodNow,
  ensureNode,
  requireCrd,
  testKubeconfigPath,
  waitFor,
} from './fixture';

jest.setTimeout(120_000);

describeAsRoot("EIP-19: no gratuitous ARP when an ElasticIP's answering node changes (agents on two nodes)", () => {
  const rig = new Rig(2);
  const nodes = [0, 1].map((i) => `eip19-${rig.id}-n${i}`);
  const names = { pool: `eip19-${rig.id}`, network: `eip19-${rig.id}` };
  const bridges: ApiBridge[] = [];
  const agents: AgentProcess[] = [];
  const maps: ArpMaps[] = [];
  const macs: string[] = [];
  let replica: Replica | undefined;
  let namespace = '';

  const pinDir = (i: number) => path.join(rig.pinDir(i), PIN_SUBDIR);
  const answering = (i: number, address: string) => maps[i].addresses().has(address);
  const direct = { [ANNOTATIONS.elasticIP]: 'web' };
  const advertisementOf = async (address: string) =>
    (await rest.list<ARPAdvertisement & KubeObject>(JuneauResources.arpAdvertisements)).items.find(
      (a) => a.spec.address === address,
    );

  beforeAll(async () => {
    await requireCrd('elasticips');
    await requireCrd('arpadvertisements');
    await rig.setup();
    for (let i = 0; i < 2; i++) {
      macs.push(await rig.mac(rig.node(i), 'eth0'));
      await ensureNode(nodes[i], { internalIP: rig.nodeIp(i) });
    }
    // Inside eth0's 192.0.2.0/24 (EN-12), away from the addresses the other agent test uses.
    await createPool(names.pool, [`${SUBNET}.192/28`]);
    await createNetwork(names.network, [names.pool], { networkID: 5019 });
    for (let i = 0; i < 2; i++) {
      const bridge = new ApiBridge(ApiBridge.portOf(testKubeconfigPath()));
      bridges.push(bridge);
      await bridge.start(rig.node(i));
      const agent = new AgentProcess(rig.node(i), [
        '--node-name',
        nodes[i],
        '--kubeconfig',
        testKubeconfigPath(),
        `--bpffs=${rig.pinDir(i)}`,
        '--xdp-mode=generic',
        '--poll-interval=200ms',
        '--log-level=info',
      ]);
      agents.push(agent);
      await agent.startReady();
      maps.push(ArpMaps.openPinned(pinDir(i)));
    }
    replica = await startReplica('eip19');
    namespace = await createNamespace('eip19');
  }, 180_000);

  afterAll(async () => {
    await replica?.stop();
    for (const agent of agents) await agent.stop('SIGKILL');
    for (const m of maps) m.close();
    for (const bridge of bridges) await bridge.stop();
    if (namespace) await deleteNamespace(namespace);
    await deleteObject(JuneauResources.externalNetworks, undefined, names.network);
    await deleteObject(JuneauResources.addressPools, undefined, names.pool);
    for (const n of nodes) await deleteObject(Resources.nodes, undefined, n);
    try {
      for (let i = 0; i < 2; i++) if (fs.existsSync(pinDir(i))) removePins(pinDir(i));
    } finally {
      await rig.destroy();
    }
  }, 60_000);

  test('EIP-19 ARP-8 EIP-17: the Pod moves from node 0 to node 1; during the move and after it neither node sends an ARP frame about the address; the new node answers when asked (OPS-3)', async () => {
    await createEip(namespace, 'web', names.network);
    await createPod(namespace, 'web-a', { nodeName: nodes[0], annotations: direct });
    const address = (await eipIn(namespace, 'web', 'Attached')).status!.address!;
    await waitFor(() => answering(0, address), { what: `node 0's agent answering ${address}` });
    expect(await rig.resolveFresh(address)).toBe(macs[0]);

    // The move, captured from before the old Pod goes until well after the new node has the address.
    const frames = await rig.capture(async () => {
      await deletePodNow(namespace, 'web-a');
      await createPod(namespace, 'web-b', { nodeName: nodes[1], annotations: direct });
      await waitFor(async () => (await advertisementOf(address))?.spec.nodeName === nodes[1], {
        what: 'ARPAdvertisement on node 1 (EIP-17)',
      });
      await waitFor(() => answering(1, address) && !answering(0, address), {
        what: `only node 1's agent answering ${address}`,
      });
    }, 2_000);
    expect(arpFramesAbout(frames, macs[0], [address])).toEqual([]);
    expect(arpFramesAbout(frames, macs[1], [address])).toEqual([]);

    // Nothing was announced, yet a client that asks gets node 1 only.
    expect(await rig.resolveFresh(address)).toBe(macs[1]);
    const asked = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: address, count: 5 }));
    expect(repliesFor(asked, address).map((f) => f.src)).toEqual(Array(5).fill(macs[1]));

    // Control: the capture and the filter do see an announcement when a node sends one (RFC 5227
    // §3: sender and target are the address), so the empty lists above are not for want of looking.
    const control = await rig.capture(() =>
      rig
        .in(
          rig.node(1),
          'mausezahn',
          'eth0',
          '-q',
          '-c',
          '1',
          '-a',
          macs[1],
          '-b',
          'bcast',
          '-t',
          'arp',
          `request, smac=${macs[1]}, sip=${address}, tip=${address}`,
        )
        .then(() => undefined),
    );
    expect(arpFramesAbout(control, macs[1], [address])).toHaveLength(1);
  });
});
