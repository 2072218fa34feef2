// Upgrading over an older agent's pins when juneau_config became an array of slots (the program
// reads it without a call: bench/README.md). The older map is a hash keyed by ifindex with the
// same key and value sizes: read as the array it would be misread, and libbpf refuses to reuse it.
// It is made here the way libbpf made it (bpftool: hash, 4/32 bytes, 64 entries) and given the
// interface's entry with a heartbeat, so the test does not depend on an old build.
import * as fs from 'node:fs';
import { ArpMaps } from '../../runtime/agent/bpf/arp-maps';
import { monotonicNowNs } from '../../runtime/agent/bpf/clock';
import { CONFIG_TYPE, LIMITS, MAP_NAMES, encodeConfigValue } from '../../runtime/agent/bpf/layout';
import { BpfMap } from '../../runtime/agent/bpf/map';
import { type Rig, CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';
import { pinOlderMap, withArpMaps, withPinnedMap } from './pins';
import { sleep } from '../sleep';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const VIP = `${SUBNET}.54`;

describeAsRoot('upgrade over pins whose juneau_config is a hash keyed by ifindex', () => {
  const rig = useRig(1);
  const withPinned = <T>(use: (map: BpfMap) => T): T => withPinnedMap(rig.pinDir(0), MAP_NAMES.config, use);

  // Opened afresh: rig.maps() keeps the maps it opened first, and the config pin changes here.
  const configs = () => withArpMaps(rig.pinDir(0), (maps) => maps.interfaceConfigs());

  test('OPS-1 FO-2: readers refuse the older config; the upgrade carries its entry (heartbeat kept) into the array while a prober runs, and not one request goes unanswered', async () => {
    const first = await rig.attach(0, { mode: 'generic' });
    rig.maps(0).addAddress(VIP);
    // The pins of an agent before the array: a hash holding the interface's entry.
    const heartbeat = monotonicNowNs();
    pinOlderMap(rig.pinDir(0), {
      name: MAP_NAMES.config,
      type: 'hash',
      key: 4,
      value: 32,
      entries: LIMITS.JUNEAU_CONFIG_MAX,
    });
    const key = Buffer.alloc(4);
    key.writeUInt32LE(first.ifindex);
    const older = { mac: first.mac, guard: true, conflictDetection: false, heartbeatNs: heartbeat, expiryNs: 0n };
    withPinned((map) => map.update(key, encodeConfigValue(older)));
    expect(() => ArpMaps.openPinned(rig.pinDir(0))).toThrow(
      /type 1, this agent expects 2 \(array of slots\).*moves its entries over/,
    );

    const PROBES = 200;
    let second: Awaited<ReturnType<Rig['attach']>> | undefined;
    const frames = await rig.capture(async () => {
      const prober = rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: PROBES, gapMs: 10 }); // ~2 s
      await sleep(300);
      second = await rig.attach(0, { mode: 'auto', conflictDetection: false, answerExpiryMs: 60_000 });
      await prober;
    });
    expect(second!.replacedProgramId).toBe(first.programId);
    expect(second!.adoptedMaps).not.toContain(MAP_NAMES.config);
    expect(withPinned((map) => map.info.type)).toBe(CONFIG_TYPE);
    expect(fs.readdirSync(rig.pinDir(0)).filter((name) => name.includes('older'))).toEqual([]);
    // Carried, not restarted: the older agent's heartbeat stays (FO-2), the new options apply.
    expect(configs()).toEqual(new Map([[first.ifindex, { ...older, expiryNs: 60_000_000_000n }]]));
    expect(frames.filter((f) => f.arp?.op === 1 && f.arp.tip === VIP)).toHaveLength(PROBES);
    expect(repliesFor(frames, VIP)).toHaveLength(PROBES);
  });

  test('a third attach adopts the array as it is', async () => {
    const before = configs();
    const third = await rig.attach(0, { mode: 'auto', conflictDetection: false, answerExpiryMs: 60_000 });
    expect(third.adoptedMaps).toContain(MAP_NAMES.config);
    expect(configs()).toEqual(before);
    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 2 }));
    expect(repliesFor(frames, VIP).map((f) => f.src)).toEqual([third.mac, third.mac]);
  });
});
