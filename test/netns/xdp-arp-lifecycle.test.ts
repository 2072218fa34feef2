// Lifecycle of the responder: pinned program and maps outlive their loader, a new loader adopts
// them and swaps the program without a gap; native mode; detach.
import { sleep } from '../sleep';
import { CLIENT_IP, type Rig, SUBNET, XDP_PASS_OBJECT, describeAsRoot, repliesFor, useRig } from './rig';
import { programPinPath } from '../../runtime/agent/bpf/responder';
import * as fs from 'node:fs';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const VIP = `${SUBNET}.50`;

describeAsRoot('responder lifecycle: pinning, adoption, replacement without a gap', () => {
  const rig = useRig(1);

  test('OPS-1: program and maps survive the loading process exiting, and answering goes on', async () => {
    const first = await rig.attach(0, { mode: 'generic' }); // that process has exited now
    expect(first.adoptedMaps).toEqual([]);
    expect(await rig.xdpProgramId(0)).toBe(first.programId);
    expect(fs.existsSync(programPinPath(rig.pinDir(0), first.ifindex))).toBe(true);
    rig.maps(0).addAddress(VIP);
    expect(await rig.resolveFresh(VIP)).toBe(first.mac);
  });

  test('OPS-1 EN-11: a new loader adopts the pinned maps and replaces the program while a prober runs, and not one request goes unanswered', async () => {
    const programBefore = await rig.xdpProgramId(0);
    const entryBefore = rig.maps(0).lookupAddress(VIP)!;
    const PROBES = 400;
    let second: Awaited<ReturnType<Rig['attach']>> | undefined;
    const frames = await rig.capture(async () => {
      const prober = rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: PROBES, gapMs: 10 }); // ~4 s
      await sleep(300);
      second = await rig.attach(0, { mode: 'auto' }); // auto keeps the adopted generic mode
      await prober;
    });
    expect(second!.replacedProgramId).toBe(programBefore);
    expect(second!.programId).not.toBe(programBefore);
    expect(second!.mode).toBe('generic');
    expect(second!.adoptedMaps.sort()).toEqual([
      'external_arp_table',
      'juneau_arp_class',
      'juneau_arp_counters',
      'juneau_arp_filter',
      'juneau_arp_slots',
      'juneau_config',
      'juneau_guard',
      'juneau_stats',
    ]);
    expect(await rig.xdpProgramId(0)).toBe(second!.programId);

    const requests = frames.filter((f) => f.arp?.op === 1 && f.arp.tip === VIP);
    expect(requests).toHaveLength(PROBES);
    expect(repliesFor(frames, VIP)).toHaveLength(PROBES);
    // The entry was adopted, not recreated: its counters carried on.
    const entryAfter = rig.maps(0).lookupAddress(VIP)!;
    expect(entryAfter.replies - entryBefore.replies).toBe(BigInt(PROBES));
  }, 30_000);

  test('a loader asked for another mode than the running one refuses instead of detaching (no gap)', async () => {
    await expect(rig.attach(0, { mode: 'native' })).rejects.toThrow(/generic mode, native was asked/);
    expect(await rig.resolveFresh(VIP)).toBe(await rig.mac(rig.node(0), 'eth0'));
  });

  test('detach removes the responder and its program pin; the maps stay pinned; the address is no longer answered', async () => {
    const ifindex = (await rig.attach(0)).ifindex;
    expect(await rig.detach(0)).toBe(true);
    expect(await rig.xdpProgramId(0)).toBe(0);
    expect(fs.existsSync(programPinPath(rig.pinDir(0), ifindex))).toBe(false);
    expect(rig.maps(0).lookupAddress(VIP)).toBeDefined();
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 3 }));
    expect(repliesFor(frames, VIP)).toEqual([]);
    expect(await rig.detach(0)).toBe(false);
  });

  test('native XDP on a veth whose peer runs an XDP program answers, and the mode is reported', async () => {
    // A veth drops native XDP_TX frames unless its peer runs XDP: give the bridge port a no-op.
    await rig.attachObject(rig.client, rig.port(0), XDP_PASS_OBJECT, 'xdp_pass', 'native');
    const attached = await rig.attach(0, { mode: 'auto' });
    expect(attached.mode).toBe('native');
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 10 }));
    const replies = repliesFor(frames, VIP);
    expect(replies).toHaveLength(10);
    expect(new Set(replies.map((f) => f.src))).toEqual(new Set([attached.mac]));
  });
});
