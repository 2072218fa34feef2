// The pin policy of runtime/agent/bpf/pins.ts for the NAT programs: juneau_nat_skip is state
// (NAT-2: the destinations that keep the pod address), so a pin of another size (256 prefixes,
// made with bpftool as libbpf makes a map) has its prefixes carried into the new map before the
// new programs replace the old ones, and in-cluster traffic keeps the pod address throughout.
import { encodeGuardKey, NAT_LIMITS, NAT_MAP_NAMES, NAT_SKIP_VALUE, NAT_VALUE } from '../../runtime/agent/bpf/layout';
import { parseIpv4 } from './ipv4';
import type { BpfMap } from '../../runtime/agent/bpf/map';
import { pinMapOfShape, withPinnedMap } from './pins';
import { EIP, POD, ROUTER_EXT, useNatRig } from './nat-rig';
import { describeAsRoot } from './rig';

jest.setTimeout(60_000);

const SKIP_BEFORE = 256;

describeAsRoot('attach over a juneau_nat_skip pin of 256 prefixes (pins.ts PIN_POLICY)', () => {
  const rig = useNatRig();
  const pinned = <T>(use: (map: BpfMap) => T): T => withPinnedMap(rig.pinDir, NAT_MAP_NAMES.skip, use);

  test('NAT-2, NAT-4: the new programs load, the skip map grows, the old prefixes are carried over, and a destination among them keeps the pod address', async () => {
    const first = await rig.attach();
    pinMapOfShape(rig.pinDir, {
      name: NAT_MAP_NAMES.skip,
      type: 'lpm_trie',
      key: 8,
      value: NAT_SKIP_VALUE.size,
      entries: SKIP_BEFORE,
      flags: 1, // BPF_F_NO_PREALLOC, as the program declares it (an LPM trie requires it)
    });
    const routerKey = encodeGuardKey({ address: ROUTER_EXT, prefixLength: 32 });
    pinned((map) => map.update(routerKey, Buffer.alloc(NAT_SKIP_VALUE.size)));
    expect(pinned((map) => map.info.maxEntries)).toBe(SKIP_BEFORE);

    const second = await rig.attach();
    expect(second.filters.out).not.toBe(0);
    expect(second.filters.out).not.toBe(first.filters.out);
    expect(pinned((map) => map.info.maxEntries)).toBe(NAT_LIMITS.JUNEAU_NAT_SKIP_MAX);
    expect(pinned((map) => map.keys().map((k) => k.toString('hex')))).toEqual([routerKey.toString('hex')]);

    rig.maps().sync([{ elasticIP: EIP, address: POD }]);
    const atRouter = await rig.capture(
      rig.router,
      'r0',
      async () => {
        await rig.tool(rig.pod, 'udp-raw', POD, ROUTER_EXT, '7000', '7001', '5', 'csum', '1');
      },
      ['udp', 'and', 'port', '7001'],
    );
    expect(atRouter.map((f) => parseIpv4(f)?.src)).toEqual([POD]);
  });
});

describeAsRoot('attach over NAT binding pins of the layout before the pods’ devices (pins.ts PIN_POLICY)', () => {
  const rig = useNatRig();
  const addr = (a: string) => Buffer.from(a.split('.').map(Number));

  test('SEC-1, NAT-4: the bindings of 4-byte values are carried with the pod device resolved at the upgrade, and translation goes on', async () => {
    await rig.attach();
    for (const name of [NAT_MAP_NAMES.in, NAT_MAP_NAMES.out]) {
      pinMapOfShape(rig.pinDir, { name, type: 'hash', key: 4, value: 4, entries: NAT_LIMITS.JUNEAU_NAT_MAX });
    }
    withPinnedMap(rig.pinDir, NAT_MAP_NAMES.in, (map) => map.update(addr(EIP), addr(POD)));
    withPinnedMap(rig.pinDir, NAT_MAP_NAMES.out, (map) => map.update(addr(POD), addr(EIP)));

    await rig.attach();
    expect(withPinnedMap(rig.pinDir, NAT_MAP_NAMES.in, (map) => map.valueSize)).toBe(NAT_VALUE.size);
    const pod0 = await rig.nodeIfindex('pod0');
    expect(rig.maps().devices('nat')).toEqual([{ elasticIP: EIP, address: POD, device: { ifindex: pod0 } }]);
    expect(await rig.tool(rig.router, 'ping', EIP, '1')).toEqual({ replies: [EIP] });
  });
});
