// The BIRD configuration renderer (runtime/agent/bgp/bird-config.ts): snapshot of a full decision,
// the properties the SPEC asks of it, and BIRD's own parser (`bird -p`) on every rendered text.
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import {
  birdSymbol,
  renderBirdConfig,
  startingBirdConfig,
  type BirdConfigInput,
} from '../../../runtime/agent/bgp/bird-config';
import { tempDir } from '../temp-dir';
import { thrownMessage } from '../thrown';

const FULL: BirdConfigInput = {
  routerId: '192.0.2.11',
  peers: [
    {
      name: 'tor-b',
      address: '192.0.2.2',
      peerASN: 64512,
      myASN: 64512,
      holdTime: 9,
      keepaliveTime: 3,
      password: 's3cret pass',
      bfd: { minRxMs: 100, minTxMs: 100, multiplier: 3 },
    },
    { name: 'tor-a', address: '192.0.2.1', peerASN: 64513, myASN: 64512 },
    { name: 'router', address: '192.0.2.3', peerASN: 65011, myASN: 64512 },
    { name: 'far', address: '203.0.113.1', peerASN: 65010, myASN: 64512, ebgpMultiHop: true, holdTime: 0 },
  ],
  prefixes: [
    { prefix: '198.51.100.10/32', communities: ['65000:100', 'no-export'], largeCommunities: ['65000:1:2'] },
    { prefix: '198.51.100.11/32', communities: ['no-export', '65000:100'], largeCommunities: ['65000:1:2'] },
    { prefix: '198.51.100.12/32', localPref: 200, peers: ['tor-b'] },
    { prefix: '198.51.100.64/28', peers: ['tor-a', 'far'] },
  ],
};

/** BIRD's own parser on the text (`bird -p` parses the configuration and exits). */
function birdParses(text: string): void {
  const file = path.join(tempDir('bird'), 'bird.conf');
  fs.writeFileSync(file, text);
  execFileSync('bird', ['-p', '-c', file], { stdio: 'pipe' });
}

describe('renderBirdConfig', () => {
  test('a node with four peers (one named like a BIRD keyword) and four prefixes: the snapshot, and bird -p accepts it', () => {
    const text = renderBirdConfig(FULL);
    expect(text).toMatchSnapshot();
    birdParses(text);
  });

  test('the starting configuration (no peers, no prefixes) parses: BIRD can start before the agent decides', () => {
    const text = startingBirdConfig();
    expect(text).not.toMatch(/protocol bgp|router id/);
    birdParses(text);
  });

  test('BGP-8: no kernel protocol, and every BGP channel imports none', () => {
    const text = renderBirdConfig(FULL);
    expect(text).not.toMatch(/protocol kernel/);
    const channels = text.match(/ipv4 \{[^}]*\}/g) ?? [];
    const bgpChannels = channels.filter((c) => c.includes('export filter'));
    expect(bgpChannels).toHaveLength(4);
    for (const c of bgpChannels) expect(c).toContain('import none;');
  });

  test('export: each peer gets exactly its prefixes; attributes grouped; localPref only to the iBGP peer', () => {
    const text = renderBirdConfig(FULL);
    const filter = (peer: string) => text.split(`filter 'peer_${peer}_out' {\n`)[1].split('\n}')[0];
    expect(filter('tor-a')).toBe(
      [
        '  if net ~ [ 198.51.100.64/28 ] then { accept; }',
        '  if net ~ [ 198.51.100.10/32, 198.51.100.11/32 ] then { bgp_community.add((65000,100)); bgp_community.add((65535,65281)); bgp_large_community.add((65000,1,2)); accept; }',
        '  reject;',
      ].join('\n'),
    );
    expect(filter('tor-b')).toContain('if net ~ [ 198.51.100.12/32 ] then { bgp_local_pref = 200; accept; }');
    expect(filter('tor-b')).not.toContain('198.51.100.64/28');
    expect(filter('far')).not.toContain('198.51.100.12/32');
  });

  test('BGP-6: graceful restart on every session; BFD only where asked', () => {
    const text = renderBirdConfig(FULL);
    expect(text.match(/graceful restart on;/g)).toHaveLength(4);
    expect(text.match(/^  bfd \{/gm)).toHaveLength(1);
    expect(text).toContain('protocol bfd juneau_bfd');
    const noBfd = renderBirdConfig({ ...FULL, peers: FULL.peers.filter((p) => !p.bfd), prefixes: [] });
    expect(noBfd).not.toContain('bfd');
  });

  test('the same decision in another order renders the same bytes (configure is then a no-op)', () => {
    const shuffled = { ...FULL, peers: [...FULL.peers].reverse(), prefixes: [...FULL.prefixes].reverse() };
    expect(renderBirdConfig(shuffled)).toBe(renderBirdConfig(FULL));
  });

  test('a long peer name gets a unique symbol within BIRD’s 64 characters, and still parses', () => {
    const long = `${'a'.repeat(60)}.example`;
    const other = `${'a'.repeat(60)}.example2`;
    expect(birdSymbol(long)).not.toBe(birdSymbol(other));
    expect(`${birdSymbol(long)}_out`.length).toBeLessThanOrEqual(64);
    birdParses(
      renderBirdConfig({
        routerId: '192.0.2.11',
        peers: [long, other].map((name, i) => ({ name, address: `192.0.2.${i + 1}`, peerASN: 65000, myASN: 64512 })),
        prefixes: [{ prefix: '198.51.100.1/32' }],
      }),
    );
  });

  test.each([
    [{ routerId: 'node-1' }, "routerId 'node-1' is not an IPv4 address"],
    [{ peers: [{ ...FULL.peers[1], holdTime: 2 }] }, 'peer tor-a: holdTime 2 is neither 0 nor in 3–65535 s'],
    [{ peers: [{ ...FULL.peers[1], keepaliveTime: 90 }] }, 'peer tor-a: keepaliveTime 90 must be a whole number'],
    [{ peers: [{ ...FULL.peers[1], peerASN: 0 }] }, 'peer tor-a: peerASN 0 is not in 1–4294967295'],
    [{ peers: [{ ...FULL.peers[1], password: 'a"b' }] }, 'peer tor-a: password is empty or contains a quote'],
    [{ peers: [{ ...FULL.peers[1], address: '192.0.2.300' }] }, "peer tor-a: address '192.0.2.300'"],
    [{ peers: [{ ...FULL.peers[1], bfd: { minRxMs: 0, minTxMs: 1, multiplier: 3 } }] }, 'peer tor-a: bfd.minRxMs 0'],
    [{ prefixes: [{ prefix: '198.51.100.1' }] }, 'prefix 198.51.100.1: not a CIDR'],
    [{ prefixes: [{ prefix: '198.51.100.1/28' }] }, 'has host bits set'],
    [{ prefixes: [{ prefix: '198.51.100.1/32', communities: ['70000:1'] }] }, "community '70000:1' is neither"],
    [{ prefixes: [{ prefix: '198.51.100.1/32', largeCommunities: ['1:2'] }] }, "large community '1:2' is not"],
    [{ prefixes: [{ prefix: '198.51.100.1/32', peers: ['nobody'] }] }, "peers names 'nobody'"],
  ] as const)('bad input is refused naming the field: %j', (change, message) => {
    const input = { ...FULL, peers: FULL.peers.slice(1, 2), prefixes: [], ...change } as BirdConfigInput;
    expect(thrownMessage(() => renderBirdConfig(input))).toContain(message);
  });
});
