// FO-2 upgrade: juneau_config grew from 12 to 32 bytes (heartbeat and expiry). An agent of this
// version on a node whose pins an older agent made must still load: the older config pin is
// replaced (the agent rewrites the entry at every attach anyway), with a fresh heartbeat, while
// the table is adopted and answering goes on. The older map is made the way libbpf would have
// made it (bpftool: same type, key and entries, the older value size).
import { monotonicNowNs } from '../../runtime/agent/bpf/clock';
import { CONFIG_VALUE, LIMITS, MAP_NAMES } from '../../runtime/agent/bpf/layout';
import { pinOlderMap, responderMapsBut, withArpMaps, withPinnedMap } from './pins';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

jest.setTimeout(30_000);

const VIP = `${SUBNET}.52`;
const CONFIG_VALUE_BEFORE_FO_2 = 12;

describeAsRoot('FO-2 upgrade over pins whose juneau_config predates the heartbeat', () => {
  const rig = useRig(1);
  const valueSize = () => withPinnedMap(rig.pinDir(0), MAP_NAMES.config, (map) => map.valueSize);

  test('FO-2: the new responder loads, replaces only the config pin (fresh heartbeat, the expiry set), adopts the table and keeps answering', async () => {
    const first = await rig.attach(0, { mode: 'generic' });
    withArpMaps(rig.pinDir(0), (maps) => maps.addAddress(VIP));
    pinOlderMap(rig.pinDir(0), {
      name: MAP_NAMES.config,
      type: 'hash',
      key: 4,
      value: CONFIG_VALUE_BEFORE_FO_2,
      entries: LIMITS.JUNEAU_CONFIG_MAX,
    });
    expect(valueSize()).toBe(CONFIG_VALUE_BEFORE_FO_2);

    const before = monotonicNowNs();
    const second = await rig.attach(0, { mode: 'auto', answerExpiryMs: 5_000 });
    expect(second.replacedProgramId).toBe(first.programId);
    expect(second.adoptedMaps.sort()).toEqual(responderMapsBut(MAP_NAMES.config));
    expect(valueSize()).toBe(CONFIG_VALUE.size);
    const config = rig.maps(0).interfaceConfig(second.ifindex)!;
    expect(config.expiryNs).toBe(5_000_000_000n);
    expect(config.heartbeatNs).toBeGreaterThanOrEqual(before);
    expect([...rig.maps(0).addresses().keys()]).toEqual([VIP]);

    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 2 }));
    expect(repliesFor(frames, VIP).map((f) => f.src)).toEqual([first.mac, first.mac]);
  });
});
