// FO-1 on the wire: the real juneau-agent in a node namespace, the real control plane, real XDP.
// Node 1 runs the agent; node 0 plays the previous node: a pinned responder that still answers
// for the address the controller just moved (its agent has not yet removed the entry, or is
// gone). The client namespace's bridge is the segment; its capture is the router's view.
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ArpMaps, PIN_SUBDIR } from '../../runtime/agent/bpf';
import { RFC5227 } from '../../runtime/agent/announce/announcer';
import { JuneauResources } from '../../runtime/kube/resources';
import { Resources } from '../../runtime/kube/resources';
import { RestClient, isNotFound } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { ARP_REPLY, ARP_REQUEST, type Frame } from '../netns/pcap';
import { Rig, SUBNET, describeAsRoot } from '../netns/rig';
import { BridgedAgent, removePinsThen } from './agent-harness';
import { ensureNode, ignoreNotFound, requireCrd, testKubeConfig, testKubeconfigPath, waitFor } from './fixture';

jest.setTimeout(120_000);

const execFileAsync = promisify(execFile);
const CLI_BIN = path.resolve(__dirname, '../../build/bin/kubectl-juneau.js');

const ORDER_VIP = `${SUBNET}.70`; // still answered by node 0 when it moves to node 1
const ON_VIP = `${SUBNET}.72`;
const OFF_VIP = `${SUBNET}.81`; // on the network without announceOnMove

const announcementsOf = (frames: Frame[], mac: string, address: string) =>
  frames.filter(
    (f) =>
      f.src === mac && f.arp?.op === ARP_REQUEST && f.arp.sha === mac && f.arp.sip === address && f.arp.tip === address,
  );

describeAsRoot('FO-1 announcements on move, on the wire (real agent, real XDP)', () => {
  const rig = new Rig(2);
  const node = `fo1-${rig.id}`;
  const names = {
    poolOn: `fo1-on-${rig.id}`,
    poolOff: `fo1-off-${rig.id}`,
    on: `fo1-on-${rig.id}`,
    off: `fo1-off-${rig.id}`,
  };
  const pinDir = path.join(rig.pinDir(1), PIN_SUBDIR);
  const rest = new RestClient(testKubeConfig());
  let bridged: BridgedAgent | undefined;
  let maps: ArpMaps | undefined;
  let newMac = '';
  let oldMac = '';

  const adName = (address: string) => `fo1-${rig.id}-${address.replace(/\./g, '-')}`;
  const createAd = (address: string, network: string) =>
    rest.create(JuneauResources.arpAdvertisements, {
      apiVersion: 'juneau.loutres.me/v1alpha1',
      kind: 'ARPAdvertisement',
      metadata: { name: adName(address) },
      spec: { externalNetwork: network, address, nodeName: node },
    } as KubeObject);
  const create = (type: typeof JuneauResources.addressPools, body: object) =>
    rest.create(type, { apiVersion: 'juneau.loutres.me/v1alpha1', ...body } as KubeObject);
  const metrics = () => rig.in(rig.node(1), 'curl', '-s', 'http://127.0.0.1:9201/metrics');
  /** The event that ends a capture window: the agent has sent both announcements for `address`. */
  const bothAnnounced = (address: string) =>
    waitFor(
      async () =>
        new RegExp(
          `juneau_agent_arp_announcements_total\\{address="${address.replace(/\./g, '\\.')}"\\} ${RFC5227.ANNOUNCE_NUM}\\b`,
        ).test(await metrics()),
      { what: `${address} announced ${RFC5227.ANNOUNCE_NUM} times`, timeoutMs: 20_000 },
    );

  beforeAll(async () => {
    await requireCrd('arpadvertisements');
    await rig.setup();
    newMac = await rig.mac(rig.node(1), 'eth0');
    oldMac = (await rig.attach(0, { mode: 'generic' })).mac;
    await ensureNode(node, { internalIP: rig.nodeIp(1) });
    await create(JuneauResources.addressPools, {
      kind: 'AddressPool',
      metadata: { name: names.poolOn },
      spec: { advertiseMode: 'arp', addresses: [`${SUBNET}.64/28`] },
    });
    await create(JuneauResources.addressPools, {
      kind: 'AddressPool',
      metadata: { name: names.poolOff },
      spec: { advertiseMode: 'arp', addresses: [`${SUBNET}.80/28`] },
    });
    await create(JuneauResources.externalNetworks, {
      kind: 'ExternalNetwork',
      metadata: { name: names.on },
      spec: { type: 'arp', addressPools: [names.poolOn], arp: { announceOnMove: true } },
    });
    await create(JuneauResources.externalNetworks, {
      kind: 'ExternalNetwork',
      metadata: { name: names.off },
      spec: { type: 'arp', addressPools: [names.poolOff] },
    });
    bridged = new BridgedAgent(
      rig.node(1),
      [
        '--node-name',
        node,
        '--kubeconfig',
        testKubeconfigPath(),
        `--bpffs=${rig.pinDir(1)}`,
        '--xdp-mode=generic',
        '--poll-interval=200ms',
      ],
      testKubeconfigPath(),
    );
    await bridged.start();
    maps = ArpMaps.openPinned(pinDir);
  }, 120_000);

  afterAll(async () => {
    await bridged?.stop();
    maps?.close();
    for (const address of [ORDER_VIP, ON_VIP, OFF_VIP]) {
      await rest.delete(JuneauResources.arpAdvertisements, undefined, adName(address)).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
    for (const n of [names.on, names.off])
      await rest.delete(JuneauResources.externalNetworks, undefined, n).catch(ignoreNotFound);
    for (const p of [names.poolOn, names.poolOff])
      await rest.delete(JuneauResources.addressPools, undefined, p).catch(ignoreNotFound);
    await rest.delete(Resources.nodes, undefined, node).catch(ignoreNotFound);
    await removePinsThen(pinDir, () => rig.destroy());
  }, 60_000);

  test("FO-1 ARP-8: off (spec.arp absent) sends no probe and no announcement; the window ends when an on network's address was announced twice", async () => {
    const frames = await rig.capture(async () => {
      await createAd(OFF_VIP, names.off);
      await waitFor(() => maps!.lookupAddress(OFF_VIP) !== undefined, { what: `${OFF_VIP} in the map` });
      await createAd(ON_VIP, names.on);
      await bothAnnounced(ON_VIP);
    });
    expect(frames.filter((f) => f.src === newMac && f.arp && (f.arp.sip === OFF_VIP || f.arp.tip === OFF_VIP))).toEqual(
      [],
    );
    expect(announcementsOf(frames, newMac, ON_VIP)).toHaveLength(RFC5227.ANNOUNCE_NUM);
  });

  test('FO-1: announced only after the previous node stopped answering; RFC 5227 count and spacing; an Event on the ARPAdvertisement', async () => {
    rig.maps(0).addAddress(ORDER_VIP);
    let removedAt = 0;
    const frames = await rig.capture(async () => {
      await createAd(ORDER_VIP, names.on);
      // The previous node answers node 1's probes for a while, then its entry goes (what its
      // agent does when its watch sees the move).
      await waitFor(() => (maps!.lookupAddress(ORDER_VIP)?.conflicts ?? 0n) >= 2n, {
        what: "node 0 answered two of node 1's probes",
      });
      removedAt = Date.now();
      expect(rig.maps(0).removeAddress(ORDER_VIP)).toBe(true);
      await bothAnnounced(ORDER_VIP);
    });
    const oldReplies = frames.filter((f) => f.src === oldMac && f.arp?.op === ARP_REPLY && f.arp.sip === ORDER_VIP);
    const probes = frames.filter(
      (f) => f.src === newMac && f.arp?.op === ARP_REQUEST && f.arp.sip === '0.0.0.0' && f.arp.tip === ORDER_VIP,
    );
    const announcements = announcementsOf(frames, newMac, ORDER_VIP);
    expect(oldReplies.length).toBeGreaterThanOrEqual(2);
    expect(announcements).toHaveLength(RFC5227.ANNOUNCE_NUM);
    // The order FO-1 requires: every announcement after the previous node's last answer.
    expect(announcements[0].timeMs).toBeGreaterThan(Math.max(...oldReplies.map((f) => f.timeMs)));
    const spacing = announcements[1].timeMs - announcements[0].timeMs;
    expect(spacing).toBeGreaterThanOrEqual(RFC5227.ANNOUNCE_INTERVAL_MS - 5);
    expect(spacing).toBeLessThan(RFC5227.ANNOUNCE_INTERVAL_MS + 1000);
    process.stdout.write(
      `FO-1: ${probes.length} probes, ${oldReplies.length} answered by the previous node; first announcement ${Math.round(announcements[0].timeMs - removedAt)} ms after its entry went; spacing ${Math.round(spacing)} ms\n`,
    );
    const events = await waitFor(
      async () => {
        const list = await rest.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(
          Resources.events,
          { namespace: 'default' },
        );
        const found = list.items.filter((e) => e.regarding?.name === adName(ORDER_VIP) && e.reason === 'Announced');
        return found.length > 0 && found;
      },
      { what: 'an Announced Event' },
    );
    expect(events[0].note).toContain(`announced it on eth0 (MAC ${newMac})`);
  });

  test('FO-1: counted per address in the pinned map juneau_announce, as kubectl juneau bpf dump announcements shows it', async () => {
    // Runs after the two tests above: ON_VIP was announced at once, ORDER_VIP after node 0's
    // answers stopped, OFF_VIP (announceOnMove off) never.
    /** The rows of `kubectl juneau bpf dump announcements -o json` on node 1. */
    const dumpAnnouncements = async () => {
      const args = [CLI_BIN, 'bpf', 'dump', 'announcements', `--bpffs=${rig.pinDir(1)}`, '-o', 'json'];
      const { stdout } = await execFileAsync(process.execPath, args);
      return JSON.parse(stdout) as Array<{
        address: string;
        probes: number;
        announcements: number;
        gaveUp: number;
        lastAnnouncementSecondsAgo: number | null;
      }>;
    };
    const rows = await dumpAnnouncements();
    const row = (address: string) => rows.find((r) => r.address === address);
    expect(rows.map((r) => r.address).sort()).toEqual([ORDER_VIP, ON_VIP].sort());
    expect(row(ON_VIP)).toMatchObject({ probes: 1, announcements: RFC5227.ANNOUNCE_NUM, gaveUp: 0 });
    // At least the two probes node 0 answered and the one nobody did.
    expect(row(ORDER_VIP)).toMatchObject({ announcements: RFC5227.ANNOUNCE_NUM, gaveUp: 0 });
    expect(row(ORDER_VIP)!.probes).toBeGreaterThanOrEqual(3);
    expect(row(ORDER_VIP)!.lastAnnouncementSecondsAgo).toBeGreaterThanOrEqual(0);
    // The address leaves the node: its counters go with it.
    await rest.delete(JuneauResources.arpAdvertisements, undefined, adName(ON_VIP));
    await waitFor(async () => !(await dumpAnnouncements()).some((r) => r.address === ON_VIP), {
      what: `${ON_VIP} gone from bpf dump announcements`,
    });
  });
});
