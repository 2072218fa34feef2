// The ElasticIP 1:1 NAT programs' maps (bpf/tc_nat.bpf.c; structs in bpf/juneau_maps.h).
import { macFromBytes, macToBytes } from '../addr';
import { alignUp, cStruct, fieldOffset as f, type StructLayout } from './common';

export const NAT_MAP_NAMES = {
  in: 'juneau_nat_in',
  out: 'juneau_nat_out',
  direct: 'juneau_nat_direct',
  counters: 'juneau_nat_cnt',
  config: 'juneau_nat_cfg',
  skip: 'juneau_nat_skip',
  stats: 'juneau_nat_stats',
  remote: 'juneau_nat_remote',
  vni: 'juneau_nat_vni',
  peers: 'juneau_nat_peers',
} as const;

export const NAT_PROGRAMS = { in: 'tc_nat_in', out: 'tc_nat_out', pod: 'tc_nat_pod', tun: 'tc_nat_tun' } as const;

export const NAT_CONFIG_FLAGS = { JUNEAU_NAT_CFG_KERNEL_FORWARD: 1 << 0 } as const;

export const NAT_LIMITS = {
  JUNEAU_NAT_MAX: 65536,
  JUNEAU_NAT_SKIP_MAX: 16384,
  JUNEAU_NAT_VNI_MAX: 4096,
  JUNEAU_NAT_PEERS_MAX: 16384,
} as const;

/** enum juneau_nat_reason: slot numbers of juneau_nat_stats. */
export const NAT_REASONS = {
  JUNEAU_NAT_PASS_NOT_IPV4: 0,
  JUNEAU_NAT_PASS_TRUNCATED: 1,
  JUNEAU_NAT_PASS_MALFORMED: 2,
  JUNEAU_NAT_PASS_UNMAPPED: 3,
  JUNEAU_NAT_PASS_ICMP_MALFORMED: 4,
  JUNEAU_NAT_PASS_REWRITE_FAILED: 5,
  JUNEAU_NAT_DNAT: 6,
  JUNEAU_NAT_SNAT: 7,
  JUNEAU_NAT_PASS_IN_CLUSTER: 8,
  JUNEAU_NAT_PASS_NOT_EXTERNAL: 9,
  JUNEAU_NAT_PASS_ROUTE: 10,
  JUNEAU_NAT_SNAT_REDIRECT: 11,
  JUNEAU_NAT_EVENT_FRAGMENT: 12,
  JUNEAU_NAT_EVENT_ICMP_ERROR: 13,
  JUNEAU_NAT_DNAT_REDIRECT: 14,
  JUNEAU_NAT_DIRECT_IN: 15,
  JUNEAU_NAT_DIRECT_OUT: 16,
  JUNEAU_NAT_REMOTE_ENCAP: 17,
  JUNEAU_NAT_PASS_TUNNEL_KEY: 18,
  JUNEAU_NAT_PASS_NO_TUNNEL: 19,
  JUNEAU_NAT_DROP_TUNNEL_VNI: 20,
  JUNEAU_NAT_DROP_TUNNEL_UNMAPPED: 21,
  JUNEAU_NAT_EVENT_TUNNEL_IN: 22,
  JUNEAU_NAT_PASS_OTHER_HOST: 23,
  JUNEAU_NAT_PASS_WRONG_DEVICE: 24,
  JUNEAU_NAT_DROP_SPOOFED: 25,
  JUNEAU_NAT_DROP_TUNNEL_PEER: 26,
  JUNEAU_NAT_PASS_TO_ELASTIC_IP: 27,
  JUNEAU_NAT_REASON_MAX: 28,
} as const;

export type NatReasonName = Exclude<keyof typeof NAT_REASONS, 'JUNEAU_NAT_REASON_MAX'>;

export const NAT_KEY = cStruct('juneau_nat_key', [['addr', 4]]);
/** juneau_nat_in/out/direct values: the other side of the binding, and where its pod is (H1/M3). */
export const NAT_VALUE = cStruct('juneau_nat_value', [
  ['addr', 4],
  ['ifindex', 4],
  ['mac', 6],
  ['pad', 2],
]);
export const NAT_COUNTERS = cStruct('juneau_nat_counters', [
  ['in_packets', 8],
  ['in_bytes', 8],
  ['out_packets', 8],
  ['out_bytes', 8],
]);
export const NAT_CONFIG = cStruct('juneau_nat_config', [
  ['ext_ifindex', 4],
  ['flags', 4],
]);
export const NAT_SKIP_VALUE = cStruct('juneau_nat_skip_value', [['hits', 8]]);

/** juneau_nat_remote (EN-9): a direct ElasticIP of another node -> its node, VNI, VXLAN device. */
export const NAT_REMOTE = cStruct('juneau_nat_remote', [
  ['node', 4],
  ['vni', 4],
  ['ifindex', 4],
  ['pad', 4],
]);
export const NAT_VNI_KEY = cStruct('juneau_nat_vni_key', [['vni', 4]]);
export const NAT_VNI_VALUE = cStruct('juneau_nat_vni_value', [['packets', 8]]);
export const NAT_PEER_VALUE = cStruct('juneau_nat_peer_value', [['packets', 8]]);

/** The NAT structs, checked against the BTF of build/bpf/tc_nat.bpf.o. */
export const NAT_STRUCTS: readonly StructLayout[] = [
  NAT_KEY,
  NAT_VALUE,
  NAT_COUNTERS,
  NAT_CONFIG,
  NAT_SKIP_VALUE,
  NAT_REMOTE,
  NAT_VNI_KEY,
  NAT_VNI_VALUE,
  NAT_PEER_VALUE,
];

export interface NatCounters {
  readonly inPackets: bigint;
  readonly inBytes: bigint;
  readonly outPackets: bigint;
  readonly outBytes: bigint;
}

/** Sums a per-CPU juneau_nat_counters value (one 32-byte slot per possible CPU). */
export function sumNatCounters(value: Buffer, cpus: number): NatCounters {
  const stride = alignUp(NAT_COUNTERS.size, 8);
  const sum = (field: string): bigint => {
    let total = 0n;
    for (let cpu = 0; cpu < cpus; cpu++) total += value.readBigUInt64LE(cpu * stride + f(NAT_COUNTERS, field));
    return total;
  };
  return {
    inPackets: sum('in_packets'),
    inBytes: sum('in_bytes'),
    outPackets: sum('out_packets'),
    outBytes: sum('out_bytes'),
  };
}

/** juneau_nat_cfg[0]. `kernelForward`: inbound goes through the kernel's forwarding (netfilter,
 * conntrack) instead of a redirect. */
export function encodeNatConfig(extIfindex: number, kernelForward = false): Buffer {
  const value = Buffer.alloc(NAT_CONFIG.size);
  value.writeUInt32LE(extIfindex, f(NAT_CONFIG, 'ext_ifindex'));
  value.writeUInt32LE(kernelForward ? NAT_CONFIG_FLAGS.JUNEAU_NAT_CFG_KERNEL_FORWARD : 0, f(NAT_CONFIG, 'flags'));
  return value;
}

/** Where the pod of a binding is: its host-side device (0: unknown, nothing is translated) and its
 * MAC (undefined: not checked). */
export interface PodDevice {
  readonly ifindex: number;
  readonly mac?: string;
}

/** A juneau_nat_in/out/direct value: `addr` (IPv4 bytes, network order) and the pod's device. */
export function encodeNatValue(addr: Buffer, device: PodDevice): Buffer {
  const value = Buffer.alloc(NAT_VALUE.size);
  addr.copy(value, f(NAT_VALUE, 'addr'));
  value.writeUInt32LE(device.ifindex, f(NAT_VALUE, 'ifindex'));
  if (device.mac) macToBytes(device.mac).copy(value, f(NAT_VALUE, 'mac'));
  return value;
}

export function decodeNatValue(value: Buffer): { addr: Buffer; device: PodDevice } {
  const mac = value.subarray(f(NAT_VALUE, 'mac'), f(NAT_VALUE, 'mac') + 6);
  return {
    addr: value.subarray(f(NAT_VALUE, 'addr'), f(NAT_VALUE, 'addr') + 4),
    device: {
      ifindex: value.readUInt32LE(f(NAT_VALUE, 'ifindex')),
      ...(mac.some((b) => b !== 0) ? { mac: macFromBytes(mac) } : {}),
    },
  };
}

/** juneau_nat_remote value: `node` (IPv4 bytes, network order) reached through `ifindex` with `vni`. */
export function encodeNatRemote(node: Buffer, vni: number, ifindex: number): Buffer {
  const value = Buffer.alloc(NAT_REMOTE.size);
  node.copy(value, f(NAT_REMOTE, 'node'));
  value.writeUInt32LE(vni, f(NAT_REMOTE, 'vni'));
  value.writeUInt32LE(ifindex, f(NAT_REMOTE, 'ifindex'));
  return value;
}

export function decodeNatRemote(value: Buffer): { node: Buffer; vni: number; ifindex: number } {
  return {
    node: value.subarray(f(NAT_REMOTE, 'node'), f(NAT_REMOTE, 'node') + 4),
    vni: value.readUInt32LE(f(NAT_REMOTE, 'vni')),
    ifindex: value.readUInt32LE(f(NAT_REMOTE, 'ifindex')),
  };
}

export function encodeNatVniKey(vni: number): Buffer {
  const key = Buffer.alloc(NAT_VNI_KEY.size);
  key.writeUInt32LE(vni, f(NAT_VNI_KEY, 'vni'));
  return key;
}

export function decodeNatVniKey(key: Buffer): number {
  return key.readUInt32LE(f(NAT_VNI_KEY, 'vni'));
}
