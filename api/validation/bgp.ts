/**
 * BGP-1, BGP-2, BGP-9: the rules of BGPPeers and BGPAdvertisements, pure. The per-field ones
 * repeat the CRDs' CEL (so a construct refuses at synth time what the API server would refuse);
 * the cross-object ones are what CEL cannot reach, shared by the constructs and the webhooks:
 * a peer address inside an AddressPool, localPref on an eBGP-only advertisement, an advertised
 * network that is not `bgp`.
 */
import { COMMUNITY_PATTERN, LARGE_COMMUNITY_PATTERN, type BGPAdvertisement } from '../kinds/bgp-advertisement';
import { ASN_RANGE, DEFAULT_HOLD_TIME_SECONDS, type BGPPeer } from '../kinds/bgp-peer';
import { parseIPv4 } from './ipv4';
import { parsePoolAddresses, rangesContain } from './address-pool';
import { issue, type ValidationIssue } from './issue';
import { checkObjectName } from './names';
import type { NetworkView, PoolView } from './external-network';

/** The parts of a BGPPeer the rules read. */
export type PeerView = { readonly name: string } & Pick<
  BGPPeer['spec'],
  'peerAddress' | 'peerASN' | 'myASN' | 'holdTime' | 'keepaliveTime' | 'ebgpMultiHop' | 'bfd' | 'nodeSelector'
>;

/** The parts of a BGPAdvertisement the rules read. */
export type AdvertisementView = { readonly name: string } & BGPAdvertisement['spec'];

interface Named {
  readonly metadata?: { readonly name?: string };
}

/** The PeerView of a BGPPeer, read defensively (an admission request's object is whatever was sent). */
export const peerView = (p: Named & { readonly spec: BGPPeer['spec'] }, name = p.metadata?.name ?? ''): PeerView => ({
  ...(p.spec ?? {}),
  name,
});

/** The AdvertisementView of a BGPAdvertisement (see peerView). */
export const advertisementView = (
  a: Named & { readonly spec: BGPAdvertisement['spec'] },
  name = a.metadata?.name ?? '',
): AdvertisementView => ({ ...(a.spec ?? {}), externalNetworks: a.spec?.externalNetworks ?? [], name });

/** BGP-1: eBGP when the two AS numbers differ. */
export const isEBGP = (peer: Pick<PeerView, 'peerASN' | 'myASN'>): boolean => peer.peerASN !== peer.myASN;

const isASN = (n: unknown): boolean =>
  Number.isInteger(n) && (n as number) >= ASN_RANGE.minimum && (n as number) <= ASN_RANGE.maximum;
const inRange = (n: unknown, min: number, max: number): boolean =>
  Number.isInteger(n) && (n as number) >= min && (n as number) <= max;

/** BGP-1, BGP-9: a BGPPeer's own fields (what its CEL checks). */
export function checkPeerSpec(peer: PeerView): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (typeof peer.peerAddress !== 'string' || parseIPv4(peer.peerAddress) === undefined)
    issues.push(issue('spec.peerAddress', peer.peerAddress, 'is not an IPv4 address (BGP-1, BGP-9)'));
  for (const field of ['peerASN', 'myASN'] as const)
    if (!isASN(peer[field]))
      issues.push(issue(`spec.${field}`, peer[field], 'is not an AS number 1-4294967295 (BGP-9)'));
  const hold = peer.holdTime ?? DEFAULT_HOLD_TIME_SECONDS;
  if (peer.holdTime !== undefined && !(peer.holdTime === 0 || inRange(peer.holdTime, 3, 65535)))
    issues.push(issue('spec.holdTime', peer.holdTime, 'must be 0 or 3-65535 seconds (BGP-1)'));
  const keepalive = peer.keepaliveTime;
  if (keepalive !== undefined && !(hold === 0 ? keepalive === 0 : inRange(keepalive, 1, hold - 1)))
    issues.push(
      issue(
        'spec.keepaliveTime',
        keepalive,
        hold === 0
          ? 'must be 0 when spec.holdTime is 0 (BGP-1)'
          : `must be at least 1 and less than spec.holdTime (${hold}) (BGP-1)`,
      ),
    );
  if (peer.ebgpMultiHop && !isEBGP(peer))
    issues.push(
      issue('spec.ebgpMultiHop', true, `is for eBGP sessions only, and peerASN equals myASN (${peer.myASN}) (BGP-1)`),
    );
  const bfd = peer.bfd;
  if (bfd) {
    for (const field of ['receiveInterval', 'transmitInterval'] as const)
      if (bfd[field] !== undefined && !inRange(bfd[field], 10, 60000))
        issues.push(issue(`spec.bfd.${field}`, bfd[field], 'must be 10-60000 ms (BGP-1)'));
    if (bfd.detectMultiplier !== undefined && !inRange(bfd.detectMultiplier, 2, 255))
      issues.push(issue('spec.bfd.detectMultiplier', bfd.detectMultiplier, 'must be 2-255 (BGP-1)'));
  }
  return issues;
}

/** BGP-9: a peer address inside an AddressPool could be handed out as a VIP or an ElasticIP. */
export function checkPeerAddressOutsidePools(peer: PeerView, pools: readonly PoolView[]): ValidationIssue[] {
  const address = parseIPv4(peer.peerAddress ?? '');
  if (address === undefined) return [];
  return pools
    .filter((p) => rangesContain(parsePoolAddresses(p).ranges, address))
    .map((p) =>
      issue(
        'spec.peerAddress',
        peer.peerAddress,
        `is inside AddressPool ${p.name} (${p.addresses.join(', ')}), which hands out its addresses; a BGP neighbour must be outside every pool (BGP-9)`,
      ),
    );
}

const COMMUNITY = new RegExp(COMMUNITY_PATTERN);
const LARGE_COMMUNITY = new RegExp(LARGE_COMMUNITY_PATTERN);

/** BGP-2, BGP-9: a BGPAdvertisement's own fields (what its CEL checks). */
export function checkAdvertisementSpec(ad: AdvertisementView): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (!ad.externalNetworks?.length)
    issues.push(
      issue(
        'spec.externalNetworks',
        undefined,
        `of BGPAdvertisement ${ad.name} must name at least one bgp ExternalNetwork (BGP-2)`,
      ),
    );
  (ad.externalNetworks ?? []).forEach((n, i) => issues.push(...checkObjectName(`spec.externalNetworks[${i}]`, n)));
  (ad.peers ?? []).forEach((n, i) => issues.push(...checkObjectName(`spec.peers[${i}]`, n)));
  (ad.communities ?? []).forEach((c, i) => {
    const ok = COMMUNITY.test(c) && (!c.includes(':') || c.split(':').every((p) => Number(p) <= 65535));
    if (!ok)
      issues.push(
        issue(
          `spec.communities[${i}]`,
          c,
          'is not a community: two numbers 0-65535 (65000:100) or a well-known name such as no-export (BGP-2, BGP-9)',
        ),
      );
  });
  (ad.largeCommunities ?? []).forEach((c, i) => {
    const ok = LARGE_COMMUNITY.test(c) && c.split(':').every((p) => Number(p) <= 4294967295);
    if (!ok)
      issues.push(
        issue(
          `spec.largeCommunities[${i}]`,
          c,
          'is not a large community: three numbers 0-4294967295 (65000:1:2) (BGP-2, BGP-9)',
        ),
      );
  });
  if (ad.localPref !== undefined && !inRange(ad.localPref, 0, 4294967295))
    issues.push(issue('spec.localPref', ad.localPref, 'must be 0-4294967295 (BGP-2)'));
  if (ad.aggregationLength !== undefined && !inRange(ad.aggregationLength, 0, 32))
    issues.push(issue('spec.aggregationLength', ad.aggregationLength, 'must be 0-32 (BGP-2)'));
  return issues;
}

/** BGP-9: every network an advertisement names that exists must be of type bgp. */
export function checkAdvertisedNetworks(
  ad: AdvertisementView,
  networks: ReadonlyMap<string, Pick<NetworkView, 'name' | 'type'>>,
): ValidationIssue[] {
  return ad.externalNetworks.flatMap((name, i) => {
    const network = networks.get(name);
    return network && network.type !== 'bgp'
      ? [
          issue(
            `spec.externalNetworks[${i}]`,
            name,
            `is an ExternalNetwork of type ${network.type}; a BGPAdvertisement announces type bgp networks only (BGP-9)`,
          ),
        ]
      : [];
  });
}

/** BGP-2: the peers an advertisement announces to: those it names that exist, or every peer. */
export function advertisedPeers<P extends { readonly name: string }>(
  ad: Pick<AdvertisementView, 'peers'>,
  peers: readonly P[],
): P[] {
  return ad.peers?.length ? peers.filter((p) => ad.peers!.includes(p.name)) : [...peers];
}

/**
 * BGP-2, BGP-9: LOCAL_PREF is an iBGP attribute, so `localPref` on an advertisement whose peers
 * (the named ones that exist, or every peer) are all eBGP would never reach anyone.
 */
export function checkLocalPref(ad: AdvertisementView, peers: readonly PeerView[]): ValidationIssue[] {
  if (ad.localPref === undefined) return [];
  const selected = advertisedPeers(ad, peers);
  if (selected.length === 0 || selected.some((p) => !isEBGP(p))) return [];
  const named = selected.map((p) => `${p.name} (peerASN ${p.peerASN}, myASN ${p.myASN})`).join(', ');
  return [
    issue(
      'spec.localPref',
      ad.localPref,
      `is sent to iBGP peers only, and every BGPPeer of BGPAdvertisement ${ad.name} is eBGP: ${named}; remove localPref or add an iBGP peer (BGP-2, BGP-9)`,
    ),
  ];
}
