/**
 * The agent's NAT programs on this node (bpf/tc_nat.bpf.c through runtime/agent/bpf/nat.ts): attached beside the
 * ARP responder, on the same ingress interface, with its maps pinned in the same directory, so
 * that translation goes on while the agent restarts (NAT-4) and the next agent adopts the maps.
 *
 * Why the pod-facing hook exists: a CNI that masquerades pod traffic leaving the node rewrites the
 * pod address in POSTROUTING, before tc_nat_out at the ingress interface's egress could see it, and
 * the kernel's forwarding confirms a conntrack entry on the way. tc_nat_pod, on the devices packets
 * from the pods enter the node by, translates first and sends the packet straight to the ingress
 * interface, so it never meets the masquerade rule (NAT-2) nor leaves a conntrack entry (NAT-4).
 * Those devices are found from where the pods' addresses are routed and followed as pods come and
 * go (pod-devices.ts); `--nat-pod-ifaces` names them instead, and then exactly those.
 *
 * `--nat-kernel-forward` (M2 of the security review): inbound packets, once translated, go through
 * the kernel's forwarding (netfilter, conntrack: NetworkPolicy and host firewalls apply) instead
 * of a redirect straight to the pod's device.
 *
 * EN-9: the VXLAN device `juneau-vxlan` (runtime/agent/nat/vxlan.ts) carries packets for a direct
 * ElasticIP that reach this node while its pod is on another. It exists only while a direct
 * ElasticIP needs it (H3 of the security review: a decapsulator is an open door), bound to this
 * node's InternalIP and the device that has it, up only once tc_nat_tun is attached, removed when
 * attaching fails. Without it (it could not be made, e.g. UDP 4789 taken by another VXLAN device)
 * the rest of the data plane still runs, and the caller is told why.
 */
import * as os from 'node:os';
import { ifNameToIndex } from '../bpf';
import { attachNat, attachNatTunnel, detachNat, natFilters, type NatMaps } from '../bpf/nat';
import type { DirectBinding, NatBinding, NatEntry, NatSyncResult, RemoteBinding } from '../bpf/nat';
import type { NatReasonName, Prefix } from '../bpf/layout';
import { poolItemsToPrefixes } from '../bpf/prefixes';
import { parseClusterCidrs } from './prefixes';
import type { AgentFlags } from '../flags';
import type { NatDatapath } from './sync';
import { PodDevices, detachPodDevices, type PodDeviceReport } from './pod-devices';
import { VXLAN_DEVICE, deleteVxlanDevice, ensureVxlanDevice, setLinkUp, type VxlanUnderlay } from './vxlan';

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** The pod-facing devices' ifindexes; an error names the flag and the device. */
function podIfindexes(flags: Pick<AgentFlags, 'natPodIfaces'>): number[] {
  return list(flags.natPodIfaces).map((name) => {
    try {
      return ifNameToIndex(name);
    } catch (err) {
      throw new Error(`--nat-pod-ifaces: no interface '${name}' on this node (${(err as Error).message})`);
    }
  });
}

function ifindexOrZero(name: string): number {
  try {
    return ifNameToIndex(name);
  } catch {
    return 0;
  }
}

/** The device of this network namespace that has IPv4 address `address`, or undefined. */
function deviceWithAddress(address: string): number | undefined {
  for (const [name, addresses] of Object.entries(os.networkInterfaces())) {
    if (addresses?.some((a) => a.family === 'IPv4' && a.address === address)) return ifindexOrZero(name) || undefined;
  }
  return undefined;
}

/** Whether these bindings need the VXLAN device: a direct ElasticIP of this node to receive
 * (tc_nat_tun), or one of another node to send to, with a VNI (EN-8: 0 is none). */
export function tunnelNeeded(direct: readonly DirectBinding[], remote: readonly RemoteBinding[]): boolean {
  return direct.some((d) => (d.vni ?? 0) > 0) || remote.some((r) => r.vni > 0);
}

export interface NatDataplaneOptions {
  readonly pinDir: string;
  /** @default build/bpf/tc_nat.bpf.o of this package */
  readonly objectPath?: string;
  /** Told why the VXLAN device could not be made or attached (EN-9 then carries nothing). */
  readonly onTunnelError?: (err: Error) => void;
  /** Where tc_nat_pod goes (pod-devices.ts). @default none: followPods attaches nothing */
  readonly podDevices?: PodDevices;
}

/**
 * The NAT maps with the VXLAN device made and removed as the bindings need it (H3): the datapath
 * NatSync writes through.
 */
export class NatDataplane implements NatDatapath {
  /** This node's InternalIP (the device's only address), from the Node list; undefined: not known yet. */
  private self: string | undefined;
  /** Whether the device's state was decided by this agent yet: an earlier agent's is not trusted. */
  private decided = false;

  constructor(
    readonly maps: NatMaps,
    private readonly options: NatDataplaneOptions,
  ) {}

  /** The VXLAN device's ifindex, 0 while there is none. */
  get tunnel(): number {
    return this.maps.tunnel;
  }

  /** H3: the cluster's Nodes (their InternalIPs), the only VXLAN sources accepted, and this node's. */
  setNodes(self: string | undefined, nodes: readonly string[]): void {
    this.self = self;
    this.maps.setPeers(nodes);
  }

  sync(nat: readonly NatBinding[], direct: readonly DirectBinding[], remote: readonly RemoteBinding[]): NatSyncResult {
    const needed = tunnelNeeded(direct, remote);
    if (needed) this.ensureTunnel();
    const result = this.maps.sync(nat, direct, remote);
    if (!needed) this.removeTunnel();
    return result;
  }

  refreshDevices(): number {
    return this.maps.refreshDevices();
  }

  /** tc_nat_pod on the devices this node's pods (their addresses) are reached through (NAT-2, NAT-4). */
  followPods(addresses: readonly string[]): PodDeviceReport | undefined {
    return this.options.podDevices?.follow(addresses);
  }

  setInClusterPrefixes(prefixes: readonly Prefix[]): void {
    this.maps.setInClusterPrefixes(prefixes);
  }

  entries(): NatEntry[] {
    return this.maps.entries();
  }

  stats(): Record<NatReasonName, bigint> {
    return this.maps.stats();
  }

  /** The device made down, tc_nat_tun attached, then up; on any failure, removed again. */
  private ensureTunnel(): void {
    if (this.decided && this.maps.tunnel && natFilters(this.maps.tunnel).tun !== 0) return;
    let ifindex = 0;
    try {
      const underlay = this.underlay();
      ifindex = ensureVxlanDevice(underlay);
      attachNatTunnel(this.options.pinDir, ifindex, this.options.objectPath);
      setLinkUp(ifindex, VXLAN_DEVICE);
      this.maps.setTunnel(ifindex);
    } catch (err) {
      this.maps.setTunnel(0);
      if (ifindex) detachNat(ifindex, this.options.pinDir);
      deleteVxlanDevice(VXLAN_DEVICE);
      this.options.onTunnelError?.(err as Error);
    }
    this.decided = true;
  }

  /** No direct ElasticIP needs the device (or an earlier agent left one): it goes, with its filter. */
  private removeTunnel(): void {
    if (this.decided && !this.maps.tunnel) return;
    this.maps.setTunnel(0);
    const ifindex = ifindexOrZero(VXLAN_DEVICE);
    if (ifindex) {
      detachNat(ifindex, this.options.pinDir);
      deleteVxlanDevice(VXLAN_DEVICE);
    }
    this.decided = true;
  }

  private underlay(): VxlanUnderlay {
    if (!this.self)
      throw new Error(`${VXLAN_DEVICE} is not made: this node's InternalIP is not known (its Node object)`);
    const link = deviceWithAddress(this.self);
    if (!link) throw new Error(`${VXLAN_DEVICE} is not made: no device of this node has its InternalIP ${this.self}`);
    return { local: this.self, link };
  }
}

export function attachNatDataplane(
  flags: Pick<AgentFlags, 'natPodIfaces' | 'natClusterCidrs' | 'natKernelForward'>,
  external: { readonly ifindex: number; readonly name: string },
  pinDir: string,
  onTunnelError: (err: Error) => void = () => undefined,
): NatDataplane {
  const prefixes = poolItemsToPrefixes(parseClusterCidrs(flags.natClusterCidrs));
  const extIfindex = external.ifindex;
  // --nat-pod-ifaces: exactly those, attached now; else the pods' devices, found at each pass.
  const fixed = flags.natPodIfaces ? podIfindexes(flags) : undefined;
  const maps = attachNat({ extIfindex, podIfindexes: fixed, pinDir, kernelForward: flags.natKernelForward });
  try {
    // Added, not replaced: the pinned set also holds what the last agent learned from the API
    // (NatSync), and must keep it until this agent's informers have synced (NAT-4).
    maps.addInClusterPrefixes(prefixes);
  } catch (err) {
    maps.close();
    throw err;
  }
  return new NatDataplane(maps, { pinDir, onTunnelError, podDevices: new PodDevices({ pinDir, external, fixed }) });
}

/** Removes the NAT filters (uninstall, --detach-on-exit); the maps stay until the pins go. */
/** H3: whether `juneau-vxlan` exists without its tc_nat_tun filter (the agent's liveness check: a
 * decapsulator never runs unfiltered; the device is made down and brought up only once filtered). */
export function tunnelWithoutFilter(): boolean {
  const ifindex = ifindexOrZero(VXLAN_DEVICE);
  return ifindex !== 0 && natFilters(ifindex).tun === 0;
}

export function detachNatDataplane(flags: Pick<AgentFlags, 'natPodIfaces'>, extIfindex: number, pinDir: string): void {
  detachNat(extIfindex, pinDir);
  detachPodDevices(pinDir, podIfindexes(flags));
  // The VXLAN device goes with its filter (EN-9).
  const tunnel = ifindexOrZero(VXLAN_DEVICE);
  if (!tunnel) return; // never made: nothing to remove
  detachNat(tunnel, pinDir);
  deleteVxlanDevice(VXLAN_DEVICE);
}
