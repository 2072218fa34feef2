// What the gateway node's kernel holds for its NATGateways (NGW-5, NGW-8), read on that node: the
// gateways it translates for, from its own nftables table (the snat rule of each, named by its
// comment `<namespace>/<name>`: the address, the port range, the new-flow counter), their flows
// from conntrack (conntrack.ts), and what it refused. Serves the agent's metrics (metrics.ts) and
// `kubectl juneau ngw` (runtime/cli/ngw.ts), so both show the same figures.
import { flowSummary, type NgwFlowSummary } from './conntrack';
import { NGW } from './desired';
import { nftRun } from './nftables';
import { conntrackStats } from './sync';

/** One gateway as the node's snat rule has it. */
export interface TranslatedGateway {
  /** `<namespace>/<name>`: the rule's comment. */
  readonly name: string;
  readonly address: string;
  readonly portRange: { readonly min: number; readonly max: number };
  /** Packets that opened a flow through its snat rule (nftables counter; a refused flow's
   * retransmissions count again). Reset when the table is replaced. */
  readonly newFlowPackets: number;
}

/** What the node refused, node-wide: the kernel's counters do not say which gateway. */
export interface NgwNodeDrops {
  /** conntrack insert_failed: a new flow whose translated tuple was taken (NGW-5, for want of a
   * port); other rare insertion races count too. Packets, not flows: a TCP SYN and its retransmissions. */
  readonly insertFailed: number;
  /** conntrack drop: packets conntrack dropped, whatever the cause (a failed insertion counts here
   * too, so a refused flow counts in both; also the table full). */
  readonly conntrackDrop: number;
  /** Packets the `guard` chain dropped (nftables counter `tunnel-refused`): from a tunnel but not a
   * selected pod of its node, or VXLAN from a node that is no peer. */
  readonly tunnelRefused: number;
}

export interface NgwGatewayFlows {
  readonly gateway: TranslatedGateway;
  readonly flows: NgwFlowSummary;
}

interface NftObject {
  counter?: { name: string; packets: number };
  rule?: { chain: string; comment?: string; expr: ReadonlyArray<Record<string, unknown>> };
}

/** The gateways the table (`nft -j list table ip juneau-ngw`'s output) translates for, and its
 * named counters. Pure. */
export function translatedGateways(listing: string): {
  readonly gateways: readonly TranslatedGateway[];
  readonly counters: Readonly<Record<string, number>>;
} {
  const objects = (JSON.parse(listing) as { nftables: NftObject[] }).nftables;
  const counters = Object.fromEntries(
    objects.flatMap((o) => (o.counter ? [[o.counter.name, o.counter.packets] as const] : [])),
  );
  const gateways = objects.flatMap((o): TranslatedGateway[] => {
    const rule = o.rule;
    if (rule?.chain !== 'translate' || !rule.comment) return [];
    const snat = rule.expr.find((e) => 'snat' in e)?.snat as
      { addr?: unknown; port?: number | { range: [number, number] } } | undefined;
    if (typeof snat?.addr !== 'string' || snat.port === undefined) return [];
    const [min, max] = typeof snat.port === 'number' ? [snat.port, snat.port] : snat.port.range;
    const counter = rule.expr.find((e) => 'counter' in e)?.counter;
    return [
      {
        name: rule.comment,
        address: snat.addr,
        portRange: { min, max },
        newFlowPackets: typeof counter === 'string' ? (counters[counter] ?? 0) : 0,
      },
    ];
  });
  return { gateways, counters };
}

/** The node's table listed, or undefined when it has none (no NATGateway here). */
function listTable(): string | undefined {
  try {
    return nftRun(`list table ip ${NGW.nftTable}`, { json: true });
  } catch (err) {
    if (/No such file or directory/.test((err as Error).message)) return undefined;
    throw err;
  }
}

export interface NgwNodeReport {
  /** Whether the node has the table at all. */
  readonly table: boolean;
  readonly gateways: readonly NgwGatewayFlows[];
  readonly drops: NgwNodeDrops;
}

/**
 * Reads this network namespace's NATGateway translation: each gateway's rule and flows (only
 * `only`'s when given), at most `listLimit` flows listed per gateway, and the node's drops.
 */
export function readNgwNode(o: { readonly listLimit: number; readonly only?: string }): NgwNodeReport {
  const listing = listTable();
  const { gateways, counters } = listing ? translatedGateways(listing) : { gateways: [], counters: {} };
  const ct = conntrackStats();
  return {
    table: listing !== undefined,
    gateways: gateways
      .filter((g) => o.only === undefined || g.name === o.only)
      .map((gateway) => ({ gateway, flows: flowSummary(gateway.address, o.listLimit) })),
    drops: { insertFailed: ct.insertFailed, conntrackDrop: ct.drop, tunnelRefused: counters['tunnel-refused'] ?? 0 },
  };
}
