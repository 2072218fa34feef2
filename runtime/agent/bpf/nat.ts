// The ElasticIP 1:1 NAT datapath (bpf/tc_nat.bpf.c): loading and attaching its TC programs, and
// its pinned maps, typed. Knows no Kubernetes: it takes ElasticIP/address pairs and ifindexes.
//
// Hook: clsact direct-action filters through libbpf's bpf_tc_attach (netlink), not tcx. Debian
// 12's libbpf 1.1.2 has no tcx API and its headers no BPF_TCX_* (FACTS.md "TC / tcx"); tcx needs
// Linux 6.6 while Juneau supports 5.11; and a clsact filter holds its program like a netlink XDP
// attachment does: it stays after the agent exits, so translation continues while the agent
// restarts (NAT-4) with no link pin to manage. The maps are pinned beside the ARP maps and the
// programs pinned per interface, so the next agent adopts both and replaces each filter in place
// (same handle and priority: atomic replace, no gap).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ipv4FromBytes, ipv4ToBytes } from './addr';
import { BpfMap, reasonStats } from './map';
import { BpfObject, findBuiltObject } from './object';
import * as libbpf from './libbpf';
import { TC_ATTACH, type TcFilter } from './libbpf';
import * as layout from './layout';
import type { NatCounters, NatReasonName, PodDevice, Prefix } from './layout';
import { loadPinned, pinProgram, unlinkIfPresent } from './pins';
import { resolvePodDevice } from './pod-device';

/** Handles and priority of the Juneau NAT filters: priority 1 runs them before filters others add
 * at the default priorities. 0x4a4e is "JN"; tc_nat_pod has its own handle, so an interface that
 * is both external and pod-facing keeps the two apart. */
export const NAT_TC_HANDLE = 0x4a4e;
export const NAT_TC_POD_HANDLE = 0x4a4f;
/** tc_nat_tun on the VXLAN device (EN-9): its own handle, like tc_nat_pod. */
export const NAT_TC_TUN_HANDLE = 0x4a50;
export const NAT_TC_PRIORITY = 1;

/** One binding: the ElasticIP and the NIC address it is translated to. */
export interface NatBinding {
  readonly elasticIP: string;
  readonly address: string;
}

/** A direct ElasticIP (DIR-1) held by a NIC on this node; `vni` (the ExternalNetwork's
 * status.networkID, EN-9) is accepted on the VXLAN device for it. @default no VNI */
export interface DirectBinding extends NatBinding {
  readonly vni?: number;
}

/** EN-9: a direct ElasticIP whose NIC is on another node: carried by VXLAN with `vni` to `node`
 * (that node's InternalIP). */
export interface RemoteBinding {
  readonly elasticIP: string;
  readonly node: string;
  readonly vni: number;
}

export interface NatEntry extends NatBinding, NatCounters {
  /** 'nat': translated (EIP-4 NAT); 'direct': held by the NIC itself, forwarded unchanged (DIR-1);
   * 'remote': held by a NIC on the node `address`, carried there by VXLAN (EN-9). */
  readonly kind: 'nat' | 'direct' | 'remote';
}

export interface NatAttachOptions {
  /** The external (ingress) interface: tc_nat_in on its ingress, tc_nat_out on its egress. */
  readonly extIfindex: number;
  /** Devices that route to the pods: tc_nat_pod on their ingress (the SNAT that a CNI's masquerade
   * cannot undo). @default [] */
  readonly podIfindexes?: readonly number[];
  /** The VXLAN device (external, collect_md) for EN-9: tc_nat_tun on its ingress, and the device
   * juneau_nat_remote sends to. @default none: no direct ElasticIP of another node is carried */
  readonly tunnelIfindex?: number;
  /** The pin directory, the responder's (DEFAULT_PIN_DIR in responder.ts). */
  readonly pinDir: string;
  /** @default build/bpf/tc_nat.bpf.o of this package */
  readonly objectPath?: string;
  /** Inbound packets go through the kernel's forwarding (netfilter, conntrack) after the DNAT
   * instead of being redirected to the pod's device. @default false */
  readonly kernelForward?: boolean;
}

type Role = keyof typeof layout.NAT_PROGRAMS;

/** Where the pod holding NIC address `address` is, as this node sees it (resolvePodDevice). */
export type PodDeviceResolver = (address: string) => PodDevice;

function filterFor(role: Role, ifindex: number): TcFilter {
  return {
    ifindex,
    attachPoint: role === 'out' ? TC_ATTACH.EGRESS : TC_ATTACH.INGRESS,
    handle: role === 'pod' ? NAT_TC_POD_HANDLE : role === 'tun' ? NAT_TC_TUN_HANDLE : NAT_TC_HANDLE,
    priority: NAT_TC_PRIORITY,
  };
}

export function natProgramPinPath(pinDir: string, role: Role, ifindex: number): string {
  return path.join(pinDir, `${layout.NAT_PROGRAMS[role]}_if${ifindex}`);
}

/** Attaches (or replaces) the filter of `role` on `ifindex` with the loaded object's program, and
 * pins it. */
function attachRole(obj: BpfObject, pinDir: string, role: Role, ifindex: number): void {
  const fd = obj.programFd(layout.NAT_PROGRAMS[role]);
  libbpf.tcHookCreate(ifindex);
  libbpf.tcAttach(filterFor(role, ifindex), fd);
  pinProgram(fd, natProgramPinPath(pinDir, role, ifindex));
}

/** Loads tc_nat.bpf.o (adopting its pinned maps, pins.ts), attaches or replaces its filters, pins
 * the programs, and returns the maps. */
export function attachNat(options: NatAttachOptions): NatMaps {
  const obj = BpfObject.open(options.objectPath ?? findBuiltObject('tc_nat.bpf.o'));
  try {
    return loadPinned(obj, options.pinDir, () => {
      const maps = NatMaps.openPinned(options.pinDir);
      try {
        maps.setExternalInterface(options.extIfindex, options.kernelForward ?? false);
        const attach = (role: Role, ifindex: number) => attachRole(obj, options.pinDir, role, ifindex);
        attach('in', options.extIfindex);
        attach('out', options.extIfindex);
        for (const ifindex of options.podIfindexes ?? []) attach('pod', ifindex);
        if (options.tunnelIfindex) {
          attach('tun', options.tunnelIfindex);
          maps.setTunnel(options.tunnelIfindex);
        }
        return maps;
      } catch (err) {
        maps.close();
        throw err;
      }
    });
  } finally {
    obj.close();
  }
}

/** Attaches the filter of `role` alone to `ifindex`: the maps as pinned, the other filters untouched. */
function attachOne(pinDir: string, role: Role, ifindex: number, objectPath?: string): void {
  const obj = BpfObject.open(objectPath ?? findBuiltObject('tc_nat.bpf.o'));
  try {
    loadPinned(obj, pinDir, () => attachRole(obj, pinDir, role, ifindex));
  } finally {
    obj.close();
  }
}

/** EN-9: tc_nat_tun alone on the VXLAN device `tunnelIfindex`. */
export function attachNatTunnel(pinDir: string, tunnelIfindex: number, objectPath?: string): void {
  attachOne(pinDir, 'tun', tunnelIfindex, objectPath);
}

/** tc_nat_pod alone on `ifindex`, a device the node reaches its pods through
 * (runtime/agent/nat/pod-devices.ts). */
export function attachNatPod(pinDir: string, ifindex: number, objectPath?: string): void {
  attachOne(pinDir, 'pod', ifindex, objectPath);
}

/** The ifindexes with a pinned program of `role` (what an agent attached there and left). */
export function natPinnedDevices(pinDir: string, role: Role): number[] {
  const prefix = `${layout.NAT_PROGRAMS[role]}_if`;
  const names = fs.existsSync(pinDir) ? fs.readdirSync(pinDir) : [];
  return names
    .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
    .map((n) => Number(n.slice(prefix.length)))
    .sort((a, b) => a - b);
}

/** Removes the NAT filters of `roles` from `ifindex` (whichever of them are there) and unpins their
 * programs. Returns the roles that were attached. The maps stay pinned. */
export function detachNat(
  ifindex: number,
  pinDir: string,
  roles: readonly Role[] = Object.keys(layout.NAT_PROGRAMS) as Role[],
): Role[] {
  const removed: Role[] = [];
  for (const role of roles) {
    const attached = libbpf.tcQuery(filterFor(role, ifindex));
    if (attached === 0) {
      unlinkIfPresent(natProgramPinPath(pinDir, role, ifindex));
      continue;
    }
    // Only our own filter: same handle and priority, and (when pinned) the pinned program.
    const pinned = pinnedProgramId(natProgramPinPath(pinDir, role, ifindex));
    if (pinned !== undefined && pinned !== attached) continue;
    if (libbpf.tcDetach(filterFor(role, ifindex))) removed.push(role);
    unlinkIfPresent(natProgramPinPath(pinDir, role, ifindex));
  }
  return removed;
}

/** The program ids of the NAT filters on `ifindex` (0: none), for health checks and tests. */
export function natFilters(ifindex: number): Record<Role, number> {
  return {
    in: libbpf.tcQuery(filterFor('in', ifindex)),
    out: libbpf.tcQuery(filterFor('out', ifindex)),
    pod: libbpf.tcQuery(filterFor('pod', ifindex)),
    tun: libbpf.tcQuery(filterFor('tun', ifindex)),
  };
}

function pinnedProgramId(pinPath: string): number | undefined {
  if (!fs.existsSync(pinPath)) return undefined;
  const fd = libbpf.objGet(pinPath);
  try {
    return libbpf.progInfo(fd).id;
  } finally {
    libbpf.closeFd(fd);
  }
}

export interface NatSyncResult {
  readonly added: NatBinding[];
  readonly removed: NatBinding[];
  readonly directAdded: NatBinding[];
  readonly directRemoved: NatBinding[];
  readonly remoteAdded: RemoteBinding[];
  readonly remoteRemoved: RemoteBinding[];
}

/** A binding with the device of its pod, as the maps hold it. */
interface Bound extends NatBinding {
  readonly device: PodDevice;
}

const sameDevice = (a: PodDevice, b: PodDevice) => a.ifindex === b.ifindex && a.mac === b.mac;

/**
 * The writes that make a map of bindings hold `want` where it holds `have`, by ElasticIP: `added`,
 * what `want` holds that `have` lacks or binds otherwise (another address or device); `removed`,
 * deleted before those are written, what `want` drops, and also what it binds to another address
 * unless `inPlace` (the update then overwrites the entry with no gap). A new device alone is
 * always written in place.
 */
function bindingChanges(
  have: readonly Bound[],
  want: ReadonlyMap<string, Bound>,
  inPlace: boolean,
): { added: Bound[]; removed: Bound[] } {
  const had = new Map(have.map((h) => [h.elasticIP, h]));
  const removed = have.filter((h) => {
    const w = want.get(h.elasticIP);
    return w === undefined || (!inPlace && w.address !== h.address);
  });
  const added = [...want.values()].filter((w) => {
    const h = had.get(w.elasticIP);
    return h?.address !== w.address || !sameDevice(h.device, w.device);
  });
  return { added, removed };
}

const plain = ({ elasticIP, address }: NatBinding): NatBinding => ({ elasticIP, address });

const key = (address: string): Buffer => ipv4ToBytes(address);
const addr = (bytes: Buffer): string => ipv4FromBytes(bytes);

/** The pinned NAT maps. */
export class NatMaps {
  /** `resolve`: where the pod of a NIC address is (tests resolve in another network namespace).
   * @default resolvePodDevice, in the caller's network namespace */
  static openPinned(pinDir: string, resolve: PodDeviceResolver = resolvePodDevice): NatMaps {
    const opened: BpfMap[] = [];
    const open = (name: string, keySize: number, valueSize: number) => {
      const map = BpfMap.openPinned(path.join(pinDir, name));
      opened.push(map);
      if (map.keySize !== keySize || map.valueSize !== valueSize) {
        throw new Error(
          `${map.path}: key/value ${map.keySize}/${map.valueSize} bytes, layout/ expects ${keySize}/${valueSize}`,
        );
      }
      return map;
    };
    try {
      const n = layout.NAT_MAP_NAMES;
      return new NatMaps(
        open(n.in, layout.NAT_KEY.size, layout.NAT_VALUE.size),
        open(n.out, layout.NAT_KEY.size, layout.NAT_VALUE.size),
        open(n.direct, layout.NAT_KEY.size, layout.NAT_VALUE.size),
        open(n.counters, layout.NAT_KEY.size, layout.NAT_COUNTERS.size),
        open(n.config, 4, layout.NAT_CONFIG.size),
        open(n.skip, layout.GUARD_KEY.size, layout.NAT_SKIP_VALUE.size),
        open(n.stats, 4, layout.STATS_VALUE.size),
        open(n.remote, layout.NAT_KEY.size, layout.NAT_REMOTE.size),
        open(n.vni, layout.NAT_VNI_KEY.size, layout.NAT_VNI_VALUE.size),
        open(n.peers, layout.NAT_KEY.size, layout.NAT_PEER_VALUE.size),
        resolve,
      );
    } catch (err) {
      for (const map of opened) map.close();
      throw err;
    }
  }

  private readonly cpus = libbpf.numPossibleCpus();
  /** The VXLAN device remote bindings go through (EN-9); 0: none, and none are written. */
  private tunnelIfindex = 0;

  private constructor(
    readonly inMap: BpfMap,
    readonly outMap: BpfMap,
    readonly directMap: BpfMap,
    readonly countersMap: BpfMap,
    readonly configMap: BpfMap,
    readonly skipMap: BpfMap,
    readonly statsMap: BpfMap,
    readonly remoteMap: BpfMap,
    readonly vniMap: BpfMap,
    readonly peersMap: BpfMap,
    private readonly resolve: PodDeviceResolver,
  ) {}

  /** The VXLAN device of EN-9 (its ifindex in this network namespace), read back by sync(). */
  setTunnel(ifindex: number): void {
    this.tunnelIfindex = ifindex;
  }

  get tunnel(): number {
    return this.tunnelIfindex;
  }

  setExternalInterface(ifindex: number, kernelForward = false): void {
    this.configMap.update(layout.u32Key(0), layout.encodeNatConfig(ifindex, kernelForward));
  }

  /** The bindings, from juneau_nat_in (ElasticIP -> address). */
  bindings(): NatBinding[] {
    return this.bound(this.inMap).map(plain);
  }

  /** The direct ElasticIPs (DIR-1), from juneau_nat_direct (ElasticIP -> NIC address). */
  directBindings(): NatBinding[] {
    return this.bound(this.directMap).map(plain);
  }

  /** The bindings of juneau_nat_in or juneau_nat_direct with the devices of their pods (H1/M3). */
  devices(which: 'nat' | 'direct' = 'nat'): Bound[] {
    return this.bound(which === 'nat' ? this.inMap : this.directMap);
  }

  private bound(map: BpfMap): Bound[] {
    return map.entries().map(([k, v]) => {
      const { addr: a, device } = layout.decodeNatValue(v);
      return { elasticIP: addr(k), address: addr(a), device };
    });
  }

  /**
   * The pod device of each binding, resolved once per address per pass. A binding the maps hold
   * already (same ElasticIP, same address) keeps what it has: its device is the one its pod had
   * when it was written, and another device or MAC for the address later is another pod (H1: the
   * address was given again), which must not inherit the ElasticIP. Only what was not known is
   * filled in: the device (0), or the MAC the neighbour table has learned since on that device.
   */
  private withDevices<T extends NatBinding>(
    bindings: Iterable<T>,
    have: readonly Bound[],
  ): Map<string, T & { device: PodDevice }> {
    const held = new Map(have.map((h) => [h.elasticIP, h]));
    const devices = new Map<string, PodDevice>();
    const out = new Map<string, T & { device: PodDevice }>();
    for (const b of bindings) {
      let device = devices.get(b.address);
      if (!device) devices.set(b.address, (device = this.resolve(b.address)));
      const h = held.get(b.elasticIP);
      if (h?.address === b.address && h.device.ifindex !== 0) {
        const learned = !h.device.mac && device.ifindex === h.device.ifindex ? device.mac : undefined;
        device = learned ? { ifindex: h.device.ifindex, mac: learned } : h.device;
      }
      out.set(b.elasticIP, { ...b, device });
    }
    return out;
  }

  /** Resolves the pods' devices again and writes what was not known yet (withDevices): a binding
   * written before its pod's route, a MAC the neighbour table learned since; returns how many.
   * The agent calls it at every poll. */
  refreshDevices(): number {
    let changed = 0;
    for (const [map, which] of [
      [this.inMap, 'nat'],
      [this.directMap, 'direct'],
    ] as const) {
      const have = this.devices(which);
      const now = this.withDevices(have, have);
      for (const h of have) {
        const w = now.get(h.elasticIP)!;
        if (sameDevice(h.device, w.device)) continue;
        if (which === 'nat') this.outMap.update(key(w.address), layout.encodeNatValue(key(w.elasticIP), w.device));
        map.update(key(w.elasticIP), layout.encodeNatValue(key(w.address), w.device));
        changed++;
      }
    }
    return changed;
  }

  /** H3: the cluster's Nodes' addresses, the only outer sources tc_nat_tun accepts. Added before
   * the stale ones go. */
  setPeers(nodes: readonly string[]): void {
    const want = new Set(nodes);
    for (const node of want) this.peersMap.insert(key(node), Buffer.alloc(layout.NAT_PEER_VALUE.size));
    for (const k of this.peersMap.keys()) if (!want.has(addr(k))) this.peersMap.delete(k);
  }

  /** The outer sources tc_nat_tun accepts, from juneau_nat_peers. */
  peers(): string[] {
    return this.peersMap
      .keys()
      .map(addr)
      .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  }

  /**
   * Makes the maps hold exactly `desired`, each binding with its pod's device (`resolve`). Added:
   * counters (kept when present), then the outbound direction, then the inbound one, so the first
   * translated packet of either direction finds the other. Removed in the opposite order. Stale
   * juneau_nat_out keys (an address no binding has any more) and counters of ElasticIPs no longer
   * bound go too, and before anything is added (L11 of the security review: a full map, or a full
   * juneau_nat_cnt, still makes room for the new entries): nothing is left behind (NAT-4). An
   * address whose ElasticIP changed has its juneau_nat_out entry overwritten in place.
   */
  sync(
    desired: readonly NatBinding[],
    direct: readonly DirectBinding[] = [],
    remote: readonly RemoteBinding[] = [],
  ): NatSyncResult {
    const byAddress = new Map<string, string>();
    for (const { elasticIP, address } of desired) {
      const clash = byAddress.get(address);
      if (clash !== undefined && clash !== elasticIP) {
        throw new Error(
          `NIC address ${address} is bound to two ElasticIPs (${clash}, ${elasticIP}); a 1:1 NAT cannot translate it to both`,
        );
      }
      byAddress.set(address, elasticIP);
    }
    const have = this.devices('nat');
    const want = this.withDevices(desired.map(plain), have);
    const { added, removed } = bindingChanges(have, want, false);
    // Everything that goes, first (L11): bindings, then juneau_nat_out keys of addresses no binding
    // has, then counters of ElasticIPs that are not wanted anywhere.
    for (const b of removed) this.inMap.delete(key(b.elasticIP));
    for (const k of this.outMap.keys()) if (!byAddress.has(addr(k))) this.outMap.delete(k);
    const counted = new Set([
      ...want.keys(),
      ...direct.map((d) => d.elasticIP),
      ...(this.tunnelIfindex ? remote.filter((r) => r.vni > 0).map((r) => r.elasticIP) : []),
    ]);
    for (const k of this.countersMap.keys()) if (!counted.has(addr(k))) this.countersMap.delete(k);
    for (const b of added) {
      this.startCounting(b.elasticIP);
      this.outMap.update(key(b.address), layout.encodeNatValue(key(b.elasticIP), b.device));
      this.inMap.update(key(b.elasticIP), layout.encodeNatValue(key(b.address), b.device));
    }
    const { directAdded, directRemoved } = this.syncDirect(direct, want);
    const { remoteAdded, remoteRemoved } = this.syncRemote(remote, want, direct);
    this.syncVnis(direct);
    return {
      added: added.map(plain),
      removed: removed.map(plain),
      directAdded,
      directRemoved,
      remoteAdded,
      remoteRemoved,
    };
  }

  /** EN-9: the direct ElasticIPs of other nodes, from juneau_nat_remote. */
  remoteBindings(): RemoteBinding[] {
    return this.remoteMap.entries().map(([k, v]) => {
      const r = layout.decodeNatRemote(v);
      return { elasticIP: addr(k), node: addr(r.node), vni: r.vni };
    });
  }

  /** The VNIs accepted on the VXLAN device (EN-9), from juneau_nat_vni. */
  acceptedVnis(): number[] {
    return this.vniMap
      .keys()
      .map(layout.decodeNatVniKey)
      .sort((a, b) => a - b);
  }

  /** Remote bindings, written only with a VXLAN device to send through and a VNI (EN-8: 0 is none). */
  private syncRemote(
    remote: readonly RemoteBinding[],
    nat: ReadonlyMap<string, NatBinding>,
    direct: readonly DirectBinding[],
  ): Pick<NatSyncResult, 'remoteAdded' | 'remoteRemoved'> {
    const local = new Set(direct.map((d) => d.elasticIP));
    const want = new Map<string, RemoteBinding>();
    for (const r of this.tunnelIfindex ? remote : []) {
      if (nat.has(r.elasticIP) || local.has(r.elasticIP))
        throw new Error(`ElasticIP ${r.elasticIP} is held on this node and on node ${r.node} at once (EIP-5)`);
      if (r.vni > 0) want.set(r.elasticIP, r);
    }
    // An entry of another device (the agent made it anew, with a new ifindex) is rewritten too.
    const have = new Map(
      this.remoteMap.entries().map(([k, v]) => {
        const r = layout.decodeNatRemote(v);
        return [addr(k), { elasticIP: addr(k), node: addr(r.node), vni: r.vni, ifindex: r.ifindex }] as const;
      }),
    );
    const same = (a: RemoteBinding, b: (RemoteBinding & { ifindex: number }) | undefined) =>
      b?.node === a.node && b.vni === a.vni && b.ifindex === this.tunnelIfindex;
    const remoteAdded: RemoteBinding[] = [];
    const remoteRemoved: RemoteBinding[] = [];
    for (const [elasticIP, r] of have) {
      if (want.has(elasticIP)) continue; // kept, or overwritten in place below: no gap
      this.remoteMap.delete(key(elasticIP));
      remoteRemoved.push({ elasticIP, node: r.node, vni: r.vni });
    }
    for (const [elasticIP, r] of want) {
      if (same(r, have.get(elasticIP))) continue;
      this.startCounting(elasticIP);
      this.remoteMap.update(key(elasticIP), layout.encodeNatRemote(key(r.node), r.vni, this.tunnelIfindex));
      remoteAdded.push(r);
    }
    return { remoteAdded, remoteRemoved };
  }

  /** The VNIs of this node's direct ElasticIPs: what tc_nat_tun accepts. Written after the direct
   * bindings, so an accepted VNI finds its ElasticIP. */
  private syncVnis(direct: readonly DirectBinding[]): void {
    const want = new Set(direct.map((d) => d.vni ?? 0).filter((v) => v > 0));
    for (const k of this.vniMap.keys()) if (!want.has(layout.decodeNatVniKey(k))) this.vniMap.delete(k);
    for (const vni of want) this.vniMap.insert(layout.encodeNatVniKey(vni), Buffer.alloc(layout.NAT_VNI_VALUE.size));
  }

  private syncDirect(
    direct: readonly NatBinding[],
    nat: ReadonlyMap<string, NatBinding>,
  ): Pick<NatSyncResult, 'directAdded' | 'directRemoved'> {
    for (const { elasticIP, address } of direct) {
      if (nat.has(elasticIP))
        throw new Error(
          `ElasticIP ${elasticIP} is both translated (to ${nat.get(elasticIP)?.address}) and held directly by ${address} (EIP-5)`,
        );
    }
    const have = this.devices('direct');
    const want = this.withDevices(direct.map(plain), have);
    // Nothing is translated: a direct ElasticIP that moved to another NIC is overwritten in place.
    const { added, removed } = bindingChanges(have, want, true);
    for (const b of removed) this.directMap.delete(key(b.elasticIP));
    for (const b of added) {
      this.startCounting(b.elasticIP);
      this.directMap.update(key(b.elasticIP), layout.encodeNatValue(key(b.address), b.device));
    }
    return { directAdded: added.map(plain), directRemoved: removed.map(plain) };
  }

  /** Zeroed counters for an ElasticIP, unless it has some (insert keeps an existing entry). */
  private startCounting(elasticIP: string): void {
    this.countersMap.insert(key(elasticIP), Buffer.alloc(layout.perCpuValueSize(layout.NAT_COUNTERS.size, this.cpus)));
  }

  /** Bindings with their counters, summed over CPUs. */
  entries(): NatEntry[] {
    const counters = new Map(
      this.countersMap
        .entries(layout.perCpuValueSize(layout.NAT_COUNTERS.size, this.cpus))
        .map(([k, v]) => [addr(k), layout.sumNatCounters(v, this.cpus)]),
    );
    const zero: NatCounters = { inPackets: 0n, inBytes: 0n, outPackets: 0n, outBytes: 0n };
    return [
      ...this.bindings().map((b) => ({ ...b, kind: 'nat' as const })),
      ...this.directBindings().map((b) => ({ ...b, kind: 'direct' as const })),
      ...this.remoteBindings().map((r) => ({ elasticIP: r.elasticIP, address: r.node, kind: 'remote' as const })),
    ]
      .map((b) => ({ ...b, ...(counters.get(b.elasticIP) ?? zero) }))
      .sort((a, b) => a.elasticIP.localeCompare(b.elasticIP, undefined, { numeric: true }));
  }

  /** Destinations that keep the pod address (NAT-2): replaces the whole set. Added before the
   * stale ones go, so a destination in both the old and the new set never misses. */
  setInClusterPrefixes(prefixes: readonly Prefix[]): void {
    const want = new Set(prefixes.map((p) => layout.encodeGuardKey(p).toString('hex')));
    this.addInClusterPrefixes(prefixes);
    for (const k of this.skipMap.keys()) if (!want.has(k.toString('hex'))) this.skipMap.delete(k);
  }

  /** Adds destinations that keep the pod address (NAT-2), keeping the others (and their hits). */
  addInClusterPrefixes(prefixes: readonly Prefix[]): void {
    for (const p of prefixes) this.skipMap.insert(layout.encodeGuardKey(p), Buffer.alloc(layout.NAT_SKIP_VALUE.size));
  }

  /** Exit reasons of the NAT programs, summed over CPUs. */
  stats(): Record<NatReasonName, bigint> {
    return reasonStats(this.statsMap, layout.NAT_REASONS, 'JUNEAU_NAT_REASON_MAX', this.cpus);
  }

  close(): void {
    for (const map of [
      this.inMap,
      this.outMap,
      this.directMap,
      this.countersMap,
      this.configMap,
      this.skipMap,
      this.statsMap,
      this.remoteMap,
      this.vniMap,
      this.peersMap,
    ])
      map.close();
  }
}
