// The NATGateway data path on one node (NGW-4, NGW-5, NGW-7; docs/nat-gateway-datapath.md), as a
// pure function: from what the agent knows (its input, NgwNodeInput) to the kernel state it wants
// (NgwDesired): point-to-point VXLAN tunnels to and from gateway nodes, one policy rule and one routing table per
// gateway this node steers to, and the nftables table `ip juneau-ngw` (steering marks on pod
// nodes, many-to-one SNAT on the gateway node). sync.ts applies it by diff.

/** One NATGateway as the agent sees it. */
export interface NgwGatewayInput {
  /** `<namespace>/<name>`: orders the gateways and names their rules and counters. */
  readonly name: string;
  /** The external gateway address (status.address). */
  readonly address: string;
  /** The InternalIP of the gateway node (status.nodeName's). */
  readonly gatewayNodeAddress: string;
  /** The source ports (ICMP: identifiers) flows get, inclusive. */
  readonly portRange: { readonly min: number; readonly max: number };
  /** Every selected pod, on every node: its address and its node's InternalIP. */
  readonly pods: ReadonlyArray<{ readonly address: string; readonly nodeAddress: string }>;
}

/** The agent's input on one node. */
export interface NgwNodeInput {
  /** This node's InternalIP: the tunnels' local end, and "am I the gateway". */
  readonly nodeAddress: string;
  readonly gateways: readonly NgwGatewayInput[];
  /** Pod CIDRs, Service CIDRs, node addresses (CIDR or address): never steered, never translated. */
  readonly clusterRanges: readonly string[];
  /** Pod addresses of this node with an ElasticIP through 1:1 NAT: NAT-2 wins, never steered. */
  readonly elasticIPPods?: readonly string[];
}

export interface NgwTunnel {
  /** `ngw-<remote as 8 hex digits>` (15 characters at most, the kernel's limit). */
  readonly name: string;
  readonly local: string;
  readonly remote: string;
  /** The VNI both ends use: the low 24 bits of local XOR remote (unique among one node's peers). */
  readonly vni: number;
  /** This end's MAC (from the local address) and the other end's (from the remote address): frames
   * into the tunnel go to the peer's MAC through a permanent neighbour entry for NEXT_HOP. */
  readonly mac: string;
  readonly peerMac: string;
}
export interface NgwRule {
  readonly priority: number;
  readonly fwmark: number;
  readonly fwmask: number;
  readonly table: number;
}
export interface NgwRoute {
  /** A default route in `table` through `device`. */
  readonly table: number;
  readonly device: string;
}
export interface NgwDesired {
  readonly tunnels: readonly NgwTunnel[];
  readonly rules: readonly NgwRule[];
  readonly routes: readonly NgwRoute[];
  /** The whole nftables table as an `nft -f` script, or '' when nothing is wanted. */
  readonly nft: string;
  /** The gateways this node translates for, by name: their counter in the nftables table. */
  readonly counters: Readonly<Record<string, string>>;
}

/** Everything the agent makes carries one of these, so it finds (and removes) all of it. */
export const NGW = {
  /** Tunnel device names start with it. */
  devicePrefix: 'ngw-',
  nftTable: 'juneau-ngw',
  /** Policy rules sit here, before the main table (32766). */
  rulePriority: 20039,
  /** Tables tableBase + 1 … tableBase + 255, one per gateway steered to. */
  tableBase: 0x4e4700,
  /** The fwmark bits used (8 bits: 255 gateways), clear of kube-proxy's 0x4000/0x8000 and of
   * Calico's and Cilium's defaults. */
  fwmask: 0x0ff00000,
  fwshift: 20,
  /** Routes and rules carry this protocol (rtm_protocol, FRA_PROTOCOL). */
  protocol: 77,
  /** The tunnels' UDP port (not 4789: the ElasticIP's EN-9 device in external mode holds it). */
  vxlanPort: 4790,
  /** The next hop of the steering routes: a link-local address reached through the tunnel,
   * resolved by a permanent neighbour entry to the peer's MAC. */
  nextHop: '169.254.78.71',
  /** Every tunnel device's own address (/32, scope link): reverse-path filtering needs one. */
  tunnelAddress: '169.254.78.70',
  /** The nftables chains run before the usual NAT chains (srcnat = 100, mangle = -150). */
  natPriority: 90,
} as const;

const ipv4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
function checkAddress(value: string, field: string): string {
  const m = ipv4.exec(value);
  if (!m || m.slice(1).some((o) => Number(o) > 255)) throw new Error(`${field}: '${value}' is not an IPv4 address`);
  return value;
}
function checkRange(value: string, field: string): string {
  const [address, bits, extra] = value.split('/');
  checkAddress(address!, field);
  if (extra !== undefined || (bits !== undefined && !/^\d{1,2}$/.test(bits)) || Number(bits) > 32)
    throw new Error(`${field}: '${value}' is not an IPv4 address or CIDR`);
  return value;
}

const octets = (a: string) => a.split('.').map(Number);
/** The tunnel device to or from `remote`. */
export function tunnelName(remote: string): string {
  return NGW.devicePrefix + Buffer.from(octets(remote)).toString('hex');
}
/** The MAC of every tunnel device of the node with address `node`: locally administered. */
export function tunnelMac(node: string): string {
  return ['0a', '4e', ...octets(node).map((o) => o.toString(16).padStart(2, '0'))].join(':');
}
function tunnel(local: string, remote: string): NgwTunnel {
  const [a, b] = [octets(local), octets(remote)];
  const vni = ((a[1]! ^ b[1]!) << 16) | ((a[2]! ^ b[2]!) << 8) | (a[3]! ^ b[3]!);
  if (vni === 0)
    throw new Error(`tunnel ${local} -> ${remote}: the nodes' addresses differ only in their first octet, no VNI`);
  return { name: tunnelName(remote), local, remote, vni, mac: tunnelMac(local), peerMac: tunnelMac(remote) };
}

const nftString = (s: string) => JSON.stringify(s.replace(/["\\]/g, ''));
const elements = (addresses: readonly string[]) => `{ ${addresses.join(', ')} }`;

interface Chains {
  readonly steer: string[];
  readonly translate: string[];
  /** Per tunnel device on the gateway node: the pod addresses that may arrive through it. */
  readonly inbound: Map<string, string[]>;
  readonly counters: Record<string, string>;
}

/** The nftables table: `guard` (what may arrive through a tunnel: only the selected pods of the
 * node at its other end, and only from the nodes of the tunnels; the tunnel's outer packets
 * untracked, as in `untrack` for those this node sends), `steer` and `translate`. */
function renderNft(c: Chains, cluster: readonly string[], remotes: readonly string[]): string {
  if (c.steer.length + c.translate.length === 0) return '';
  const guard = [
    ...[...c.inbound].map(([dev, pods]) => `iifname "${dev}" ip saddr ${elements(pods)} return`),
    `iifname "${NGW.devicePrefix}*" counter name tunnel-refused drop`,
    ...(remotes.length
      ? [
          `udp dport ${NGW.vxlanPort} ip saddr != ${elements(remotes)} counter name tunnel-refused drop`,
          // The tunnel's outer packets need no connection tracking (the kernel hashes their source
          // port from the inner flow: an entry per inner flow on both nodes otherwise, bench/natgw).
          `udp dport ${NGW.vxlanPort} notrack`,
        ]
      : []),
  ];
  return [
    `table ip ${NGW.nftTable} {`,
    `  comment "Juneau NATGateway data path (docs/nat-gateway-datapath.md); the agent replaces it whole"`,
    `  counter tunnel-refused { }`,
    ...Object.values(c.counters).map((name) => `  counter ${name} { }`),
    `  set cluster { type ipv4_addr; flags interval; auto-merge;${cluster.length ? ` elements = ${elements(cluster)}` : ''} }`,
    `  chain guard { type filter hook prerouting priority raw; policy accept;`,
    ...guard.map((r) => `    ${r}`),
    `  }`,
    ...(remotes.length
      ? [
          `  chain untrack { type filter hook output priority raw; policy accept;`,
          `    udp dport ${NGW.vxlanPort} ip daddr ${elements(remotes)} notrack`,
          `  }`,
        ]
      : []),
    `  chain steer { type filter hook prerouting priority mangle; policy accept;`,
    `    ip daddr @cluster return`,
    ...c.steer.map((r) => `    ${r}`),
    `  }`,
    // Before the CNI's masquerade (srcnat): the first NAT chain to bind a flow wins.
    `  chain translate { type nat hook postrouting priority ${NGW.natPriority}; policy accept;`,
    `    ip daddr @cluster return`,
    `    oifname "${NGW.devicePrefix}*" snat ip to ip saddr comment "steered flows keep the pod address into the tunnel"`,
    ...c.translate.map((r) => `    ${r}`),
    `  }`,
    `}`,
    '',
  ].join('\n');
}

function checkGateway(g: NgwGatewayInput): void {
  const field = `gateways[${g.name}]`;
  checkAddress(g.address, `${field}.address`);
  checkAddress(g.gatewayNodeAddress, `${field}.gatewayNodeAddress`);
  const { min, max } = g.portRange;
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max > 65535 || min > max)
    throw new Error(`${field}.portRange: ${min}-${max} is not a range of ports within 1-65535`);
  for (const p of g.pods) {
    checkAddress(p.address, `${field}.pods`);
    checkAddress(p.nodeAddress, `${field}.pods[${p.address}].nodeAddress`);
  }
}

export function desiredNgw(input: NgwNodeInput): NgwDesired {
  const self = checkAddress(input.nodeAddress, 'nodeAddress');
  const cluster = input.clusterRanges.map((r, i) => checkRange(r, `clusterRanges[${i}]`));
  const elastic = new Set(input.elasticIPPods ?? []);
  const gateways = [...input.gateways].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (gateways.length > NGW.fwmask >>> NGW.fwshift)
    throw new Error(`gateways: ${gateways.length} NATGateways, at most ${NGW.fwmask >>> NGW.fwshift} per node`);
  gateways.forEach(checkGateway);
  const tunnels = new Map<string, NgwTunnel>();
  const addTunnel = (remote: string) => {
    if (remote === self || tunnels.has(remote)) return;
    const t = tunnel(self, remote);
    const clash = [...tunnels.values()].find((o) => o.vni === t.vni);
    if (clash)
      throw new Error(
        `tunnels to ${clash.remote} and ${remote}: the same VNI ${t.vni} (addresses differ only in their first octet)`,
      );
    tunnels.set(remote, t);
  };
  const rules: NgwRule[] = [];
  const routes: NgwRoute[] = [];
  const chains: Chains = { steer: [], translate: [], inbound: new Map(), counters: {} };
  const claimed = new Set<string>();
  gateways.forEach((g, i) => {
    // A pod of two gateways uses the first (the controller orders them, NGW-4); ElasticIP pods none.
    const pods = g.pods.filter((p) => !claimed.has(p.address) && !(p.nodeAddress === self && elastic.has(p.address)));
    for (const p of pods) claimed.add(p.address);
    const comment = `comment ${nftString(g.name)}`;
    const local = pods.filter((p) => p.nodeAddress === self).map((p) => p.address);
    if (g.gatewayNodeAddress === self) {
      if (pods.length === 0) return;
      for (const p of pods.filter((q) => q.nodeAddress !== self)) {
        addTunnel(p.nodeAddress);
        const dev = tunnelName(p.nodeAddress);
        chains.inbound.set(dev, [...(chains.inbound.get(dev) ?? []), p.address]);
      }
      const counter = `gw${i + 1}-flows`;
      chains.counters[g.name] = counter;
      const { min, max } = g.portRange;
      chains.translate.push(
        `ip saddr ${elements(pods.map((p) => p.address))} meta l4proto { tcp, udp, icmp } counter name ${counter} snat ip to ${g.address}:${min}-${max} ${comment}`,
      );
    } else if (local.length > 0) {
      const table = NGW.tableBase + i + 1;
      const fwmark = ((i + 1) << NGW.fwshift) >>> 0;
      addTunnel(g.gatewayNodeAddress);
      rules.push({ priority: NGW.rulePriority, fwmark, fwmask: NGW.fwmask, table });
      routes.push({ table, device: tunnelName(g.gatewayNodeAddress) });
      const keep = (~NGW.fwmask >>> 0).toString(16).padStart(8, '0');
      chains.steer.push(
        `ip saddr ${elements(local)} meta mark set meta mark & 0x${keep} | 0x${fwmark.toString(16).padStart(8, '0')} ${comment}`,
      );
    }
  });
  const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : 1);
  const sorted = [...tunnels.values()].sort(byName);
  const nft = renderNft(
    chains,
    cluster,
    sorted.map((t) => t.remote),
  );
  return { tunnels: sorted, rules, routes, nft, counters: chains.counters };
}
