// The agent's BGP decision (runtime/agent/bgp/decide.ts) and its BGPNodeState report
// (runtime/agent/bgp/node-state.ts): pure functions of the informers' objects and BIRD's sessions.
import { renderBirdConfig } from '../../../runtime/agent/bgp/bird-config';
import type { BgpSessionState } from '../../../runtime/agent/bgp/birdc';
import { decideBgp, type BgpDecisionInput } from '../../../runtime/agent/bgp/decide';
import { nodeStateStatus } from '../../../runtime/agent/bgp/node-state';

const BASE: BgpDecisionInput = {
  node: { name: 'n1', labels: { rack: 'a' } },
  routerId: '192.0.2.11',
  peers: [
    { name: 'tor', peerAddress: '192.0.2.1', peerASN: 65000, myASN: 64512 },
    {
      name: 'rack-b-only',
      peerAddress: '192.0.2.2',
      peerASN: 65000,
      myASN: 64512,
      nodeSelector: { matchLabels: { rack: 'b' } },
    },
  ],
  advertisements: [{ name: 'ad', externalNetworks: ['wan'], communities: ['65000:100'] }],
  bgpNetworks: new Set(['wan']),
  serviceLoadBalancers: [
    { key: 'a/web', externalNetwork: 'wan', vip: '198.18.0.10', advertisingNodes: ['n1', 'n2'] },
    { key: 'a/elsewhere', externalNetwork: 'wan', vip: '198.18.0.11', advertisingNodes: ['n2'] },
    { key: 'a/arp', externalNetwork: 'lan', vip: '192.0.2.50', advertisingNodes: ['n1'] },
    { key: 'a/pending', externalNetwork: 'wan', advertisingNodes: ['n1'] },
  ],
};

describe('agent BGP decision', () => {
  it('BGP-1, BGP-3: the peers that select the node; the VIPs whose advertisingNodes list it, on bgp networks only', () => {
    const d = decideBgp(BASE);
    expect(d.config.peers.map((p) => p.name)).toEqual(['tor']);
    expect(d.addresses).toEqual([
      { address: '198.18.0.10', prefix: '198.18.0.10/32', peers: ['tor'], owner: 'ServiceLoadBalancer a/web' },
    ]);
    expect(d.config.prefixes).toEqual([
      {
        prefix: '198.18.0.10/32',
        communities: ['65000:100'],
        largeCommunities: undefined,
        localPref: undefined,
        peers: ['tor'],
      },
    ]);
    expect(renderBirdConfig(d.config)).toContain(
      'if net ~ [ 198.18.0.10/32 ] then { bgp_community.add((65000,100)); accept; }',
    );
  });

  it('BGP-5: a node that leaves advertisingNodes withdraws the VIP (nothing exported)', () => {
    const d = decideBgp({
      ...BASE,
      serviceLoadBalancers: [{ key: 'a/web', externalNetwork: 'wan', vip: '198.18.0.10', advertisingNodes: ['n2'] }],
    });
    expect(d.addresses).toEqual([]);
    const text = renderBirdConfig(d.config);
    expect(text).not.toContain('198.18.0.10');
    expect(text).toContain("protocol bgp 'peer_tor'");
  });

  it('BGP-5: a ServiceLoadBalancer being deleted is withdrawn at once, before the controller may release its VIP', () => {
    const d = decideBgp({
      ...BASE,
      serviceLoadBalancers: [
        { key: 'a/web', externalNetwork: 'wan', vip: '198.18.0.10', advertisingNodes: ['n1'], deleting: true },
      ],
    });
    expect(d.addresses).toEqual([]);
  });

  it('BGP-2: no BGPAdvertisement of the network (or none selecting the node) announces nothing; aggregationLength masks the VIP', () => {
    expect(decideBgp({ ...BASE, advertisements: [] }).addresses).toEqual([]);
    expect(
      decideBgp({
        ...BASE,
        advertisements: [{ name: 'ad', externalNetworks: ['wan'], nodeSelector: { matchLabels: { rack: 'b' } } }],
      }).addresses,
    ).toEqual([]);
    const agg = decideBgp({
      ...BASE,
      advertisements: [{ name: 'ad', externalNetworks: ['wan'], aggregationLength: 24 }],
    });
    expect(agg.config.prefixes.map((p) => p.prefix)).toEqual(['198.18.0.0/24']);
  });

  it('BGP-2: spec.peers narrows the peers a VIP goes to', () => {
    const d = decideBgp({
      ...BASE,
      peers: [...BASE.peers, { name: 'tor2', peerAddress: '192.0.2.3', peerASN: 65001, myASN: 64512 }],
      advertisements: [{ name: 'ad', externalNetworks: ['wan'], peers: ['tor2'] }],
    });
    expect(d.config.peers.map((p) => p.name)).toEqual(['tor', 'tor2']);
    expect(d.addresses.map((a) => a.peers)).toEqual([['tor2']]);
  });

  it('BGP-4: the ElasticIPs the NAT maps serve, on bgp networks only, to the peers and with the attributes of their network; gone with the binding', () => {
    const served = [
      { address: '198.18.0.30', externalNetwork: 'wan', owner: 'ElasticIP a/db' },
      { address: '192.0.2.60', externalNetwork: 'lan', owner: 'ElasticIP a/on-arp' },
    ];
    const d = decideBgp({ ...BASE, served: served });
    expect(d.addresses).toEqual([
      { address: '198.18.0.10', prefix: '198.18.0.10/32', peers: ['tor'], owner: 'ServiceLoadBalancer a/web' },
      { address: '198.18.0.30', prefix: '198.18.0.30/32', peers: ['tor'], owner: 'ElasticIP a/db' },
    ]);
    expect(d.config.prefixes.find((p) => p.prefix === '198.18.0.30/32')?.communities).toEqual(['65000:100']);
    expect(decideBgp({ ...BASE, served: [] }).addresses.map((a) => a.owner)).toEqual(['ServiceLoadBalancer a/web']);
    const bad = decideBgp({
      ...BASE,
      served: [{ address: 'x', externalNetwork: 'wan', owner: 'ElasticIP a/bad' }],
    });
    expect(bad.problems).toEqual(["ElasticIP a/bad: status.address 'x' is not an IPv4 address"]);
  });

  it('BGP-1: a peer whose password Secret cannot be read is left out, and said so', () => {
    const d = decideBgp({
      ...BASE,
      peers: [{ ...BASE.peers[0], password: { error: 'Secret juneau-system/pw not found (spec.passwordSecretRef)' } }],
    });
    expect(d.config.peers).toEqual([]);
    expect(d.addresses).toEqual([]);
    expect(d.problems).toEqual(['BGPPeer tor: not peered: Secret juneau-system/pw not found (spec.passwordSecretRef)']);
    const withPassword = decideBgp({ ...BASE, peers: [{ ...BASE.peers[0], password: 'pw1' }] });
    expect(renderBirdConfig(withPassword.config)).toContain('password "pw1";');
  });
});

const session = (peer: string, state: string, extra: Partial<BgpSessionState> = {}): BgpSessionState => ({
  protocol: `peer_${peer}`,
  peer,
  protocolState: state === 'Established' ? 'up' : 'start',
  state,
  info: state,
  prefixesExported: 0,
  prefixesImported: 0,
  ...extra,
});

describe('agent BGPNodeState report', () => {
  const now = new Date('2026-12-02T10:00:00Z');
  const addresses = [
    { address: '198.18.0.10', prefix: '198.18.0.10/32', peers: ['a'], owner: 'x' },
    { address: '198.18.0.11', prefix: '198.18.0.11/32', peers: ['a', 'b'], owner: 'y' },
    { address: '198.18.0.20', prefix: '198.18.0.20/32', peers: ['b'], owner: 'z' },
  ];

  it('BGP-7, BGP-5: per peer state, since, prefixes sent, last error; announced = addresses going to an Established peer, as ranges', () => {
    const since = new Date('2026-12-02T09:59:00Z');
    const status = nodeStateStatus(
      ['b', 'a'],
      [
        session('a', 'Established', { since, prefixesExported: 2 }),
        session('b', 'Active', { lastError: 'Socket: Connection refused' }),
      ],
      addresses,
      undefined,
      now,
    );
    expect(status).toEqual({
      peers: [
        {
          peer: 'a',
          state: 'Established',
          establishedSince: since.toISOString(),
          prefixesSent: 2,
          lastTransitionTime: now.toISOString(),
        },
        {
          peer: 'b',
          state: 'Active',
          prefixesSent: 0,
          lastError: 'Socket: Connection refused',
          lastTransitionTime: now.toISOString(),
        },
      ],
      announced: { count: 2, addresses: ['198.18.0.10-198.18.0.11'] },
    });
  });

  it('BGP-7: an unchanged state keeps its transition time (an unchanged report is identical); a peer BIRD does not know is Idle', () => {
    const first = nodeStateStatus(['a'], [session('a', 'Active')], addresses, undefined, now);
    const later = nodeStateStatus(['a'], [session('a', 'Active')], addresses, first, new Date(now.getTime() + 5000));
    expect(later).toEqual(first);
    const gone = nodeStateStatus(['a'], [], addresses, first, new Date(now.getTime() + 5000));
    expect(gone.peers?.[0].state).toBe('Idle');
    expect(gone.peers?.[0].lastTransitionTime).toBe(new Date(now.getTime() + 5000).toISOString());
    expect(gone.announced).toEqual({ count: 0, addresses: [] });
  });
});
