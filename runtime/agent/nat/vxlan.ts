// The agent's VXLAN device for EN-9, made over rtnetlink through koffi and libc (Node.js has no
// netlink sockets, and the image has no `ip`). One device in external (collect_md) mode serves
// every VNI and every remote node: tc_nat_in sets the tunnel key (remote node, VNI) per packet and
// redirects to it, as Cilium does with cilium_vxlan; on the pod's node tc_nat_tun reads the key of
// what it decapsulated. Learning is off: nothing is forwarded by an FDB, only by the programs.
import { constants as osConstants } from 'node:os';
import { koffi } from '../koffi';
import { libc } from '../libc-socket';
import { LibbpfError, ifNameToIndex } from '../bpf/libbpf';

/** The device's name and UDP port (IANA's VXLAN port, RFC 7348). */
export const VXLAN_DEVICE = 'juneau-vxlan';
export const VXLAN_PORT = 4789;

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_ROUTE = 0;
const RTM_NEWLINK = 16;
const RTM_DELLINK = 17;
const NLMSG_ERROR = 2;
const NLM_F = { REQUEST: 0x1, ACK: 0x4, EXCL: 0x200, CREATE: 0x400 } as const;
const IFF_UP = 0x1;
/** linux/if_link.h */
const IFLA = { IFNAME: 3, LINKINFO: 18 } as const;
const IFLA_INFO = { KIND: 1, DATA: 2 } as const;
const IFLA_VXLAN = { LEARNING: 7, PORT: 15, COLLECT_METADATA: 25 } as const;
const NLMSG_HDRLEN = 16;
const IFINFOMSG_LEN = 16;

const align4 = (n: number) => (n + 3) & ~3;

/** One netlink attribute (type, payload), padded to 4 bytes. */
function attr(type: number, payload: Buffer): Buffer {
  const out = Buffer.alloc(align4(4 + payload.length));
  out.writeUInt16LE(4 + payload.length, 0);
  out.writeUInt16LE(type, 2);
  payload.copy(out, 4);
  return out;
}

const u8 = (v: number) => Buffer.from([v]);
const be16 = (v: number) => Buffer.from([(v >> 8) & 0xff, v & 0xff]);
const cstr = (s: string) => Buffer.concat([Buffer.from(s), Buffer.alloc(1)]);

function linkMessage(type: number, flags: number, ifindex: number, up: boolean, attrs: Buffer[]): Buffer {
  const body = Buffer.alloc(IFINFOMSG_LEN);
  body.writeInt32LE(ifindex, 4);
  body.writeUInt32LE(up ? IFF_UP : 0, 8);
  body.writeUInt32LE(up ? IFF_UP : 0, 12);
  const payload = Buffer.concat([body, ...attrs]);
  const header = Buffer.alloc(NLMSG_HDRLEN);
  header.writeUInt32LE(NLMSG_HDRLEN + payload.length, 0);
  header.writeUInt16LE(type, 4);
  header.writeUInt16LE(flags | NLM_F.REQUEST | NLM_F.ACK, 6);
  header.writeUInt32LE(1, 8);
  return Buffer.concat([header, payload]);
}

/** Sends one request and returns the kernel's answer: 0, or the errno it refused with. */
function request(message: Buffer, what: string): number {
  const lc = libc();
  const fd = lc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE) as number;
  if (fd < 0) throw new LibbpfError('socket(AF_NETLINK)', koffi.errno(), what);
  try {
    if (Number(lc.send(fd, message, message.length, 0)) !== message.length)
      throw new LibbpfError('send(AF_NETLINK)', koffi.errno() || osConstants.errno.EMSGSIZE, what);
    const answer = Buffer.alloc(4096);
    const n = Number(lc.recv(fd, answer, answer.length, 0));
    if (n < NLMSG_HDRLEN + 4) throw new LibbpfError('recv(AF_NETLINK)', koffi.errno() || osConstants.errno.EIO, what);
    if (answer.readUInt16LE(4) !== NLMSG_ERROR)
      throw new Error(`${what}: netlink answered message type ${answer.readUInt16LE(4)}, not an acknowledgement`);
    return -answer.readInt32LE(NLMSG_HDRLEN);
  } finally {
    lc.close(fd);
  }
}

function ifindexOrZero(name: string): number {
  try {
    return ifNameToIndex(name);
  } catch {
    return 0;
  }
}

/**
 * Makes `name` a VXLAN device in external mode on `port`, up, in the caller's network namespace,
 * and returns its ifindex. A device of that name that exists already is adopted and brought up
 * (an agent restart). Needs CAP_NET_ADMIN.
 */
export function ensureVxlanDevice(name = VXLAN_DEVICE, port = VXLAN_PORT): number {
  const what = `VXLAN device ${name} (port ${port})`;
  const info = Buffer.concat([
    attr(IFLA_INFO.KIND, cstr('vxlan')),
    attr(
      IFLA_INFO.DATA,
      Buffer.concat([
        attr(IFLA_VXLAN.COLLECT_METADATA, u8(1)),
        attr(IFLA_VXLAN.LEARNING, u8(0)),
        attr(IFLA_VXLAN.PORT, be16(port)),
      ]),
    ),
  ]);
  const create = linkMessage(RTM_NEWLINK, NLM_F.CREATE | NLM_F.EXCL, 0, true, [
    attr(IFLA.IFNAME, cstr(name)),
    attr(IFLA.LINKINFO, info),
  ]);
  const errno = request(create, what);
  if (errno !== 0 && errno !== osConstants.errno.EEXIST) throw new LibbpfError('RTM_NEWLINK', errno, what);
  const ifindex = ifindexOrZero(name);
  if (!ifindex) throw new Error(`${what}: created, but no interface of that name is there`);
  if (errno === osConstants.errno.EEXIST) {
    const up = request(linkMessage(RTM_NEWLINK, 0, ifindex, true, []), what);
    if (up !== 0) throw new LibbpfError('RTM_NEWLINK (up)', up, what);
  }
  return ifindex;
}

/** Removes the device (uninstall); a device that is not there is fine. */
export function deleteVxlanDevice(name = VXLAN_DEVICE): boolean {
  const ifindex = ifindexOrZero(name);
  if (!ifindex) return false;
  const errno = request(linkMessage(RTM_DELLINK, 0, ifindex, false, []), `VXLAN device ${name}`);
  if (errno !== 0 && errno !== osConstants.errno.ENODEV) throw new LibbpfError('RTM_DELLINK', errno, name);
  return errno === 0;
}
