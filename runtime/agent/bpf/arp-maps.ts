// The responder's pinned maps, typed: external_arp_table (ARP-10), juneau_guard, juneau_config
// and juneau_stats. Opened from bpffs pins, so the agent, the CLI (`kubectl juneau bpf dump`)
// and tests read and write the same maps the running XDP program uses. Knows no Kubernetes:
// it takes addresses, prefixes, MACs and ifindexes.
import * as path from 'node:path';
import { BpfMap } from './map';
import * as layout from './layout';
import type { ArpEntry, GuardAction, GuardEntry, InterfaceConfig, Prefix, ReasonName } from './layout';
import { numPossibleCpus } from './libbpf';
import { formatPrefix } from './prefixes';

export interface SyncResult {
  readonly added: string[];
  readonly removed: string[];
}

export interface GuardRules {
  /** Prefixes of the arp AddressPools: requests for addresses in them that are not in
   * external_arp_table are dropped. */
  readonly drop: readonly Prefix[];
  /** Addresses never dropped although inside a pool: the node's own addresses. */
  readonly allow: readonly string[];
}

export type GuardListing = Prefix & GuardEntry;

export class ArpMaps {
  /** Opens the four maps pinned in `pinDir`; checks their sizes against layout.ts. */
  static openPinned(pinDir: string): ArpMaps {
    const opened: BpfMap[] = [];
    try {
      const open = (name: string, key: layout.StructLayout | number, value: layout.StructLayout) => {
        const map = BpfMap.openPinned(path.join(pinDir, name));
        opened.push(map);
        assertSizes(map, typeof key === 'number' ? key : key.size, value.size);
        return map;
      };
      return new ArpMaps(
        open(layout.MAP_NAMES.arpTable, layout.ARP_KEY, layout.ARP_VALUE),
        open(layout.MAP_NAMES.guard, layout.GUARD_KEY, layout.GUARD_VALUE),
        open(layout.MAP_NAMES.config, layout.CONFIG_KEY, layout.CONFIG_VALUE),
        open(layout.MAP_NAMES.stats, 4, layout.STATS_VALUE),
      );
    } catch (err) {
      for (const map of opened) map.close();
      throw err;
    }
  }

  private readonly cpus = numPossibleCpus();

  private constructor(
    readonly arpTableMap: BpfMap,
    readonly guardMap: BpfMap,
    readonly configMap: BpfMap,
    readonly statsMap: BpfMap,
  ) {}

  // ---- external_arp_table ----------------------------------------------------------------

  /** Starts answering for `address`; an existing entry (and its counters) is kept. */
  addAddress(address: string): boolean {
    return this.arpTableMap.insert(layout.encodeArpKey(address), layout.encodeArpValue());
  }

  removeAddress(address: string): boolean {
    return this.arpTableMap.delete(layout.encodeArpKey(address));
  }

  lookupAddress(address: string): ArpEntry | undefined {
    const value = this.arpTableMap.lookup(layout.encodeArpKey(address));
    return value && layout.decodeArpValue(value);
  }

  /** The table's addresses without their counters: one syscall per key instead of two (the
   * per-CPU value lookup), for the agent's pass, which only diffs the keys (bench/scale). */
  addressKeys(): string[] {
    return this.arpTableMap.keys().map(layout.decodeArpKey);
  }

  addresses(): Map<string, ArpEntry> {
    return new Map(this.arpTableMap.entries().map(([k, v]) => [layout.decodeArpKey(k), layout.decodeArpValue(v)]));
  }

  /** Makes the table hold exactly `wanted`, touching only the difference: kept addresses keep
   * their counters and are never absent for a moment. Removes first, so a full table converges
   * (an insert into a map at max_entries fails). */
  syncAddresses(wanted: Iterable<string>): SyncResult {
    const want = new Set(wanted);
    const have = new Set(this.arpTableMap.keys().map(layout.decodeArpKey));
    const removed = [...have].filter((a) => !want.has(a) && this.removeAddress(a));
    const added = [...want].filter((a) => !have.has(a) && this.addAddress(a));
    return { added, removed };
  }

  // ---- juneau_guard ----------------------------------------------------------------------

  /**
   * Makes the guard trie hold exactly `rules`, by difference (hit counters of kept entries stay).
   *
   * Order: when everything fits, new entries go in before stale ones leave, so a prefix being
   * replaced by others that cover the same addresses (a pool split or reshaped) never leaves
   * those addresses unguarded for a moment. When the trie would overflow (an insert into a trie
   * at max_entries fails), stale entries leave first so the sync converges; only then can an
   * address be unguarded between two writes (it passes to the kernel: the datapath fails open).
   */
  syncGuard(rules: GuardRules): SyncResult {
    const want = new Map<string, { prefix: Prefix; action: GuardAction }>();
    for (const prefix of rules.drop) want.set(formatPrefix(prefix), { prefix, action: 'drop' });
    for (const address of rules.allow) {
      const prefix = { address, prefixLength: 32 };
      want.set(formatPrefix(prefix), { prefix, action: 'allow' });
    }
    const have = new Map(this.guardEntries().map((e) => [formatPrefix(e), e]));
    const stale = [...have].filter(([name]) => !want.has(name));
    const changed = [...want].filter(([name, { action }]) => have.get(name)?.action !== action);
    const fresh = changed.filter(([name]) => !have.has(name)).length;
    const removeFirst = have.size + fresh > this.guardMap.info.maxEntries;
    const removeStale = (): string[] => {
      for (const [, entry] of stale) this.guardMap.delete(layout.encodeGuardKey(entry));
      return stale.map(([name]) => name);
    };
    const removed = removeFirst ? removeStale() : [];
    const added = changed.map(([name, { prefix, action }]) => {
      this.guardMap.update(layout.encodeGuardKey(prefix), layout.encodeGuardValue(action));
      return name;
    });
    if (!removeFirst) removed.push(...removeStale());
    return { added, removed };
  }

  guardEntries(): GuardListing[] {
    return this.guardMap.entries().map(([k, v]) => ({ ...layout.decodeGuardKey(k), ...layout.decodeGuardValue(v) }));
  }

  // ---- juneau_config ---------------------------------------------------------------------

  setInterfaceConfig(ifindex: number, config: InterfaceConfig): void {
    this.configMap.update(layout.encodeConfigKey(ifindex), layout.encodeConfigValue(config));
  }

  interfaceConfig(ifindex: number): InterfaceConfig | undefined {
    const value = this.configMap.lookup(layout.encodeConfigKey(ifindex));
    return value && layout.decodeConfigValue(value);
  }

  /** FO-2: moves the interface's heartbeat to `nowNs` (CLOCK_MONOTONIC, see clock.ts), keeping
   * the rest of its config; false when the interface has no config. The agent is its only writer. */
  refreshHeartbeat(ifindex: number, nowNs: bigint): boolean {
    const current = this.interfaceConfig(ifindex);
    if (!current) return false;
    this.setInterfaceConfig(ifindex, { ...current, heartbeatNs: nowNs });
    return true;
  }

  removeInterfaceConfig(ifindex: number): boolean {
    return this.configMap.delete(layout.encodeConfigKey(ifindex));
  }

  // ---- juneau_stats ----------------------------------------------------------------------

  /** Packets per reason, summed over CPUs. */
  stats(): Record<ReasonName, bigint> {
    const bytes = layout.perCpuValueSize(layout.STATS_VALUE.size, this.cpus);
    const out = {} as Record<ReasonName, bigint>;
    for (const [name, slot] of Object.entries(layout.REASONS)) {
      if (name === 'JUNEAU_REASON_MAX') continue;
      const value = this.statsMap.lookup(layout.encodeStatsKey(slot), bytes);
      out[name as ReasonName] = value ? layout.sumPerCpuStats(value, this.cpus) : 0n;
    }
    return out;
  }

  close(): void {
    for (const map of [this.arpTableMap, this.guardMap, this.configMap, this.statsMap]) map.close();
  }
}

function assertSizes(map: BpfMap, keySize: number, valueSize: number): void {
  if (map.keySize !== keySize || map.valueSize !== valueSize) {
    throw new Error(
      `${map.path}: pinned map has key/value ${map.keySize}/${map.valueSize} bytes, this agent expects ` +
        `${keySize}/${valueSize} (bpf/juneau_arp.h changed; remove the pins to migrate)`,
    );
  }
}
