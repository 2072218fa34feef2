// The agent's VXLAN device for EN-9, made over rtnetlink (runtime/agent/netlink.ts). One device in
// external (collect_md) mode serves every VNI and every remote node: tc_nat_in sets the tunnel key
// (remote node, VNI) per packet and redirects to it, as Cilium does with cilium_vxlan; on the pod's
// node tc_nat_tun reads the key of what it decapsulated. Learning is off: nothing is forwarded by
// an FDB, only by the programs.
//
// H3 of the security review: the device is a decapsulator anyone who reaches its UDP port can feed.
// It is bound to the node's own address and device (IFLA_VXLAN_LOCAL, IFLA_VXLAN_LINK), not to
// 0.0.0.0, and made down: the caller brings it up (setLinkUp) only once tc_nat_tun is attached, and
// deletes it when attaching fails, so no packet is ever decapsulated without the filter.
import { constants as osConstants } from 'node:os';
import { LibbpfError, ifNameToIndex } from '../bpf/libbpf';
import { ipv4ToBytes } from '../bpf/addr';
import { NLM_F, RTM, attr, message, request } from '../netlink';

/** The device's name and UDP port (IANA's VXLAN port, RFC 7348). */
export const VXLAN_DEVICE = 'juneau-vxlan';
export const VXLAN_PORT = 4789;

const IFF_UP = 0x1;
const IFINFOMSG_LEN = 16;
/** linux/if_link.h */
const IFLA = { IFNAME: 3, LINKINFO: 18 } as const;
const IFLA_INFO = { KIND: 1, DATA: 2 } as const;
const IFLA_VXLAN = { LINK: 3, LOCAL: 4, LEARNING: 7, PORT: 15, COLLECT_METADATA: 25 } as const;

const u8 = (v: number) => Buffer.from([v]);
const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
const be16 = (v: number) => Buffer.from([(v >> 8) & 0xff, v & 0xff]);
const cstr = (s: string) => Buffer.concat([Buffer.from(s), Buffer.alloc(1)]);

function linkMessage(type: number, flags: number, ifindex: number, up: boolean, attrs: Buffer[]): Buffer {
  const body = Buffer.alloc(IFINFOMSG_LEN);
  body.writeInt32LE(ifindex, 4);
  body.writeUInt32LE(up ? IFF_UP : 0, 8); // ifi_flags
  body.writeUInt32LE(IFF_UP, 12); // ifi_change: the up flag is set as given
  return message(type, flags, Buffer.concat([body, ...attrs]));
}

function ifindexOrZero(name: string): number {
  try {
    return ifNameToIndex(name);
  } catch {
    return 0;
  }
}

/** Where the device sends from and listens: the node's address and the device that has it. */
export interface VxlanUnderlay {
  /** The node's InternalIP (outer source; the only address the device's socket is bound to). */
  readonly local: string;
  /** The device holding `local` (the external interface). */
  readonly link: number;
}

/**
 * Makes `name` a VXLAN device in external mode on `port`, bound to `underlay`, DOWN, in the
 * caller's network namespace, and returns its ifindex. A device of that name that exists already
 * (an earlier agent's, possibly bound to every address) is deleted and made anew. Needs
 * CAP_NET_ADMIN.
 */
export function ensureVxlanDevice(underlay: VxlanUnderlay, name = VXLAN_DEVICE, port = VXLAN_PORT): number {
  const what = `VXLAN device ${name} (${underlay.local}:${port})`;
  const info = Buffer.concat([
    attr(IFLA_INFO.KIND, cstr('vxlan')),
    attr(
      IFLA_INFO.DATA,
      Buffer.concat([
        attr(IFLA_VXLAN.COLLECT_METADATA, u8(1)),
        attr(IFLA_VXLAN.LEARNING, u8(0)),
        attr(IFLA_VXLAN.PORT, be16(port)),
        attr(IFLA_VXLAN.LOCAL, ipv4ToBytes(underlay.local)),
        attr(IFLA_VXLAN.LINK, u32(underlay.link)),
      ]),
    ),
  ]);
  const create = () =>
    request(
      linkMessage(RTM.NEWLINK, NLM_F.CREATE | NLM_F.EXCL, 0, false, [
        attr(IFLA.IFNAME, cstr(name)),
        attr(IFLA.LINKINFO, info),
      ]),
      what,
    );
  let errno = create();
  if (errno === osConstants.errno.EEXIST) {
    deleteVxlanDevice(name);
    errno = create();
  }
  if (errno !== 0) throw new LibbpfError('RTM_NEWLINK', errno, what);
  const ifindex = ifindexOrZero(name);
  if (!ifindex) throw new Error(`${what}: created, but no interface of that name is there`);
  return ifindex;
}

/** Brings device `ifindex` up (the VXLAN device, once its filter is attached). */
export function setLinkUp(ifindex: number, what = `ifindex ${ifindex}`): void {
  const errno = request(linkMessage(RTM.NEWLINK, 0, ifindex, true, []), what);
  if (errno !== 0) throw new LibbpfError('RTM_NEWLINK (up)', errno, what);
}

/** Removes the device (uninstall, a failed attach); a device that is not there is fine. */
export function deleteVxlanDevice(name = VXLAN_DEVICE): boolean {
  const ifindex = ifindexOrZero(name);
  if (!ifindex) return false;
  const errno = request(linkMessage(RTM.DELLINK, 0, ifindex, false, []), `VXLAN device ${name}`);
  if (errno !== 0 && errno !== osConstants.errno.ENODEV) throw new LibbpfError('RTM_DELLINK', errno, name);
  return errno === 0;
}
