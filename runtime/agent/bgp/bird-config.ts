/**
 * The BIRD 2 configuration of one node, rendered from what the agent decided (docs/bgp.md). Pure:
 * the same input gives the same text, byte for byte, so `birdc configure` after an unchanged
 * decision is a no-op and a snapshot test pins the output.
 *
 * What it says, and why (SPEC "BGP mode"):
 * - BGP-8: every BGP channel has `import none`, and there is no `kernel` protocol at all, so
 *   nothing a peer sends can reach the node's FIB (BIRD installs routes only through `kernel`).
 * - Export exactly the decided prefixes: they are `unreachable` routes of one `static` protocol
 *   (they never leave BIRD: no kernel protocol), and each peer's export filter accepts the prefixes
 *   allowed to that peer, setting their communities, and reject everything else.
 * - BGP-6: graceful restart on every session, so a BIRD restart keeps the router's routes for the
 *   restart time; an agent restart does not touch BIRD at all (its own container).
 * - BFD per peer when asked: `bfd { … }` options on the session (BIRD 2.0.12 accepts them).
 */
import { createHash } from 'node:crypto';
import { isIpv4 } from '../bpf/addr';
import { parsePoolItem } from '../bpf/prefixes';

/** BFD timers of one session (BGP-1 `spec.bfd`). */
export interface BirdBfd {
  /** Minimum receive interval, ms. */
  readonly minRxMs: number;
  /** Minimum transmit interval, ms. */
  readonly minTxMs: number;
  /** Detect multiplier: missed packets before the session is down. */
  readonly multiplier: number;
}

/** One BGP neighbour of this node (a BGPPeer that selects it, BGP-1). */
export interface BirdPeer {
  /** The BGPPeer's name; the protocol's name in BIRD (`birdSymbol`). */
  readonly name: string;
  readonly address: string;
  readonly peerASN: number;
  readonly myASN: number;
  /** Seconds; 0 (no keepalives) or 3–65535. @default 90 */
  readonly holdTime?: number;
  /** Seconds, less than the hold time. @default a third of the hold time */
  readonly keepaliveTime?: number;
  /** TCP MD5 password (from `spec.passwordSecretRef`). @default none */
  readonly password?: string;
  /** @default false (the peer must be on a directly connected subnet) */
  readonly ebgpMultiHop?: boolean;
  /** @default undefined (no BFD) */
  readonly bfd?: BirdBfd;
  /** Seconds the peer keeps our routes while BIRD restarts (BGP-6). @default 120 */
  readonly gracefulRestartTime?: number;
}

/** One prefix to announce: a VIP or ElasticIP as a /32, or an aggregate (`aggregationLength`). */
export interface BirdPrefix {
  /** `a.b.c.d/n`, no host bits set. */
  readonly prefix: string;
  /** `65000:100` or a well-known name (`no-export`, …). @default [] */
  readonly communities?: readonly string[];
  /** `65000:1:2`. @default [] */
  readonly largeCommunities?: readonly string[];
  /** Sent to iBGP peers only (ignored for eBGP ones, BGP-9 refuses it on eBGP-only advertisements). */
  readonly localPref?: number;
  /** Names of the peers that may receive it. @default every peer */
  readonly peers?: readonly string[];
}

export interface BirdConfigInput {
  /** The node's address: BIRD's router id. @default BIRD picks the lowest IPv4 address of the
   * node's interfaces (only the starting configuration, which has no peers, leaves it out) */
  readonly routerId?: string;
  readonly peers: readonly BirdPeer[];
  readonly prefixes: readonly BirdPrefix[];
}

export const DEFAULT_HOLD_TIME = 90;
export const DEFAULT_GRACEFUL_RESTART_TIME = 120;
/** BIRD's symbols are at most 64 characters (SYM_MAX_LEN); a peer's filter adds `_out` to its symbol. */
const MAX_PEER_SYMBOL = 60;

/** RFC 1997 / IANA well-known communities, by the names users write. */
const WELL_KNOWN_COMMUNITIES: Readonly<Record<string, readonly [number, number]>> = {
  'graceful-shutdown': [65535, 0],
  'accept-own': [65535, 1],
  blackhole: [65535, 666],
  'no-export': [65535, 65281],
  'no-advertise': [65535, 65282],
  'no-export-subconfed': [65535, 65283],
  'local-as': [65535, 65283],
  'no-peer': [65535, 65284],
};

/** The BIRD protocol name of a peer: `peer_` and its name (a bare name can be a BIRD keyword, such
 * as `router`, even quoted), shortened with a hash when too long. Unique: Kubernetes names never
 * contain `_`, and every internal symbol here starts with `juneau_`. */
export function birdSymbol(peerName: string): string {
  const symbol = `peer_${peerName}`;
  if (symbol.length <= MAX_PEER_SYMBOL) return symbol;
  const hash = createHash('sha256').update(peerName).digest('hex').slice(0, 8);
  return `${symbol.slice(0, MAX_PEER_SYMBOL - 9)}-${hash}`;
}

/** The whole bird.conf for the input; throws naming the peer or prefix and field when a value
 * cannot be rendered (the API's validation should have refused it, BGP-9). */
export function renderBirdConfig(input: BirdConfigInput): string {
  if (input.routerId !== undefined && !isIpv4(input.routerId))
    throw new Error(`routerId '${input.routerId}' is not an IPv4 address`);
  const peers = [...input.peers].sort((a, b) => compare(a.name, b.name));
  checkPeers(peers);
  const prefixes = normalisePrefixes(input.prefixes, new Set(peers.map((p) => p.name)));
  const lines = [
    '# Rendered by the juneau agent (runtime/agent/bgp/bird-config.ts); do not edit, it is overwritten.',
    ...(input.routerId !== undefined ? [`router id ${input.routerId};`] : []),
    'timeformat protocol "%FT%T%z";',
    '# BIRD runs in the foreground in its own container: its log is the container log.',
    'log stderr { info, remote, warning, error, auth, fatal, bug };',
    '',
    '# Interfaces only (no routes): BGP needs them to reach directly connected peers.',
    'protocol device juneau_device {',
    '  scan time 10;',
    '}',
    '',
    ...(peers.some((p) => p.bfd)
      ? ['# BFD sessions for the peers that ask (their bfd { } options).', 'protocol bfd juneau_bfd {', '}', '']
      : []),
    // BGP-8 (the ID stays out of the text: every ID in a string needs a docs anchor).
    '# Nothing learnt from a peer reaches this node: no kernel protocol; every BGP channel imports none.',
    '# The decided prefixes: unreachable routes that never leave BIRD.',
    'protocol static juneau_routes {',
    '  ipv4 { import all; export none; };',
    ...[...new Set(prefixes.map((p) => p.prefix))].map((p) => `  route ${p} unreachable;`),
    '}',
  ];
  for (const peer of peers) lines.push('', ...exportFilter(peer, prefixes), '', ...bgpProtocol(peer));
  return `${lines.join('\n')}\n`;
}

function checkPeers(peers: readonly BirdPeer[]): void {
  const seen = new Map<string, string>();
  for (const peer of peers) {
    const where = `peer ${peer.name}`;
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(peer.name)) throw new Error(`${where}: name is not a Kubernetes name`);
    const symbol = birdSymbol(peer.name);
    const other = seen.get(symbol);
    if (other !== undefined) throw new Error(`${where}: name maps to BIRD symbol '${symbol}' as peer ${other} does`);
    seen.set(symbol, peer.name);
    if (!isIpv4(peer.address)) throw new Error(`${where}: address '${peer.address}' is not an IPv4 address`);
    for (const field of ['peerASN', 'myASN'] as const) {
      const asn = peer[field];
      if (!Number.isInteger(asn) || asn < 1 || asn > 4294967295)
        throw new Error(`${where}: ${field} ${asn} is not in 1–4294967295`);
    }
    const hold = peer.holdTime ?? DEFAULT_HOLD_TIME;
    if (!Number.isInteger(hold) || (hold !== 0 && (hold < 3 || hold > 65535)))
      throw new Error(`${where}: holdTime ${hold} is neither 0 nor in 3–65535 s`);
    const keepalive = peer.keepaliveTime;
    if (keepalive !== undefined && (!Number.isInteger(keepalive) || keepalive < 1 || (hold > 0 && keepalive >= hold)))
      throw new Error(`${where}: keepaliveTime ${keepalive} must be a whole number of seconds below holdTime ${hold}`);
    // BIRD's lexer has no escapes in strings: a quote or newline would end the string early.
    if (peer.password !== undefined && (peer.password === '' || /["\n\r\\]/.test(peer.password)))
      throw new Error(`${where}: password is empty or contains a quote, a backslash or a newline`);
    if (peer.bfd) {
      for (const field of ['minRxMs', 'minTxMs', 'multiplier'] as const) {
        const value = peer.bfd[field];
        if (!Number.isInteger(value) || value < 1)
          throw new Error(`${where}: bfd.${field} ${value} is not a positive integer`);
      }
      if (peer.bfd.multiplier > 255) throw new Error(`${where}: bfd.multiplier ${peer.bfd.multiplier} is above 255`);
    }
  }
}

interface NormalPrefix {
  readonly prefix: string;
  readonly communities: readonly string[];
  readonly largeCommunities: readonly string[];
  readonly localPref?: number;
  readonly peers?: ReadonlySet<string>;
}

function normalisePrefixes(prefixes: readonly BirdPrefix[], peerNames: ReadonlySet<string>): NormalPrefix[] {
  return prefixes
    .map((p) => {
      const where = `prefix ${p.prefix}`;
      if (!p.prefix.includes('/')) throw new Error(`${where}: not a CIDR a.b.c.d/n`);
      parsePoolItem(p.prefix); // throws naming the prefix: bad address, length or host bits
      for (const name of p.peers ?? [])
        if (!peerNames.has(name)) throw new Error(`${where}: peers names '${name}', which is not a peer of this node`);
      if (p.localPref !== undefined && (!Number.isInteger(p.localPref) || p.localPref < 0 || p.localPref > 4294967295))
        throw new Error(`${where}: localPref ${p.localPref} is not in 0–4294967295`);
      return {
        prefix: p.prefix,
        communities: [...new Set((p.communities ?? []).map((c) => community(c, where)))].sort(),
        largeCommunities: [...new Set((p.largeCommunities ?? []).map((c) => largeCommunity(c, where)))].sort(),
        localPref: p.localPref,
        peers: p.peers ? new Set(p.peers) : undefined,
      };
    })
    .sort((a, b) => compare(a.prefix, b.prefix));
}

/** `65000:100` or a well-known name -> BIRD's `(65000,100)`. */
function community(text: string, where: string): string {
  const known = WELL_KNOWN_COMMUNITIES[text.toLowerCase()];
  const parts = known ?? text.split(':').map((part) => (/^\d{1,5}$/.test(part) ? Number(part) : NaN));
  if (parts.length !== 2 || parts.some((n) => !(n >= 0 && n <= 65535)))
    throw new Error(`${where}: community '${text}' is neither ASN:value (each 0–65535) nor a well-known name`);
  return `(${parts[0]},${parts[1]})`;
}

/** `65000:1:2` -> BIRD's `(65000,1,2)`. */
function largeCommunity(text: string, where: string): string {
  const parts = text.split(':').map((part) => (/^\d{1,10}$/.test(part) ? Number(part) : NaN));
  if (parts.length !== 3 || parts.some((n) => !(n >= 0 && n <= 4294967295)))
    throw new Error(`${where}: large community '${text}' is not ASN:value:value (each 0–4294967295)`);
  return `(${parts.join(',')})`;
}

/** Accept the peer's prefixes, grouped by their attributes (one prefix set per group: a trie in
 * BIRD, so 10,000 VIPs with the same attributes are one test); reject the rest. */
function exportFilter(peer: BirdPeer, prefixes: readonly NormalPrefix[]): string[] {
  const ibgp = peer.peerASN === peer.myASN;
  const groups = new Map<string, { actions: string[]; prefixes: string[] }>();
  for (const p of prefixes) {
    if (p.peers && !p.peers.has(peer.name)) continue;
    const actions = [
      ...p.communities.map((c) => `bgp_community.add(${c});`),
      ...p.largeCommunities.map((c) => `bgp_large_community.add(${c});`),
      ...(ibgp && p.localPref !== undefined ? [`bgp_local_pref = ${p.localPref};`] : []),
    ];
    const key = actions.join(' ');
    const group = groups.get(key) ?? { actions, prefixes: [] };
    group.prefixes.push(p.prefix);
    groups.set(key, group);
  }
  const body = [...groups.values()]
    .sort((a, b) => compare(a.actions.join(' '), b.actions.join(' ')))
    .map((g) => `  if net ~ [ ${g.prefixes.join(', ')} ] then { ${[...g.actions, 'accept;'].join(' ')} }`);
  return [`filter '${birdSymbol(peer.name)}_out' {`, ...body, '  reject;', '}'];
}

function bgpProtocol(peer: BirdPeer): string[] {
  const hold = peer.holdTime ?? DEFAULT_HOLD_TIME;
  const keepalive = peer.keepaliveTime ?? Math.floor(hold / 3);
  const symbol = birdSymbol(peer.name);
  return [
    `protocol bgp '${symbol}' {`,
    `  description "BGPPeer ${peer.name}";`,
    `  local as ${peer.myASN};`,
    `  neighbor ${peer.address} as ${peer.peerASN};`,
    peer.ebgpMultiHop ? '  multihop;' : '  direct;',
    `  hold time ${hold};`,
    ...(hold > 0 ? [`  keepalive time ${keepalive};`] : []),
    ...(peer.password !== undefined ? [`  password "${peer.password}";`] : []),
    ...(peer.bfd
      ? [
          `  bfd { min rx interval ${peer.bfd.minRxMs} ms; min tx interval ${peer.bfd.minTxMs} ms; multiplier ${peer.bfd.multiplier}; };`,
        ]
      : []),
    '  graceful restart on;',
    `  graceful restart time ${peer.gracefulRestartTime ?? DEFAULT_GRACEFUL_RESTART_TIME};`,
    // Retry soon after a failure (a wrong password fixed, BFD not up yet): 5 s doubling to 60 s,
    // where BIRD's defaults are 60 s to 300 s.
    '  connect retry time 5;',
    '  error wait time 5, 60;',
    `  ipv4 { import none; export filter '${symbol}_out'; next hop self; };`,
    '}',
  ];
}

/** What BIRD starts with before the agent has decided anything (the image carries it, the Pod's
 * init container puts it in place when the host has none): no peers, nothing exported. */
export function startingBirdConfig(): string {
  return renderBirdConfig({ peers: [], prefixes: [] });
}

/** Byte order, so the output is stable whatever the locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
