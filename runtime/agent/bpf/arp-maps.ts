// The responder's pinned maps, typed: external_arp_table (ARP-10) with its slots, juneau_arp_class
// (SEC-11), juneau_guard, juneau_config and juneau_stats. Opened from bpffs pins, so the agent, the CLI (`kubectl juneau bpf dump`)
// and tests read and write the same maps the running XDP program uses. Knows no Kubernetes:
// it takes addresses, prefixes, MACs and ifindexes.
import * as path from 'node:path';
import { BpfMap, reasonStats } from './map';
import * as layout from './layout';
import type { ArpEntry, ExpiryClass, GuardAction, GuardEntry, InterfaceConfig, Prefix, ReasonName } from './layout';
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
  /** Opens the eight maps pinned in `pinDir`; checks their sizes against layout/, and the types of
   * the table and the config, whose values are read as per-CPU and as slots. */
  static openPinned(pinDir: string): ArpMaps {
    const opened: BpfMap[] = [];
    try {
      const open = (name: string, key: layout.StructLayout | number, value: layout.StructLayout) => {
        const map = BpfMap.openPinned(path.join(pinDir, name));
        opened.push(map);
        assertSizes(map, typeof key === 'number' ? key : key.size, value.size);
        return map;
      };
      const table = open(layout.MAP_NAMES.arpTable, layout.ARP_KEY, layout.ARP_VALUE);
      if (table.info.type !== layout.ARP_TABLE_TYPE) {
        throw new Error(
          `${table.path}: pinned map has type ${table.info.type}, this agent expects ${layout.ARP_TABLE_TYPE} (per-CPU hash): ` +
            'starting the agent brings the pins to its layout (runtime/agent/bpf/pins.ts)',
        );
      }
      const config = open(layout.MAP_NAMES.config, 4, layout.CONFIG_VALUE);
      if (config.info.type !== layout.CONFIG_TYPE) {
        throw new Error(
          `${config.path}: pinned map has type ${config.info.type}, this agent expects ${layout.CONFIG_TYPE} (array of slots): ` +
            'starting the agent brings the pins to its layout (runtime/agent/bpf/pins.ts)',
        );
      }
      return new ArpMaps(
        table,
        open(layout.MAP_NAMES.guard, layout.GUARD_KEY, layout.GUARD_VALUE),
        config,
        open(layout.MAP_NAMES.stats, 4, layout.STATS_VALUE),
        open(layout.MAP_NAMES.filter, 4, layout.ARP_FILTER),
        open(layout.MAP_NAMES.slots, 4, layout.ARP_SLOT),
        open(layout.MAP_NAMES.counters, 4, layout.ARP_VALUE),
        open(layout.MAP_NAMES.classes, layout.ARP_KEY, layout.ARP_CLASS),
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
    readonly filterMap: BpfMap,
    readonly slotsMap: BpfMap,
    readonly countersMap: BpfMap,
    readonly classMap: BpfMap,
  ) {}

  // ---- the address table: juneau_arp_slots (+ juneau_arp_counters), then external_arp_table -----
  // An address is in a slot of its probes (the program finds it without a call) or, when they are
  // all taken, in external_arp_table; never in both, and it does not move while it stays, so its
  // counters stay exact (bpf/juneau_maps.h). A slot's counters are written before its address; a
  // removal clears the address. Every write keeps juneau_arp_filter a superset of the table: a bit
  // is set before its address is inserted, and cleared only by a rebuild from the table after
  // deletes. A stale set bit only costs the program the lookup it would have made anyway. The
  // agent is the one writer (the bit is set by read-modify-write of the filter).

  /** Starts answering for `address`; an existing entry (and its counters) is kept. */
  addAddress(address: string): boolean {
    assertAnswerable(address);
    const filter = this.filter();
    if (!layout.arpFilterHas(filter, address)) {
      const bit = layout.arpFilterBit(address);
      const withBit = Buffer.from(filter);
      withBit[bit >> 3] |= 1 << (bit & 7);
      this.filterMap.update(layout.u32Key(0), withBit);
    }
    // A clear filter bit proves the address absent: only a free slot is looked for then.
    const known = layout.arpFilterHas(filter, address);
    if (
      known &&
      (this.slotOf(address) !== undefined ||
        this.arpTableMap.lookup(layout.encodeArpKey(address), this.arpValueBytes()))
    )
      return false;
    const free = this.firstProbe(address, (held) => held === undefined);
    if (free !== undefined) {
      this.placeInSlot(free, address);
      return true;
    }
    return this.arpTableMap.insert(layout.encodeArpKey(address), layout.encodeArpValues(this.cpus));
  }

  /** Stops answering for `address`. Its filter bit stays until rebuildFilter(). */
  removeAddress(address: string): boolean {
    const slot = this.slotOf(address);
    if (slot === undefined) return this.arpTableMap.delete(layout.encodeArpKey(address));
    this.slotsMap.update(layout.u32Key(slot), Buffer.alloc(layout.ARP_SLOT.size));
    return true;
  }

  lookupAddress(address: string): ArpEntry | undefined {
    const slot = this.slotOf(address);
    const value =
      slot !== undefined
        ? this.countersMap.lookup(layout.u32Key(slot), this.arpValueBytes())
        : this.arpTableMap.lookup(layout.encodeArpKey(address), this.arpValueBytes());
    return value && layout.sumArpValues(value, this.cpus);
  }

  /** The table's addresses without their counters, for the agent's pass, which only diffs the
   * keys: read in batches, which costs less than a key-by-key walk (bench/scale). */
  addressKeys(): string[] {
    return [...this.slotted().keys(), ...this.tableKeys()];
  }

  /** Every address with its counters summed over the CPUs. The slots' counters are read one by
   * one when few slots are taken, and in batches of the whole array when many are (the agent's
   * poll at 10,000 addresses: bench/scale), which costs the array's size times the CPUs. */
  addresses(): Map<string, ArpEntry> {
    const out = new Map<string, ArpEntry>();
    const slotted = this.slotted();
    const batched =
      slotted.size * 16 > layout.LIMITS.JUNEAU_ARP_SLOTS
        ? new Map(
            this.countersMap
              .entriesBatched(this.arpValueBytes(), layout.LIMITS.JUNEAU_ARP_SLOTS)
              .map(([k, v]) => [layout.decodeU32Key(k), v]),
          )
        : undefined;
    for (const [address, slot] of slotted) {
      const value = batched ? batched.get(slot) : this.countersMap.lookup(layout.u32Key(slot), this.arpValueBytes());
      if (value) out.set(address, layout.sumArpValues(value, this.cpus));
    }
    for (const [k, v] of this.arpTableMap.entriesBatched(this.arpValueBytes()))
      out.set(layout.decodeArpKey(k), layout.sumArpValues(v, this.cpus));
    return out;
  }

  /** Makes the table hold exactly `wanted`, touching only the difference: kept addresses keep
   * their counters and are never absent for a moment. Removes first, so a full table converges
   * (an insert into a map at max_entries fails). */
  syncAddresses(wanted: Iterable<string>): SyncResult {
    const want = new Set(wanted);
    for (const address of want) assertAnswerable(address);
    const slotted = this.slotted();
    const tabled = new Set(this.tableKeys());
    const have = new Set([...slotted.keys(), ...tabled]);
    const gone = [...have].filter((a) => !want.has(a));
    const fresh = [...want].filter((a) => !have.has(a));
    if (fresh.length > 0) this.writeFilter([...have, ...want]);
    const taken = new Set(slotted.values());
    const removed = gone.filter((a) => {
      const slot = slotted.get(a);
      if (slot === undefined) return this.arpTableMap.delete(layout.encodeArpKey(a));
      this.slotsMap.update(layout.u32Key(slot), Buffer.alloc(layout.ARP_SLOT.size));
      taken.delete(slot);
      return true;
    });
    const added = fresh.filter((a) => {
      const slot = freeProbe(a, taken);
      if (slot === undefined) return this.arpTableMap.insert(layout.encodeArpKey(a), layout.encodeArpValues(this.cpus));
      this.placeInSlot(slot, a);
      taken.add(slot);
      return true;
    });
    if (gone.length > 0) this.writeFilter(this.addressKeys());
    return { added, removed };
  }

  private placeInSlot(slot: number, address: string): void {
    const key = layout.u32Key(slot);
    this.countersMap.update(key, layout.encodeArpValues(this.cpus));
    this.slotsMap.update(key, layout.encodeArpKey(address));
  }

  /** The slot of `address`, or undefined when none of its probes holds it. */
  private slotOf(address: string): number | undefined {
    return this.firstProbe(address, (held) => held === address);
  }

  /** The first of the address's probe slots whose address passes `test`, read one by one. */
  private firstProbe(address: string, test: (held: string | undefined) => boolean): number | undefined {
    for (let probe = 0; probe < layout.LIMITS.JUNEAU_ARP_PROBES; probe++) {
      const slot = layout.arpSlot(address, probe);
      if (test(layout.decodeArpSlot(this.slotsMap.lookup(layout.u32Key(slot))!))) return slot;
    }
    return undefined;
  }

  /** Every slotted address and its slot, read in one batch. */
  private slotted(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, v] of this.slotsMap.entriesBatched(layout.ARP_SLOT.size, layout.LIMITS.JUNEAU_ARP_SLOTS)) {
      const address = layout.decodeArpSlot(v);
      if (address !== undefined) out.set(address, layout.decodeU32Key(k));
    }
    return out;
  }

  private tableKeys(): string[] {
    return this.arpTableMap.entriesBatched(this.arpValueBytes()).map(([k]) => layout.decodeArpKey(k));
  }

  /** Rewrites juneau_arp_filter from the table: after a new filter map was created, and after
   * removals, to clear the bits of addresses that left. `keys`: the table's addresses, when the
   * caller has just read them (the agent's poll); read here otherwise. */
  rebuildFilter(keys?: Iterable<string>): void {
    this.writeFilter(keys ?? this.addressKeys());
  }

  /** juneau_arp_filter[0] as the program reads it. */
  filter(): Buffer {
    return this.filterMap.lookup(layout.u32Key(0))!;
  }

  private writeFilter(addresses: Iterable<string>): void {
    this.filterMap.update(layout.u32Key(0), layout.encodeArpFilter(addresses));
  }

  private arpValueBytes(): number {
    return layout.perCpuValueSize(layout.ARP_VALUE.size, this.cpus);
  }

  // ---- juneau_arp_class (SEC-11) -----------------------------------------------------------
  // Only held addresses have an entry; the program reads it only for an address also in the table,
  // so an entry left for an address no longer answered answers nothing.

  /** Sets the expiry class of `address`: an entry when held, none when moveable. */
  setExpiryClass(address: string, expiryClass: ExpiryClass): void {
    const key = layout.encodeArpKey(address);
    if (expiryClass === 'held') this.classMap.update(key, layout.encodeArpClass('held'));
    else this.classMap.delete(key);
  }

  /** The held addresses (every entry's address; an entry of another class is moveable). */
  heldAddresses(): Set<string> {
    const out = new Set<string>();
    for (const [k, v] of this.classMap.entriesBatched(layout.ARP_CLASS.size))
      if (layout.decodeArpClass(v) === 'held') out.add(layout.decodeArpKey(k));
    return out;
  }

  /** Makes exactly `held` the held addresses, by difference. */
  syncExpiryClasses(held: Iterable<string>): SyncResult {
    const want = new Set(held);
    const have = this.heldAddresses();
    const added = [...want].filter((a) => !have.has(a));
    const removed = [...have].filter((a) => !want.has(a));
    for (const address of added) this.setExpiryClass(address, 'held');
    for (const address of removed) this.setExpiryClass(address, 'moveable');
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

  // juneau_config is an array the program reads without a call: an interface's entry is in one
  // of its JUNEAU_CONFIG_PROBES slots, marked by its ifindex (bpf/juneau_maps.h).

  /** Writes the interface's entry: in its slot when it has one, else placed in the first free slot
   * of its probes (first with ifindex 0, then with the ifindex, so the program never takes a
   * half-written value for the interface's). */
  setInterfaceConfig(ifindex: number, config: InterfaceConfig): void {
    const probes = this.configProbes(ifindex);
    const found = probes.find((p) => p.ifindex === ifindex);
    if (found) {
      this.configMap.update(layout.u32Key(found.slot), layout.encodeConfigValue(config, ifindex));
      return;
    }
    const free = probes.find((p) => p.ifindex === 0);
    if (!free) {
      throw new Error(
        `${this.configMap.path}: no free slot for ifindex ${ifindex}: its ${probes.length} slots hold ifindexes ` +
          `${probes.map((p) => p.ifindex).join(', ')}; remove the config of an interface no longer answered on`,
      );
    }
    this.configMap.update(layout.u32Key(free.slot), layout.encodeConfigValue(config));
    this.configMap.update(layout.u32Key(free.slot), layout.encodeConfigValue(config, ifindex));
  }

  interfaceConfig(ifindex: number): InterfaceConfig | undefined {
    const found = this.configProbes(ifindex).find((p) => p.ifindex === ifindex);
    return found && layout.decodeConfigValue(found.value);
  }

  /** Every configured interface with its entry. */
  interfaceConfigs(): Map<number, InterfaceConfig> {
    const out = new Map<number, InterfaceConfig>();
    for (const [, value] of this.configMap.entries()) {
      const ifindex = layout.decodeConfigIfindex(value);
      if (ifindex !== 0) out.set(ifindex, layout.decodeConfigValue(value));
    }
    return out;
  }

  /** FO-2: moves the interface's heartbeat to `nowNs` (CLOCK_MONOTONIC, see clock.ts), keeping
   * the rest of its config; false when the interface has no config. The agent is its only writer. */
  refreshHeartbeat(ifindex: number, nowNs: bigint): boolean {
    return this.changeInterfaceConfig(ifindex, { heartbeatNs: nowNs });
  }

  /** SEC-14: writes the interface's new MAC (the sender of every reply, and the destination a
   * unicast request must have to be ours), keeping the rest of its config; false when the
   * interface has no config. */
  setInterfaceMac(ifindex: number, mac: string): boolean {
    return this.changeInterfaceConfig(ifindex, { mac });
  }

  private changeInterfaceConfig(ifindex: number, change: Partial<InterfaceConfig>): boolean {
    const current = this.interfaceConfig(ifindex);
    if (!current) return false;
    this.setInterfaceConfig(ifindex, { ...current, ...change });
    return true;
  }

  /** Frees the interface's slot: its ifindex cleared first (the program stops using it), then the
   * rest zeroed. */
  removeInterfaceConfig(ifindex: number): boolean {
    const found = this.configProbes(ifindex).find((p) => p.ifindex === ifindex);
    if (!found) return false;
    const key = layout.u32Key(found.slot);
    this.configMap.update(key, layout.encodeConfigValue(layout.decodeConfigValue(found.value)));
    this.configMap.update(key, Buffer.alloc(layout.CONFIG_VALUE.size));
    return true;
  }

  private configProbes(ifindex: number): { slot: number; ifindex: number; value: Buffer }[] {
    return Array.from({ length: layout.LIMITS.JUNEAU_CONFIG_PROBES }, (_, probe) => {
      const slot = layout.configSlot(ifindex, probe);
      const value = this.configMap.lookup(layout.u32Key(slot))!;
      return { slot, ifindex: layout.decodeConfigIfindex(value), value };
    });
  }

  // ---- juneau_stats ----------------------------------------------------------------------

  /** Packets per reason, summed over CPUs. */
  stats(): Record<ReasonName, bigint> {
    return reasonStats(this.statsMap, layout.REASONS, 'JUNEAU_REASON_MAX', this.cpus);
  }

  close(): void {
    const maps = [this.arpTableMap, this.guardMap, this.configMap, this.statsMap, this.filterMap];
    for (const map of [...maps, this.slotsMap, this.countersMap, this.classMap]) map.close();
  }
}

/** The first probe slot of `address` not in `taken`, or undefined when all are. */
function freeProbe(address: string, taken: ReadonlySet<number>): number | undefined {
  for (let probe = 0; probe < layout.LIMITS.JUNEAU_ARP_PROBES; probe++) {
    const slot = layout.arpSlot(address, probe);
    if (!taken.has(slot)) return slot;
  }
  return undefined;
}

/** 0.0.0.0 marks a free slot (bpf/juneau_maps.h), and no ARPAdvertisement names it. */
function assertAnswerable(address: string): void {
  if (address === '0.0.0.0') throw new Error('external_arp_table: 0.0.0.0 is never answered (it marks a free slot)');
}

function assertSizes(map: BpfMap, keySize: number, valueSize: number): void {
  if (map.keySize !== keySize || map.valueSize !== valueSize) {
    throw new Error(
      `${map.path}: pinned map has key/value ${map.keySize}/${map.valueSize} bytes, this agent expects ` +
        `${keySize}/${valueSize}: starting the agent brings the pins to its layout (runtime/agent/bpf/pins.ts)`,
    );
  }
}
