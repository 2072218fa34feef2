// juneau_config as an array of slots (bpf/juneau_maps.h): an interface's entry goes to the first
// free slot of its probes, the program finds it there, and an entry of another interface in the
// same slot is never taken for the ingress interface's.
import { configSlot, LIMITS } from '../../runtime/agent/bpf/layout';
import { CLIENT_IP, SUBNET, describeAsRoot, repliesFor, useRig } from './rig';

// Real namespaces, processes and captures: generous on a loaded 2-CPU CI machine.
jest.setTimeout(30_000);

const VIP = `${SUBNET}.55`;
const FOREIGN_MAC = '02:00:00:00:0f:0f';

describeAsRoot('juneau_config slots', () => {
  const rig = useRig(1);

  test('ARP-10 EN-11: an interface whose first slot another interface holds is answered from its next slot, with its own MAC', async () => {
    const { ifindex, mac } = await rig.attach(0, { mode: 'generic' });
    const maps = rig.maps(0);
    maps.addAddress(VIP);
    const own = maps.interfaceConfig(ifindex)!;
    // Another interface whose first probe is ifindex's first slot takes it; ifindex moves on.
    const other = ifindex + LIMITS.JUNEAU_CONFIG_MAX;
    expect(configSlot(other, 0)).toBe(configSlot(ifindex, 0));
    expect(maps.removeInterfaceConfig(ifindex)).toBe(true);
    expect(maps.removeInterfaceConfig(ifindex)).toBe(false);
    const silent = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 2 }));
    expect(repliesFor(silent, VIP)).toEqual([]); // no entry: not ours, the kernel decides
    maps.setInterfaceConfig(other, { mac: FOREIGN_MAC, guard: true, conflictDetection: true });
    const foreignOnly = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 2 }));
    expect(repliesFor(foreignOnly, VIP)).toEqual([]); // the slot's entry is another interface's
    maps.setInterfaceConfig(ifindex, own);
    expect(maps.interfaceConfigs()).toEqual(
      new Map([
        [
          other,
          { mac: FOREIGN_MAC, guard: true, conflictDetection: true, heartbeatNs: 0n, expiryNs: 0n, orphanExpiries: 0 },
        ],
        [ifindex, own],
      ]),
    );

    const frames = await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 3 }));
    expect(repliesFor(frames, VIP).map((f) => f.src)).toEqual([mac, mac, mac]);
    expect(maps.stats().JUNEAU_PASS_NO_CONFIG).toBe(4n);
  });

  test('an interface whose probes are all held gets an error naming them, and nothing is written', () => {
    const maps = rig.maps(0);
    // `base` whose probes (slots base .. base+3) are clear of every slot the entries already here
    // may hold (the rig's interface and the first test's `other`): the kernel hands out ifindexes,
    // so those can be anywhere in the array.
    const probesOf = (i: number) => Array.from({ length: LIMITS.JUNEAU_CONFIG_PROBES }, (_, p) => configSlot(i, p));
    const held = new Set([...maps.interfaceConfigs().keys()].flatMap(probesOf));
    const base = Array.from({ length: LIMITS.JUNEAU_CONFIG_MAX }, (_, i) => i + 1).find((i) =>
      probesOf(i).every((slot) => !held.has(slot)),
    )!;
    // Fill the probes of `base` (slots base .. base+3) with interfaces that are not `base`.
    const fillers = Array.from({ length: LIMITS.JUNEAU_CONFIG_PROBES }, (_, p) => base + p + LIMITS.JUNEAU_CONFIG_MAX);
    for (const f of fillers) maps.setInterfaceConfig(f, { mac: FOREIGN_MAC, guard: true, conflictDetection: true });
    const before = maps.interfaceConfigs();
    expect(() => maps.setInterfaceConfig(base, { mac: FOREIGN_MAC, guard: true, conflictDetection: true })).toThrow(
      new RegExp(`no free slot for ifindex ${base}: its 4 slots hold ifindexes ${fillers.join(', ')}`),
    );
    expect(maps.interfaceConfigs()).toEqual(before);
  });
});
