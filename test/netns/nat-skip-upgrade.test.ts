// Upgrading over an older agent's pins when juneau_nat_skip grew (256 -> 16384 prefixes, so the
// agent can hold a node address per Node: NAT-2 learned from the API). libbpf refuses to reuse a
// pinned map of another size; the new loader unpins the old one and carries its prefixes into the
// new map before its programs replace the old ones, so in-cluster traffic keeps the pod address
// through the upgrade. The older map is made here as libbpf would have made it (bpftool: same
// type, key, value and flags, 256 entries), so the test does not depend on an old build.
import { encodeGuardKey, NAT_LIMITS, NAT_MAP_NAMES, NAT_SKIP_VALUE } from '../../runtime/agent/bpf/layout';
import { parseIpv4 } from './ipv4';
import type { BpfMap } from '../../runtime/agent/bpf/map';
import { pinOlderMap, withPinnedMap } from './pins';
import { EIP, POD, ROUTER_EXT, useNatRig } from './nat-rig';
import { describeAsRoot } from './rig';

jest.setTimeout(60_000);

const SKIP_BEFORE = 256;

describeAsRoot('upgrade over a juneau_nat_skip pin of 256 prefixes', () => {
  const rig = useNatRig();
  const pinned = <T>(use: (map: BpfMap) => T): T => withPinnedMap(rig.pinDir, NAT_MAP_NAMES.skip, use);

  test('NAT-2, NAT-4: the new programs load, the skip map grows, the old prefixes are carried over, and a destination among them keeps the pod address', async () => {
    const first = await rig.attach();
    pinOlderMap(rig.pinDir, {
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
