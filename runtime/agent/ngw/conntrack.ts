// A gateway's flows as the kernel's connection tracking holds them on the gateway node (NGW-5,
// NGW-8): every entry whose reply goes to the gateway address is a flow translated to it (the
// reply tuple's destination is the translated source). Read through ctnetlink (NETLINK_NETFILTER,
// the interface `conntrack -L` uses; /proc/net/nf_conntrack is an optional, deprecated kernel
// option), with the kernel filtering the dump on that address (CTA_FILTER, Linux 5.10+; an older
// kernel sends every entry and the address is checked here too). The image has no `conntrack`.
//
// Bounded: a dump is streamed message by message through one 64 KiB buffer, and counted into a
// FlowTally (a bitset of 8 KiB per protocol for the ports, and at most `listLimit` flows kept), so
// reading a gateway with 100,000 flows costs their messages' parsing, never their list.
import { ipv4FromBytes, ipv4ToBytes } from '../bpf/addr';
import { AF_INET, NLMSG_HDRLEN, attr } from '../netlink';
import { attributesFrom, dumpEach } from './rtnl';

export const NGW_PROTOCOLS = ['tcp', 'udp', 'icmp'] as const;
export type NgwProtocol = (typeof NGW_PROTOCOLS)[number];
const PROTOCOL_NUMBERS: Readonly<Record<number, NgwProtocol>> = { 6: 'tcp', 17: 'udp', 1: 'icmp' };

/** One translated flow: the pod's side (source), the gateway's port for it, and where it goes. */
export interface NgwFlow {
  readonly protocol: NgwProtocol;
  readonly source: string;
  /** The pod's source port (ICMP: its echo identifier). */
  readonly sourcePort: number;
  /** The translated source port (ICMP: identifier) from the gateway's range. */
  readonly port: number;
  readonly destination: string;
  /** 0 for ICMP. */
  readonly destinationPort: number;
  /** TCP only: the conntrack state (ESTABLISHED, TIME_WAIT, ...). */
  readonly state?: string;
}

// linux/netfilter/nfnetlink.h, nfnetlink_conntrack.h
const NETLINK_NETFILTER = 12;
const NFNL_SUBSYS_CTNETLINK = 1;
const IPCTNL_MSG_CT_GET = 1;
const NFGENMSG_LEN = 4;
const NLA_F_NESTED = 0x8000;
const CTA = { TUPLE_ORIG: 1, TUPLE_REPLY: 2, PROTOINFO: 4, FILTER: 25 } as const;
const CTA_TUPLE = { IP: 1, PROTO: 2 } as const;
const CTA_IP_V4 = { SRC: 1, DST: 2 } as const;
const CTA_PROTO = { NUM: 1, SRC_PORT: 2, DST_PORT: 3, ICMP_ID: 4 } as const;
const CTA_PROTOINFO_TCP = 1;
const CTA_PROTOINFO_TCP_STATE = 1;
const CTA_FILTER_REPLY_FLAGS = 2;
/** net/netfilter/nf_conntrack_netlink.c CTA_FILTER_F_CTA_IP_DST. */
const CTA_FILTER_F_CTA_IP_DST = 1 << 1;
/** enum tcp_conntrack. */
const TCP_STATES = [
  'NONE',
  'SYN_SENT',
  'SYN_RECV',
  'ESTABLISHED',
  'FIN_WAIT',
  'CLOSE_WAIT',
  'LAST_ACK',
  'TIME_WAIT',
  'CLOSE',
  'SYN_SENT2',
];

interface Tuple {
  readonly protocol: number;
  readonly src: string;
  readonly dst: string;
  readonly srcPort: number;
  readonly dstPort: number;
}

function tuple(payload: Buffer | undefined): Tuple | undefined {
  if (!payload) return undefined;
  const t = attributesFrom(payload, 0);
  const ip = attributesFrom(t.get(CTA_TUPLE.IP) ?? Buffer.alloc(0), 0);
  const proto = attributesFrom(t.get(CTA_TUPLE.PROTO) ?? Buffer.alloc(0), 0);
  const src = ip.get(CTA_IP_V4.SRC);
  const dst = ip.get(CTA_IP_V4.DST);
  const num = proto.get(CTA_PROTO.NUM);
  if (src?.length !== 4 || dst?.length !== 4 || !num) return undefined;
  const be16 = (b: Buffer | undefined) => (b && b.length >= 2 ? b.readUInt16BE(0) : 0);
  const icmpId = proto.get(CTA_PROTO.ICMP_ID);
  return {
    protocol: num.readUInt8(0),
    src: ipv4FromBytes(src),
    dst: ipv4FromBytes(dst),
    // ICMP: the identifier stands for both ports (NAT rewrites it as it would a source port).
    srcPort: icmpId ? be16(icmpId) : be16(proto.get(CTA_PROTO.SRC_PORT)),
    dstPort: icmpId ? be16(icmpId) : be16(proto.get(CTA_PROTO.DST_PORT)),
  };
}

/**
 * One ctnetlink message (IPCTNL_MSG_CT_NEW, as a dump answers) as a flow translated to `address`;
 * undefined for an entry that is not one (another address, another protocol, a malformed message).
 */
export function parseConntrackMessage(msg: Buffer, address: string): NgwFlow | undefined {
  const top = attributesFrom(msg.subarray(0, Math.min(msg.length, msg.readUInt32LE(0))), NLMSG_HDRLEN + NFGENMSG_LEN);
  const orig = tuple(top.get(CTA.TUPLE_ORIG));
  const reply = tuple(top.get(CTA.TUPLE_REPLY));
  if (!orig || !reply || reply.dst !== address) return undefined;
  const protocol = PROTOCOL_NUMBERS[orig.protocol];
  if (!protocol) return undefined;
  let state: string | undefined;
  if (protocol === 'tcp') {
    const info = attributesFrom(top.get(CTA.PROTOINFO) ?? Buffer.alloc(0), 0).get(CTA_PROTOINFO_TCP);
    const s = info && attributesFrom(info, 0).get(CTA_PROTOINFO_TCP_STATE);
    if (s?.length) state = TCP_STATES[s.readUInt8(0)] ?? String(s.readUInt8(0));
  }
  return {
    protocol,
    source: orig.src,
    sourcePort: orig.srcPort,
    port: reply.dstPort,
    destination: orig.dst,
    destinationPort: protocol === 'icmp' ? 0 : orig.dstPort,
    ...(state !== undefined ? { state } : {}),
  };
}

/** The dump request: IPv4 entries whose reply tuple's destination is `address` (CTA_FILTER). */
export function conntrackDumpRequest(address: string): Buffer {
  const nested = (type: number, ...parts: Buffer[]) => attr(type | NLA_F_NESTED, Buffer.concat(parts));
  const u32 = Buffer.alloc(4);
  u32.writeUInt32LE(CTA_FILTER_F_CTA_IP_DST);
  const family = Buffer.from([AF_INET, 0, 0, 0]);
  return Buffer.concat([
    family,
    nested(CTA.TUPLE_REPLY, nested(CTA_TUPLE.IP, attr(CTA_IP_V4.DST, ipv4ToBytes(address)))),
    nested(CTA.FILTER, attr(CTA_FILTER_REPLY_FLAGS, u32)),
  ]);
}

/** Hands each flow translated to `address` in this network namespace's conntrack table to `each`. */
export function eachFlowTo(address: string, each: (flow: NgwFlow) => void): void {
  dumpEach(
    NETLINK_NETFILTER,
    (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET,
    conntrackDumpRequest(address),
    `conntrack entries translated to ${address}`,
    (msg) => {
      const flow = parseConntrackMessage(msg, address);
      if (flow) each(flow);
    },
  );
}

/** What a gateway's flows come to, per protocol. */
export interface NgwFlowSummary {
  /** Conntrack entries translated to the address. */
  readonly flows: Readonly<Record<NgwProtocol, number>>;
  /** Distinct translated source ports (ICMP: identifiers) among them. */
  readonly portsInUse: Readonly<Record<NgwProtocol, number>>;
  /** The first `listLimit` flows, in the order the kernel dumped them. */
  readonly listed: readonly NgwFlow[];
}

const perProtocol = (f: (p: NgwProtocol) => number) =>
  Object.fromEntries(NGW_PROTOCOLS.map((p) => [p, f(p)])) as Record<NgwProtocol, number>;

/** Counts flows and their distinct ports in constant memory (8 KiB a protocol); lists at most `listLimit`. */
export class FlowTally {
  private readonly ports = new Map<NgwProtocol, Uint8Array>(NGW_PROTOCOLS.map((p) => [p, new Uint8Array(8192)]));
  private readonly flows = perProtocol(() => 0);
  private readonly used = perProtocol(() => 0);
  private readonly listed: NgwFlow[] = [];

  constructor(private readonly listLimit: number) {}

  add(flow: NgwFlow): void {
    this.flows[flow.protocol]++;
    const bits = this.ports.get(flow.protocol)!;
    const bit = 1 << (flow.port & 7);
    if (!(bits[flow.port >>> 3]! & bit)) {
      bits[flow.port >>> 3]! |= bit;
      this.used[flow.protocol]++;
    }
    if (this.listed.length < this.listLimit) this.listed.push(flow);
  }

  summary(): NgwFlowSummary {
    return { flows: { ...this.flows }, portsInUse: { ...this.used }, listed: [...this.listed] };
  }
}

/** The flows translated to `address` here, counted (at most `listLimit` of them listed). */
export function flowSummary(address: string, listLimit: number): NgwFlowSummary {
  const tally = new FlowTally(listLimit);
  eachFlowTo(address, (f) => tally.add(f));
  return tally.summary();
}
