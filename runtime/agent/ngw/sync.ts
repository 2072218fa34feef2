// Applies the NATGateway data path (desired.ts) to the kernel of the caller's network namespace by
// diff, idempotently: tunnels by name (`ngw-*`), rules and routes by their protocol tag and table
// range, the nftables table as a whole (replaced in one transaction when its text changes, so a
// flow is never between two rule sets). removeNgw() leaves nothing of it.
import * as fs from 'node:fs';
import { ifNameToIndex } from '../bpf/libbpf';
import { NGW, type NgwDesired, type NgwRule } from './desired';
import { nftCounters, nftHasTable, nftRun } from './nftables';
import {
  addRule,
  addTunnel,
  deleteLink,
  deleteRoute,
  deleteRule,
  linksNamed,
  replaceRoute,
  routesOf,
  rulesOf,
  setRpFilter,
} from './rtnl';

/** What one pass changed (for the agent's log). */
export interface NgwSyncResult {
  readonly tunnelsAdded: number;
  readonly tunnelsRemoved: number;
  readonly rulesAdded: number;
  readonly rulesRemoved: number;
  readonly routesSet: number;
  readonly routesRemoved: number;
  readonly nftReplaced: boolean;
}

export interface NgwSyncOptions {
  /** The device holding the node address (the tunnels' underlay). */
  readonly underlayDevice: string;
  /** The underlay's MTU: tunnels get it less VXLAN_OVERHEAD. @default the kernel's (from the device) */
  readonly underlayMtu?: number;
}

const sameRule = (a: NgwRule, b: NgwRule) =>
  a.priority === b.priority && a.fwmark === b.fwmark && a.fwmask === b.fwmask && a.table === b.table;
const TABLE_LAST = NGW.tableBase + (NGW.fwmask >>> NGW.fwshift);
/** What the tunnel adds: outer IPv4 (20), UDP (8), VXLAN (8) and the inner Ethernet header (14). */
export const VXLAN_OVERHEAD = 50;

/**
 * One node's data path. `applied` is the nftables script this instance last applied: the table is
 * replaced when the wanted script differs from it (or the table is gone), not compared with nft's
 * own listing, whose text differs from its input.
 */
export class NgwDataplane {
  private applied: string | undefined;

  constructor(private readonly options: NgwSyncOptions) {}

  sync(desired: NgwDesired): NgwSyncResult {
    const r = syncNgw(desired, this.options, this.applied);
    this.applied = desired.nft;
    return r;
  }

  /** Removes everything of the data path (the NATGateways are gone, or the agent is uninstalled). */
  remove(): NgwSyncResult {
    return this.sync(NOTHING);
  }
}

const NOTHING: NgwDesired = { tunnels: [], rules: [], routes: [], nft: '', counters: {} };

function syncNgw(desired: NgwDesired, options: NgwSyncOptions, applied: string | undefined): NgwSyncResult {
  // 1. tunnels
  const have = linksNamed(NGW.devicePrefix);
  const want = new Map(desired.tunnels.map((t) => [t.name, t]));
  let tunnelsAdded = 0;
  let tunnelsRemoved = 0;
  for (const [name, ifindex] of have)
    if (!want.has(name)) {
      deleteLink(ifindex, name);
      tunnelsRemoved++;
    }
  for (const t of desired.tunnels)
    if (!have.has(t.name)) {
      addTunnel(t, {
        link: ifNameToIndex(options.underlayDevice),
        port: NGW.vxlanPort,
        nextHop: NGW.nextHop,
        ownAddress: NGW.tunnelAddress,
        mtu: options.underlayMtu ? options.underlayMtu - VXLAN_OVERHEAD : undefined,
      });
      tunnelsAdded++;
    }
  // Packets from a pod of another node arrive on the tunnel, while that pod's address routes
  // through the pod network: strict reverse-path filtering would drop them (2 = loose wins over
  // net.ipv4.conf.all.rp_filter = 1, the kernel takes the larger).
  for (const t of desired.tunnels) setRpFilter(ifNameToIndex(t.name), t.name, 2);
  // 2. routes: one default route per table, through its tunnel
  const routes = routesOf(NGW.protocol, NGW.tableBase + 1, TABLE_LAST);
  let routesSet = 0;
  let routesRemoved = 0;
  const wantTables = new Set(desired.routes.map((r) => r.table));
  for (const r of routes)
    if (!wantTables.has(r.table)) {
      deleteRoute(r.table, NGW.protocol);
      routesRemoved++;
    }
  for (const r of desired.routes) {
    const oif = ifNameToIndex(r.device);
    if (!routes.some((h) => h.table === r.table && h.oif === oif)) {
      replaceRoute(r, oif, NGW.nextHop, NGW.protocol);
      routesSet++;
    }
  }
  // 3. rules
  const rules = rulesOf(NGW.protocol);
  let rulesAdded = 0;
  let rulesRemoved = 0;
  for (const r of rules)
    if (!desired.rules.some((w) => sameRule(w, r))) {
      deleteRule(r, NGW.protocol);
      rulesRemoved++;
    }
  for (const r of desired.rules)
    if (!rules.some((h) => sameRule(h, r))) {
      addRule(r, NGW.protocol);
      rulesAdded++;
    }
  // 4. nftables: the whole table in one transaction
  let nftReplaced = false;
  const present = nftHasTable(NGW.nftTable);
  if (desired.nft === '') {
    if (present) {
      nftRun(`delete table ip ${NGW.nftTable}`);
      nftReplaced = true;
    }
  } else if (!present || applied !== desired.nft) {
    nftRun(`${present ? `delete table ip ${NGW.nftTable}\n` : ''}${desired.nft}`);
    nftReplaced = true;
  }
  return { tunnelsAdded, tunnelsRemoved, rulesAdded, rulesRemoved, routesSet, routesRemoved, nftReplaced };
}

/** What the kernel's connection tracking counted on this node, summed over CPUs. */
export interface ConntrackStats {
  /** Entries that could not be inserted: a new flow whose translated tuple was taken (NGW-5). */
  readonly insertFailed: number;
  readonly drop: number;
}

export function conntrackStats(): ConntrackStats {
  const text = fs.readFileSync('/proc/thread-self/net/stat/nf_conntrack', 'utf8').trim().split('\n');
  const names = text[0]!.trim().split(/\s+/);
  const sum = (column: string) => {
    const at = names.indexOf(column);
    if (at < 0) throw new Error(`/proc/net/stat/nf_conntrack has no column ${column}`);
    return text.slice(1).reduce((s, line) => s + parseInt(line.trim().split(/\s+/)[at]!, 16), 0);
  };
  return { insertFailed: sum('insert_failed'), drop: sum('drop') };
}

/** New flows each gateway of this node translated (its nftables counter), by gateway name. */
export function ngwFlowCounters(desired: NgwDesired): Record<string, number> {
  const counts = nftCounters(NGW.nftTable);
  return Object.fromEntries(Object.entries(desired.counters).map(([name, c]) => [name, counts[c] ?? 0]));
}
