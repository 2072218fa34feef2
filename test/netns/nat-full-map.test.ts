// L11 of the security review: NatMaps.sync on full maps. Every map holds JUNEAU_NAT_MAX entries
// (bindings, reverse entries, counters); the next pass replaces every binding with another. The
// stale reverse entries and counters go before anything is added, so the new bindings find room
// and the maps converge in one pass. The pods' devices are not what this is about: every binding
// is given one device.
import { NatMaps, type NatBinding } from '../../runtime/agent/bpf/nat';
import { NAT_LIMITS } from '../../runtime/agent/bpf/layout';
import { ipv4FromNumber, ipv4ToNumber } from '../../runtime/agent/bpf/addr';
import { describeAsRoot } from './rig';
import { useNatRig } from './nat-rig';

jest.setTimeout(300_000);

/** JUNEAU_NAT_MAX bindings: ElasticIPs from `eipBase` up, to addresses from `podBase` up. */
function bindings(eipBase: string, podBase: string): NatBinding[] {
  const e = ipv4ToNumber(eipBase);
  const p = ipv4ToNumber(podBase);
  return Array.from({ length: NAT_LIMITS.JUNEAU_NAT_MAX }, (_, i) => ({
    elasticIP: ipv4FromNumber(e + i),
    address: ipv4FromNumber(p + i),
  }));
}

describeAsRoot('NatMaps.sync on full maps (SEC-20)', () => {
  const rig = useNatRig();
  let maps: NatMaps;

  beforeAll(async () => {
    await rig.attach();
    maps = NatMaps.openPinned(rig.pinDir, () => ({ ifindex: 1 }));
  }, 60_000);
  afterAll(() => maps?.close());

  test('SEC-20: with every NAT map full, a pass that replaces every binding converges: no stale reverse entry or counter is left', () => {
    const first = bindings('100.64.0.0', '10.128.0.0');
    maps.sync(first);
    expect([maps.inMap.keys().length, maps.outMap.keys().length, maps.countersMap.keys().length]).toEqual([
      NAT_LIMITS.JUNEAU_NAT_MAX,
      NAT_LIMITS.JUNEAU_NAT_MAX,
      NAT_LIMITS.JUNEAU_NAT_MAX,
    ]);
    const second = bindings('100.66.0.0', '10.130.0.0');
    const result = maps.sync(second);
    expect([result.added.length, result.removed.length]).toEqual([
      NAT_LIMITS.JUNEAU_NAT_MAX,
      NAT_LIMITS.JUNEAU_NAT_MAX,
    ]);
    const byEip = (b: NatBinding[]) => new Map(b.map((x) => [x.elasticIP, x.address]));
    expect(byEip(maps.bindings())).toEqual(byEip(second));
    const outKeys = new Set(maps.outMap.keys().map((k) => ipv4FromNumber(k.readUInt32BE(0))));
    expect(outKeys).toEqual(new Set(second.map((b) => b.address)));
    expect(maps.countersMap.keys().length).toBe(NAT_LIMITS.JUNEAU_NAT_MAX);
  });
});
