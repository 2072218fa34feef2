// rtnetlink over koffi and libc (Node.js has no netlink sockets, and the image has no `ip`): the
// messages the agent sends (the VXLAN device, runtime/agent/nat/vxlan.ts) and the questions it
// asks (where a pod address is routed, and its neighbour's MAC: runtime/agent/bpf/nat.ts binds each
// ElasticIP to the pod's host-side device, H1/M3 of the security review; the same route lookup and
// a device's name find the devices the pods are reached through, runtime/agent/nat/pod-devices.ts). One request per socket:
// the socket is made, used once and closed, in the caller's network namespace.
import { constants as osConstants } from 'node:os';
import { koffi } from './koffi';
import { libc } from './libc-socket';
import { LibbpfError } from './bpf/libbpf';
import { ipv4ToBytes, macFromBytes } from './bpf/addr';

const AF_NETLINK = 16;
export const AF_INET = 2;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_ROUTE = 0;
export const RTM = {
  NEWLINK: 16,
  DELLINK: 17,
  GETLINK: 18,
  NEWROUTE: 24,
  GETROUTE: 26,
  NEWNEIGH: 28,
  GETNEIGH: 30,
} as const;
const NLMSG_ERROR = 2;
export const NLM_F = { REQUEST: 0x1, ACK: 0x4, EXCL: 0x200, CREATE: 0x400 } as const;
export const NLMSG_HDRLEN = 16;
const RTMSG_LEN = 12;
const NDMSG_LEN = 12;
const IFINFOMSG_LEN = 16;
/** linux/if_link.h */
const IFLA = { IFNAME: 3, MASTER: 10 } as const;
/** linux/rtnetlink.h */
const RTA = { DST: 1, OIF: 4, GATEWAY: 5 } as const;
const RTN_UNICAST = 1;
const RTM_F_LOOKUP_TABLE = 0x1000;
/** linux/neighbour.h */
const NDA = { DST: 1, LLADDR: 2 } as const;
/** NUD_INCOMPLETE, NUD_FAILED, NUD_NOARP and NUD_NONE carry no usable MAC. */
const NUD_HAS_MAC = 0x02 | 0x04 | 0x08 | 0x10 | 0x80; // REACHABLE STALE DELAY PROBE PERMANENT

const align4 = (n: number) => (n + 3) & ~3;

/** One netlink attribute (type, payload), padded to 4 bytes. */
export function attr(type: number, payload: Buffer): Buffer {
  const out = Buffer.alloc(align4(4 + payload.length));
  out.writeUInt16LE(4 + payload.length, 0);
  out.writeUInt16LE(type, 2);
  payload.copy(out, 4);
  return out;
}

/** A netlink message: header, then `body` (the family header and its attributes). */
export function message(type: number, flags: number, body: Buffer): Buffer {
  const header = Buffer.alloc(NLMSG_HDRLEN);
  header.writeUInt32LE(NLMSG_HDRLEN + body.length, 0);
  header.writeUInt16LE(type, 4);
  header.writeUInt16LE(flags | NLM_F.REQUEST, 6);
  header.writeUInt32LE(1, 8);
  return Buffer.concat([header, body]);
}

/** The attributes of a message's payload after its fixed family header of `fixed` bytes. */
function attributes(msg: Buffer, fixed: number): Map<number, Buffer> {
  const attrs = new Map<number, Buffer>();
  const end = Math.min(msg.readUInt32LE(0), msg.length);
  for (let at = NLMSG_HDRLEN + fixed; at + 4 <= end;) {
    const len = msg.readUInt16LE(at);
    if (len < 4) break;
    attrs.set(msg.readUInt16LE(at + 2) & 0x3fff, msg.subarray(at + 4, at + len));
    at += align4(len);
  }
  return attrs;
}

/** Sends one request and returns the kernel's first answer message (an acknowledgement, an error,
 * or the object asked for). */
function exchange(msg: Buffer, what: string): Buffer {
  const lc = libc();
  const fd = lc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE) as number;
  if (fd < 0) throw new LibbpfError('socket(AF_NETLINK)', koffi.errno(), what);
  try {
    if (Number(lc.send(fd, msg, msg.length, 0)) !== msg.length)
      throw new LibbpfError('send(AF_NETLINK)', koffi.errno() || osConstants.errno.EMSGSIZE, what);
    const answer = Buffer.alloc(8192);
    const n = Number(lc.recv(fd, answer, answer.length, 0));
    if (n < NLMSG_HDRLEN + 4) throw new LibbpfError('recv(AF_NETLINK)', koffi.errno() || osConstants.errno.EIO, what);
    return answer.subarray(0, n);
  } finally {
    lc.close(fd);
  }
}

/** Sends one request with an acknowledgement asked for; returns 0, or the errno it was refused with. */
export function request(msg: Buffer, what: string): number {
  msg.writeUInt16LE(msg.readUInt16LE(6) | NLM_F.ACK, 6);
  const answer = exchange(msg, what);
  if (answer.readUInt16LE(4) !== NLMSG_ERROR)
    throw new Error(`${what}: netlink answered message type ${answer.readUInt16LE(4)}, not an acknowledgement`);
  return -answer.readInt32LE(NLMSG_HDRLEN);
}

/** Asks for one object; returns the answer of type `expect`, or the errno the kernel refused with. */
function get(msg: Buffer, expect: number, what: string): Buffer | number {
  const answer = exchange(msg, what);
  const type = answer.readUInt16LE(4);
  if (type === NLMSG_ERROR) return -answer.readInt32LE(NLMSG_HDRLEN) || osConstants.errno.ENOENT;
  if (type !== expect) throw new Error(`${what}: netlink answered message type ${type}, not ${expect}`);
  return answer;
}

/** Where this node sends a packet for `address`: the device, when the address is on a link of
 * this node (a unicast route without a gateway); undefined when it is routed through a gateway,
 * is one of the node's own (local), or has no route. */
export function directRouteDevice(address: string): number | undefined {
  const body = Buffer.alloc(RTMSG_LEN);
  body.writeUInt8(AF_INET, 0); // rtm_family
  body.writeUInt8(32, 1); // rtm_dst_len
  body.writeUInt32LE(RTM_F_LOOKUP_TABLE, 8); // rtm_flags: the route as the FIB holds it
  const msg = message(RTM.GETROUTE, 0, Buffer.concat([body, attr(RTA.DST, ipv4ToBytes(address))]));
  const answer = get(msg, RTM.NEWROUTE, `route to ${address}`);
  if (typeof answer === 'number') {
    if (answer === osConstants.errno.ENETUNREACH || answer === osConstants.errno.EHOSTUNREACH) return undefined;
    throw new LibbpfError('RTM_GETROUTE', answer, `route to ${address}`);
  }
  if (answer.readUInt8(NLMSG_HDRLEN + 7) !== RTN_UNICAST) return undefined; // rtm_type
  const attrs = attributes(answer, RTMSG_LEN);
  const oif = attrs.get(RTA.OIF);
  if (attrs.has(RTA.GATEWAY) || !oif) return undefined;
  return oif.readUInt32LE(0);
}

/** The MAC the neighbour table of device `ifindex` holds for `address`, when it holds a usable
 * one; undefined otherwise (none yet, incomplete, failed). */
export function neighbourMac(address: string, ifindex: number): string | undefined {
  const body = Buffer.alloc(NDMSG_LEN);
  body.writeUInt8(AF_INET, 0); // ndm_family
  body.writeInt32LE(ifindex, 4); // ndm_ifindex
  const msg = message(RTM.GETNEIGH, 0, Buffer.concat([body, attr(NDA.DST, ipv4ToBytes(address))]));
  const answer = get(msg, RTM.NEWNEIGH, `neighbour ${address} on ifindex ${ifindex}`);
  if (typeof answer === 'number') {
    if (answer === osConstants.errno.ENOENT) return undefined;
    throw new LibbpfError('RTM_GETNEIGH', answer, `neighbour ${address} on ifindex ${ifindex}`);
  }
  if ((answer.readUInt16LE(NLMSG_HDRLEN + 8) & NUD_HAS_MAC) === 0) return undefined; // ndm_state
  const mac = attributes(answer, NDMSG_LEN).get(NDA.LLADDR);
  return mac?.length === 6 ? macFromBytes(mac) : undefined;
}

/** A device of this network namespace by ifindex: its name, and the bridge (or other master) it is a
 * port of; undefined when there is no such device. */
export function linkByIndex(ifindex: number): { readonly name: string; readonly master?: number } | undefined {
  const body = Buffer.alloc(IFINFOMSG_LEN);
  body.writeInt32LE(ifindex, 4); // ifi_index
  const answer = get(message(RTM.GETLINK, 0, body), RTM.NEWLINK, `link ${ifindex}`);
  if (typeof answer === 'number') {
    if (answer === osConstants.errno.ENODEV || answer === osConstants.errno.ENOENT) return undefined;
    throw new LibbpfError('RTM_GETLINK', answer, `link ${ifindex}`);
  }
  const attrs = attributes(answer, IFINFOMSG_LEN);
  const name = attrs.get(IFLA.IFNAME);
  if (!name) return undefined;
  const master = attrs.get(IFLA.MASTER);
  const text = name.subarray(0, name.indexOf(0) >= 0 ? name.indexOf(0) : name.length).toString();
  return master?.length === 4 ? { name: text, master: master.readUInt32LE(0) } : { name: text };
}
