// The real juneau-agent against the real control plane, answering real ARP from real XDP: a Node
// whose InternalIP is the address of eth0 in a "node" network namespace; the agent runs inside that
// namespace; a client namespace on the same segment sends ARP requests and captures what comes back.
// The node also holds addresses on a kube-ipvs0-like interface with arp_ignore=0 (the incident behind OPS-1).
import * as path from 'node:path';
import { ArpMaps, PIN_SUBDIR } from '../../runtime/agent/bpf';
import { JuneauResources } from '../../runtime/kube/resources';
import { Resources } from '../../runtime/kube/resources';
import { RestClient, isNotFound } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { sleep } from '../sleep';
import { CLIENT_IP, Rig, SUBNET, arpFramesAbout, describeAsRoot, repliesFor } from '../netns/rig';
import { BridgedAgent, kubectlJuneau, removePinsThen, type AgentProcess } from './agent-harness';
import {
  createArpNetwork,
  deleteArpNetwork,
  deleteNodes,
  ensureNode,
  requireCrd,
  testKubeConfig,
  testKubeconfigPath,
  waitFor,
} from './fixture';

jest.setTimeout(90_000);

const VIP = `${SUBNET}.60`;
const VIP_IPVS = `${SUBNET}.61`; // also held by the node's kernel on kube-ipvs0 (the incident behind OPS-1)
const VIP_GONE = `${SUBNET}.62`; // deleted while the agent is down
const VIP_LATE = `${SUBNET}.63`; // created while the agent is down
const FAR = '198.51.100.7'; // outside eth0's 192.0.2.0/24 (EN-12)

describeAsRoot('juneau-agent on a node namespace (ARP-10, EN-10..12, OPS-1..3, ARP-8)', () => {
  const rig = new Rig(1);
  const node = `agent-${rig.id}`;
  const names = { pool: `agent-${rig.id}`, network: `agent-${rig.id}` };
  const pinDir = path.join(rig.pinDir(0), PIN_SUBDIR);
  const kc = testKubeConfig();
  const rest = new RestClient(kc);
  let bridged: BridgedAgent | undefined;
  let agent: AgentProcess;
  let maps: ArpMaps | undefined;
  let nodeMac = '';

  const adName = (address: string) => `agent-${rig.id}-${address.replace(/\./g, '-')}`;
  const createAd = (address: string, nodeName = node) =>
    rest.create(JuneauResources.arpAdvertisements, {
      apiVersion: 'juneau.loutres.me/v1alpha1',
      kind: 'ARPAdvertisement',
      metadata: { name: adName(address) },
      spec: { externalNetwork: names.network, address, nodeName },
    } as KubeObject);
  const deleteAd = (address: string) =>
    rest.delete(JuneauResources.arpAdvertisements, undefined, adName(address)).catch((err: unknown) => {
      if (!isNotFound(err)) throw err; // a step of a test: only "already gone" is fine
    });
  const table = () => [...maps!.addresses().keys()].sort();
  const waitForTable = (expected: string[]) =>
    waitFor(() => JSON.stringify(table()) === JSON.stringify([...expected].sort()), {
      what: `external_arp_table = ${expected.join(', ')}`,
    });
  // FO-2: answers survive a restart shorter than --answer-expiry. Here the agent restarts from
  // TypeScript sources (tsx) inside a loaded test run, which took 12 s once; a generous expiry
  // keeps this test about adoption. test/netns/fo-expiry proves the expiry itself.
  const agentArgs = [
    '--node-name',
    node,
    '--kubeconfig',
    testKubeconfigPath(),
    `--bpffs=${rig.pinDir(0)}`,
    '--xdp-mode=generic',
    '--poll-interval=200ms',
    '--log-level=debug',
    '--answer-expiry=60s',
    '--lease-duration=60s',
  ];
  const warningsFor = async (address: string, reason: string) => {
    const events = await rest.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(
      Resources.events,
      { namespace: 'default' },
    );
    return events.items.filter((e) => e.regarding?.name === adName(address) && e.reason === reason);
  };

  beforeAll(async () => {
    await requireCrd('arpadvertisements');
    await rig.setup();
    const ns = rig.node(0);
    // kube-proxy ipvs with strictARP: false (the incident behind OPS-1): LB IPs on kube-ipvs0, arp_ignore=0.
    await rig.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kube-ipvs0p');
    await rig.in(ns, 'ip', 'addr', 'add', `${VIP_IPVS}/32`, 'dev', 'kube-ipvs0');
    for (const scope of ['all', 'eth0']) await rig.sysctl(ns, `net.ipv4.conf.${scope}.arp_ignore`, '0');
    nodeMac = await rig.mac(ns, 'eth0');
    await ensureNode(node, { internalIP: rig.nodeIp(0) });
    await createArpNetwork(rest, { ...names, addresses: [`${SUBNET}.0/25`] });
    bridged = new BridgedAgent(ns, agentArgs, testKubeconfigPath());
    agent = await bridged.start();
    maps = ArpMaps.openPinned(pinDir);
  }, 120_000);

  afterAll(async () => {
    await bridged?.stop();
    maps?.close();
    for (const address of [VIP, VIP_IPVS, VIP_GONE, VIP_LATE, FAR]) await deleteAd(address);
    await deleteArpNetwork(rest, names);
    await deleteNodes([node]);
    // The rig: namespaces (and with them the XDP attachment), the rig's pin directory.
    await removePinsThen(pinDir, () => rig.destroy());
  }, 60_000);

  test("EN-12: the agent chose eth0, the interface holding the Node's InternalIP, and guards the arp pool", async () => {
    const attached = agent.lines.find((l) => l.msg === 'responder attached');
    expect(attached).toMatchObject({ iface: 'eth0', mac: nodeMac, mode: 'generic' });
    expect(await rig.xdpProgramId(0)).toBeGreaterThan(0);
    await waitFor(() =>
      maps!.guardEntries().some((e) => e.action === 'drop' && e.address === `${SUBNET}.0` && e.prefixLength === 25),
    );
    expect(maps!.guardEntries()).toContainEqual(
      expect.objectContaining({ action: 'allow', address: rig.nodeIp(0), prefixLength: 32 }),
    );
  });

  test("ARP-10 EN-10 OPS-2 OPS-3: an ARPAdvertisement created in the API server is answered with the node's MAC, 60 of 60 probes", async () => {
    await createAd(VIP);
    await createAd(VIP_GONE);
    await waitForTable([VIP, VIP_GONE]);
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 60, gapMs: 10 }));
    const replies = repliesFor(frames, VIP);
    expect(replies).toHaveLength(60);
    expect(new Set(replies.map((f) => f.arp!.sha))).toEqual(new Set([nodeMac]));
    expect(await rig.arping(VIP, ['-c', '3'])).toEqual([nodeMac, nodeMac, nodeMac]);
    expect(await rig.resolveFresh(VIP)).toBe(nodeMac);
  });

  test('ARP-10: kubectl juneau bpf dump external_arp_table prints what the map holds, with counters', async () => {
    const dump = ['bpf', 'dump', 'external_arp_table', `--bpffs=${rig.pinDir(0)}`];
    const rows = JSON.parse(await kubectlJuneau(...dump, '-o', 'json')) as Array<{
      address: string;
      requests: number;
      replies: number;
      conflicts: number;
    }>;
    expect(rows.map((r) => r.address)).toEqual([VIP, VIP_GONE]);
    expect(rows[0].requests).toBeGreaterThanOrEqual(60);
    expect(rows[0].replies).toBeGreaterThanOrEqual(60);
    const text = await kubectlJuneau(...dump);
    expect(text).toMatch(/^ADDRESS\s+REQUESTS\s+REPLIES\s+CONFLICTS/);
    expect(text).toContain(VIP);
  });

  test('metrics and readiness: /readyz is ok; table size, XDP mode and per-address replies are exported', async () => {
    const curl = (url: string) => rig.in(rig.node(0), 'curl', '-s', url);
    expect(await curl('http://127.0.0.1:9202/readyz')).toContain('[+]maps-reconciled ok');
    const metrics = await waitFor(async () => {
      const text = await curl('http://127.0.0.1:9201/metrics');
      return /juneau_agent_arp_replies_total\{address="192\.0\.2\.60"\} [1-9]/.test(text) && text;
    });
    expect(metrics).toContain('juneau_agent_arp_table_entries 2');
    expect(metrics).toContain('juneau_agent_xdp_mode{mode="generic"} 1');
    expect(metrics).toMatch(/juneau_agent_xdp_packets_total\{reason="tx_reply"\} [1-9]/);
  });

  test("EN-12: an address outside eth0's subnet gets a Warning Event and is not written to the map", async () => {
    await createAd(FAR);
    const events = await waitFor(async () => {
      const found = await warningsFor(FAR, 'AddressOutsideInterfaceSubnet');
      return found.length > 0 && found;
    });
    expect(events[0].note).toContain(`${FAR} is outside the L2 subnet of eth0 (${SUBNET}.0/24)`);
    // Through a window of probes (five of the agent's 200 ms polls) the address is never written:
    // the map, sampled all along, never holds it, and not one probe for it is answered.
    const tablesSeen = new Set<string>();
    const sampling = setInterval(() => tablesSeen.add(table().join(' ')), 20);
    let frames;
    try {
      frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: FAR, count: 20, gapMs: 50 }));
    } finally {
      clearInterval(sampling);
    }
    expect(repliesFor(frames, FAR)).toEqual([]);
    expect([...tablesSeen]).toEqual([[VIP, VIP_GONE].join(' ')]);
  });

  test('RFC 5227 (conflict detection): another MAC claiming the VIP becomes a Warning Event naming that MAC', async () => {
    await rig.sendArp({ op: 'reply', sip: VIP, tip: VIP, count: 2 });
    const events = await waitFor(async () => {
      const found = await warningsFor(VIP, 'AddressConflict');
      return found.length > 0 && found;
    });
    expect(events[0].note).toContain(`another host with MAC ${rig.clientMac} claimed it`);
    expect(maps!.lookupAddress(VIP)).toMatchObject({ lastConflictMac: rig.clientMac });
  });

  test('OPS-1: nodeName moved away -> no answer, although the kernel holds the address on kube-ipvs0 with arp_ignore=0 (the guard drops it)', async () => {
    expect(await rig.in(rig.node(0), 'ip', '-o', 'addr', 'show', 'dev', 'kube-ipvs0')).toContain(VIP_IPVS);
    await createAd(VIP_IPVS);
    await waitForTable([VIP, VIP_GONE, VIP_IPVS]);
    expect(
      repliesFor(await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP_IPVS, count: 10 })), VIP_IPVS),
    ).toHaveLength(10);

    await rest.patch(JuneauResources.arpAdvertisements, undefined, adName(VIP_IPVS), 'merge', {
      spec: { nodeName: `elsewhere-${rig.id}` },
    });
    await waitForTable([VIP, VIP_GONE]);
    // Control: with the guard switched off behind the agent's back, this node's kernel answers (the incident behind OPS-1).
    // Only the flag changes: the agent's heartbeat and expiry stay as it wrote them, so a test that
    // fails here leaves the next one an agent whose answers have not expired (FO-2).
    const ifindex = agent.lines.find((l) => l.msg === 'responder attached')!.ifindex as number;
    const setGuard = (guard: boolean) =>
      maps!.setInterfaceConfig(ifindex, { ...maps!.interfaceConfig(ifindex)!, guard });
    setGuard(false);
    try {
      // Each attempt says what the program did with its three requests, so a miss names its side:
      // passed to the kernel with the guard still off, or not. The kernel's answer is the control
      // (it answers a local address on kube-ipvs0); once is enough, and every attempt is printed.
      const attempts: { guard?: boolean; passedToKernel: bigint; kernelReplies: number }[] = [];
      while (attempts.length < 3 && !attempts.some((a) => a.kernelReplies > 0)) {
        const passed = maps!.stats().JUNEAU_PASS_UNMAPPED;
        const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP_IPVS, count: 3 }));
        attempts.push({
          guard: maps!.interfaceConfig(ifindex)?.guard,
          passedToKernel: maps!.stats().JUNEAU_PASS_UNMAPPED - passed,
          kernelReplies: repliesFor(frames, VIP_IPVS).length,
        });
      }
      if (attempts.length > 1) console.warn('OPS-1 control: the kernel did not answer the first attempt', attempts);
      for (const a of attempts) {
        expect(a.guard).toBe(false);
        // At least: the client's own kernel may ask for the node's address meanwhile.
        expect(a.passedToKernel).toBeGreaterThanOrEqual(3n);
      }
      expect(attempts.some((a) => a.kernelReplies > 0)).toBe(true);
    } finally {
      setGuard(true);
    }
    const dropped = maps!.stats().JUNEAU_DROP_GUARDED;
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP_IPVS, count: 30, gapMs: 10 }));
    expect(repliesFor(frames, VIP_IPVS)).toEqual([]);
    expect(maps!.stats().JUNEAU_DROP_GUARDED - dropped).toBe(30n);
    expect(await rig.resolveFresh(VIP_IPVS)).toBeUndefined();
  });

  test('agent SIGKILLed and restarted while a probe loop runs: zero probes lost; the new agent adopts the pins, drops the entry deleted meanwhile, adds the one created meanwhile, keeps counters', async () => {
    const before = maps!.lookupAddress(VIP)!;
    // Probes go out in batches until the new agent is ready, then one batch more, so the loop
    // spans the kill, the gap with no agent and the swap to the new program however long the
    // restart takes on a loaded machine.
    const batch = 10;
    let probes = 0;
    let restarted = false;
    const probeUntilRestarted = async () => {
      for (let last = false; !last;) {
        last = restarted;
        await rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: batch, gapMs: 40 });
        probes += batch;
      }
    };
    const frames = await rig.capture(async () => {
      const probing = probeUntilRestarted();
      await sleep(300);
      expect(await agent.stop('SIGKILL')).toBeNull();
      await deleteAd(VIP_GONE);
      await createAd(VIP_LATE);
      await agent.startReady();
      restarted = true;
      await probing;
    });
    const replies = repliesFor(frames, VIP);
    expect(replies).toHaveLength(probes);
    expect(new Set(replies.map((f) => f.arp!.sha))).toEqual(new Set([nodeMac]));
    expect(table()).toEqual([VIP, VIP_LATE]);
    const attached = agent.lines.filter((l) => l.msg === 'responder attached').pop();
    expect(attached?.adoptedMaps).toEqual(expect.arrayContaining(['external_arp_table', 'juneau_guard']));
    expect(attached?.replacedProgramId).toEqual(expect.any(Number));
    const after = maps!.lookupAddress(VIP)!;
    expect(after.replies - before.replies).toBeGreaterThanOrEqual(BigInt(probes));
  });

  test('ARP-8: the agent sends no ARP frame on its own — across SIGTERM, start, adoption, and addresses added and removed', async () => {
    let exitCode: number | null = -1;
    const frames = await rig.capture(async () => {
      exitCode = await agent.stop('SIGTERM');
      // SIGTERM leaves the responder attached (the point of pinning).
      expect(await rig.xdpProgramId(0)).toBeGreaterThan(0);
      await agent.startReady();
      await createAd(VIP_GONE);
      await waitForTable([VIP, VIP_LATE, VIP_GONE]);
      await deleteAd(VIP_LATE);
      await waitForTable([VIP, VIP_GONE]);
    }, 1000);
    expect(exitCode).toBe(0);
    expect(arpFramesAbout(frames, nodeMac, [VIP, VIP_LATE, VIP_GONE])).toEqual([]);
    // And it still answers afterwards.
    expect(await rig.arping(VIP_GONE, ['-c', '2'])).toEqual([nodeMac, nodeMac]);
  });
});
