/**
 * The agent's NAT programs on this node (bpf/tc_nat.bpf.c through runtime/agent/bpf/nat.ts): attached beside the
 * ARP responder, on the same ingress interface, with its maps pinned in the same directory, so
 * that translation goes on while the agent restarts (NAT-4) and the next agent adopts the maps.
 *
 * What a CNI must not do, and why the pod-facing hook exists: a CNI that masquerades pod traffic
 * leaving the node rewrites the pod address in POSTROUTING, before tc_nat_out at the ingress
 * interface's egress could see it. `--nat-pod-ifaces` names the devices packets from the pods
 * enter the node by (a bridge such as cni0; per-pod veths are not enumerated here): tc_nat_pod
 * translates there and sends the packet straight to the ingress interface, so it never meets the
 * masquerade rule (NAT-2). Without it, the CNI must exclude the pods' NAT addresses from its
 * masquerade (README "ElasticIP data plane").
 *
 * EN-9: the VXLAN device `juneau-vxlan` (runtime/agent/nat/vxlan.ts) carries packets for a direct
 * ElasticIP that reach this node while its pod is on another. Without it (it could not be made,
 * e.g. UDP 4789 taken by another VXLAN device) the rest of the data plane still runs, and the
 * caller is told why.
 */
import { ifNameToIndex } from '../bpf';
import { attachNat, detachNat, type NatMaps } from '../bpf/nat';
import { poolItemsToPrefixes } from '../bpf/prefixes';
import { parseClusterCidrs } from './prefixes';
import type { AgentFlags } from '../flags';
import { VXLAN_DEVICE, deleteVxlanDevice, ensureVxlanDevice } from './vxlan';

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

export function attachNatDataplane(
  flags: Pick<AgentFlags, 'natPodIfaces' | 'natClusterCidrs'>,
  extIfindex: number,
  pinDir: string,
  onTunnelError: (err: Error) => void = () => undefined,
): NatMaps {
  const prefixes = poolItemsToPrefixes(parseClusterCidrs(flags.natClusterCidrs));
  const pods = podIfindexes(flags);
  let tunnelIfindex: number | undefined;
  try {
    tunnelIfindex = ensureVxlanDevice();
  } catch (err) {
    onTunnelError(err as Error);
  }
  const maps = attachNat({ extIfindex, podIfindexes: pods, pinDir, tunnelIfindex });
  try {
    // Added, not replaced: the pinned set also holds what the last agent learned from the API
    // (NatSync), and must keep it until this agent's informers have synced (NAT-4).
    maps.addInClusterPrefixes(prefixes);
  } catch (err) {
    maps.close();
    throw err;
  }
  return maps;
}

/** Removes the NAT filters (uninstall, --detach-on-exit); the maps stay until the pins go. */
export function detachNatDataplane(flags: Pick<AgentFlags, 'natPodIfaces'>, extIfindex: number, pinDir: string): void {
  detachNat(extIfindex, pinDir);
  for (const ifindex of podIfindexes(flags)) detachNat(ifindex, pinDir);
  // The VXLAN device goes with its filter (EN-9).
  let tunnel = 0;
  try {
    tunnel = ifNameToIndex(VXLAN_DEVICE);
  } catch {
    return; // never made: nothing to remove
  }
  detachNat(tunnel, pinDir);
  deleteVxlanDevice(VXLAN_DEVICE);
}
