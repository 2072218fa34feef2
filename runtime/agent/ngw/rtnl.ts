// The rtnetlink the NATGateway data path needs beyond runtime/agent/netlink.ts: its VXLAN tunnel
// devices (and their one neighbour entry), policy rules and routes in a table, each made, deleted and listed (a dump), so sync.ts
// can reconcile them. Sockets are made per call, in the caller's network namespace.
import { constants as osConstants } from 'node:os';
import { koffi } from '../koffi';
import { libc } from '../libc-socket';
import { LibbpfError } from '../bpf/libbpf';
import { ipv4ToBytes } from '../bpf/addr';
import { AF_INET, NLM_F, NLMSG_HDRLEN, attr, message, request } from '../netlink';
import type { NgwRoute, NgwRule, NgwTunnel } from './desired';

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_ROUTE = 0;
const NLM_F_DUMP = 0x300;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const RTM = {
  NEWLINK: 16,
  DELLINK: 17,
  GETLINK: 18,
  NEWROUTE: 24,
  DELROUTE: 25,
  GETROUTE: 26,
  NEWRULE: 32,
  DELRULE: 33,
  GETRULE: 34,
} as const;
const IFINFOMSG_LEN = 16;
const RTMSG_LEN = 12;
const FIB_RULE_HDR_LEN = 12;
const IFF_UP = 0x1;
/** linux/if_link.h */
const IFLA = { ADDRESS: 1, IFNAME: 3, MTU: 4, LINKINFO: 18 } as const;
const IFLA_INFO = { KIND: 1, DATA: 2 } as const;
const IFLA_VXLAN = { ID: 1, GROUP: 2, LINK: 3, LOCAL: 4, TTL: 5, LEARNING: 7, PORT: 15 } as const;
/** linux/rtnetlink.h, linux/neighbour.h */
const RTA = { OIF: 4, GATEWAY: 5, TABLE: 15 } as const;
const RTNH_F_ONLINK = 4;
const RTM_NEWNEIGH = 28;
const NDA = { DST: 1, LLADDR: 2 } as const;
const NUD_PERMANENT = 0x80;
const RT_TABLE_UNSPEC = 0;
const RT_SCOPE_UNIVERSE = 0;
const RT_SCOPE_LINK = 253;
const RTM_NEWADDR = 20;
const IFA = { ADDRESS: 1, LOCAL: 2 } as const;
const RTN_UNICAST = 1;
/** linux/fib_rules.h */
const FRA = { PRIORITY: 6, FWMARK: 10, TABLE: 15, FWMASK: 16, PROTOCOL: 21 } as const;
const FR_ACT_TO_TBL = 1;

const u8 = (v: number) => Buffer.from([v]);
const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
};
const cstr = (s: string) => Buffer.concat([Buffer.from(s), Buffer.alloc(1)]);
const align4 = (n: number) => (n + 3) & ~3;

function attributes(msg: Buffer, fixed: number): Map<number, Buffer> {
  return attributesFrom(msg, NLMSG_HDRLEN + fixed);
}

/** The attributes of `buf` from offset `start` (a message's, or a nested attribute's payload), by
 * type without its flags (NLA_F_NESTED, NLA_F_NET_BYTEORDER). */
export function attributesFrom(buf: Buffer, start: number): Map<number, Buffer> {
  const attrs = new Map<number, Buffer>();
  for (let at = start; at + 4 <= buf.length;) {
    const len = buf.readUInt16LE(at);
    if (len < 4) break;
    attrs.set(buf.readUInt16LE(at + 2) & 0x3fff, buf.subarray(at + 4, at + len));
    at += align4(len);
  }
  return attrs;
}

/** Sends a dump request and returns every message of the answer (to NLMSG_DONE). */
export function dump(type: number, body: Buffer, what: string): Buffer[] {
  const out: Buffer[] = [];
  dumpEach(NETLINK_ROUTE, type, body, what, (msg) => out.push(Buffer.from(msg)));
  return out;
}

/**
 * Sends a dump request on a socket of netlink `protocol` and hands each message of the answer to
 * `each` as it arrives (a view into the receive buffer, valid only during the call), to NLMSG_DONE:
 * memory stays one buffer however long the dump.
 */
export function dumpEach(
  protocol: number,
  type: number,
  body: Buffer,
  what: string,
  each: (msg: Buffer) => void,
): void {
  const lc = libc();
  const fd = lc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol) as number;
  if (fd < 0) throw new LibbpfError('socket(AF_NETLINK)', koffi.errno(), what);
  try {
    const msg = message(type, NLM_F_DUMP, body);
    if (Number(lc.send(fd, msg, msg.length, 0)) !== msg.length)
      throw new LibbpfError('send(AF_NETLINK)', koffi.errno() || osConstants.errno.EMSGSIZE, what);
    const buffer = Buffer.alloc(65536);
    for (;;) {
      const n = Number(lc.recv(fd, buffer, buffer.length, 0));
      if (n <= 0) throw new LibbpfError('recv(AF_NETLINK)', koffi.errno() || osConstants.errno.EIO, what);
      for (let at = 0; at + NLMSG_HDRLEN <= n;) {
        const len = buffer.readUInt32LE(at);
        const t = buffer.readUInt16LE(at + 4);
        if (t === NLMSG_DONE) return;
        if (t === NLMSG_ERROR) throw new LibbpfError('netlink dump', -buffer.readInt32LE(at + NLMSG_HDRLEN), what);
        each(buffer.subarray(at, at + len));
        at += align4(len);
      }
    }
  } finally {
    lc.close(fd);
  }
}

function must(errno: number, call: string, what: string, ok: readonly number[] = []): void {
  if (errno !== 0 && !ok.includes(errno)) throw new LibbpfError(call, errno, what);
}

// ---- links -------------------------------------------------------------------------------------

function linkBody(ifindex: number, up: boolean): Buffer {
  const body = Buffer.alloc(IFINFOMSG_LEN);
  body.writeInt32LE(ifindex, 4);
  body.writeUInt32LE(up ? IFF_UP : 0, 8);
  body.writeUInt32LE(IFF_UP, 12);
  return body;
}

/** Every link of the namespace whose name starts with `prefix`: name -> ifindex. */
export function linksNamed(prefix: string): Map<string, number> {
  const links = new Map<string, number>();
  for (const msg of dump(RTM.GETLINK, Buffer.alloc(IFINFOMSG_LEN), 'links')) {
    const name = attributes(msg, IFINFOMSG_LEN).get(IFLA.IFNAME);
    const text = name ? name.subarray(0, name.indexOf(0) < 0 ? name.length : name.indexOf(0)).toString() : '';
    if (text.startsWith(prefix)) links.set(text, msg.readInt32LE(NLMSG_HDRLEN + 4));
  }
  return links;
}

const be16 = (v: number) => Buffer.from([(v >> 8) & 0xff, v & 0xff]);
const macBytes = (mac: string) => Buffer.from(mac.split(':').map((h) => parseInt(h, 16)));

/**
 * Makes the VXLAN tunnel `t`: point to point (remote `t.remote`, local `t.local` on device
 * `link`), learning off, MAC `t.mac`, up, MTU `mtu` when given; then the permanent neighbour entry
 * that sends frames for `nextHop` to the peer's MAC.
 */
export function addTunnel(
  t: NgwTunnel,
  o: { link: number; port: number; nextHop: string; ownAddress: string; mtu?: number },
): number {
  const what = `VXLAN tunnel ${t.name} (${t.local} -> ${t.remote}, VNI ${t.vni})`;
  const data = Buffer.concat([
    attr(IFLA_VXLAN.ID, u32(t.vni)),
    attr(IFLA_VXLAN.GROUP, ipv4ToBytes(t.remote)),
    attr(IFLA_VXLAN.LOCAL, ipv4ToBytes(t.local)),
    attr(IFLA_VXLAN.LINK, u32(o.link)),
    attr(IFLA_VXLAN.TTL, u8(64)),
    attr(IFLA_VXLAN.LEARNING, u8(0)),
    attr(IFLA_VXLAN.PORT, be16(o.port)),
  ]);
  const info = Buffer.concat([attr(IFLA_INFO.KIND, cstr('vxlan')), attr(IFLA_INFO.DATA, data)]);
  const attrs = [
    attr(IFLA.IFNAME, cstr(t.name)),
    attr(IFLA.ADDRESS, macBytes(t.mac)),
    attr(IFLA.LINKINFO, info),
    ...(o.mtu ? [attr(IFLA.MTU, u32(o.mtu))] : []),
  ];
  const body = Buffer.concat([linkBody(0, true), ...attrs]);
  must(request(message(RTM.NEWLINK, NLM_F.CREATE | NLM_F.EXCL, body), what), 'RTM_NEWLINK', what);
  const ifindex = linksNamed(t.name).get(t.name);
  if (!ifindex) throw new Error(`${what}: created, but no interface of that name is there`);
  // An address of its own: the kernel's reverse-path check fails packets arriving on a device
  // without one whenever rp_filter is on at all (loose included).
  const ifa = Buffer.alloc(8);
  ifa.writeUInt8(AF_INET, 0);
  ifa.writeUInt8(32, 1);
  ifa.writeUInt8(RT_SCOPE_LINK, 3);
  ifa.writeUInt32LE(ifindex, 4);
  const address = Buffer.concat([
    ifa,
    attr(IFA.LOCAL, ipv4ToBytes(o.ownAddress)),
    attr(IFA.ADDRESS, ipv4ToBytes(o.ownAddress)),
  ]);
  must(request(message(RTM_NEWADDR, NLM_F.CREATE | NLM_F.EXCL, address), `${what}: address`), 'RTM_NEWADDR', what);
  const nd = Buffer.alloc(12);
  nd.writeUInt8(AF_INET, 0);
  nd.writeInt32LE(ifindex, 4);
  nd.writeUInt16LE(NUD_PERMANENT, 8);
  const neigh = Buffer.concat([nd, attr(NDA.DST, ipv4ToBytes(o.nextHop)), attr(NDA.LLADDR, macBytes(t.peerMac))]);
  must(request(message(RTM_NEWNEIGH, NLM_F.CREATE | 0x100, neigh), `${what}: neighbour`), 'RTM_NEWNEIGH', what);
  return ifindex;
}

/** linux/if_link.h IFLA_AF_SPEC, IFLA_INET_CONF; linux/ip.h IPV4_DEVCONF_RP_FILTER. */
const IFLA_AF_SPEC = 26;
const IFLA_INET_CONF = 1;
const IPV4_DEVCONF_RP_FILTER = 8;

/**
 * net.ipv4.conf.<device>.rp_filter = `value`, through rtnetlink (IFLA_AF_SPEC, AF_INET,
 * IFLA_INET_CONF): the agent's container is not privileged, so its /proc/sys is read-only.
 */
export function setRpFilter(ifindex: number, name: string, value: number): void {
  const what = `net.ipv4.conf.${name}.rp_filter = ${value}`;
  const inet = attr(AF_INET, attr(IFLA_INET_CONF, attr(IPV4_DEVCONF_RP_FILTER, u32(value))));
  const body = Buffer.concat([linkBody(ifindex, true), attr(IFLA_AF_SPEC, inet)]);
  must(request(message(RTM.NEWLINK, 0, body), what), 'RTM_NEWLINK', what);
}

export function deleteLink(ifindex: number, name: string): void {
  must(request(message(RTM.DELLINK, 0, linkBody(ifindex, false)), name), 'RTM_DELLINK', name, [
    osConstants.errno.ENODEV,
  ]);
}

// ---- rules -------------------------------------------------------------------------------------

function ruleMessage(type: number, flags: number, r: NgwRule, protocol: number): Buffer {
  const hdr = Buffer.alloc(FIB_RULE_HDR_LEN);
  hdr.writeUInt8(AF_INET, 0);
  hdr.writeUInt8(FR_ACT_TO_TBL, 7);
  return message(
    type,
    flags,
    Buffer.concat([
      hdr,
      attr(FRA.PRIORITY, u32(r.priority)),
      attr(FRA.FWMARK, u32(r.fwmark)),
      attr(FRA.FWMASK, u32(r.fwmask)),
      attr(FRA.TABLE, u32(r.table)),
      attr(FRA.PROTOCOL, u8(protocol)),
    ]),
  );
}

/** The IPv4 policy rules that carry `protocol` (FRA_PROTOCOL). */
export function rulesOf(protocol: number): NgwRule[] {
  const hdr = Buffer.alloc(FIB_RULE_HDR_LEN);
  hdr.writeUInt8(AF_INET, 0);
  return dump(RTM.GETRULE, hdr, 'rules').flatMap((msg) => {
    const a = attributes(msg, FIB_RULE_HDR_LEN);
    if (a.get(FRA.PROTOCOL)?.readUInt8(0) !== protocol) return [];
    return [
      {
        priority: a.get(FRA.PRIORITY)?.readUInt32LE(0) ?? 0,
        fwmark: a.get(FRA.FWMARK)?.readUInt32LE(0) ?? 0,
        fwmask: a.get(FRA.FWMASK)?.readUInt32LE(0) ?? 0,
        table: a.get(FRA.TABLE)?.readUInt32LE(0) ?? msg.readUInt8(NLMSG_HDRLEN + 4),
      },
    ];
  });
}

export function addRule(r: NgwRule, protocol: number): void {
  const what = `rule fwmark 0x${r.fwmark.toString(16)} lookup ${r.table}`;
  must(request(ruleMessage(RTM.NEWRULE, NLM_F.CREATE | NLM_F.EXCL, r, protocol), what), 'RTM_NEWRULE', what, [
    osConstants.errno.EEXIST,
  ]);
}

export function deleteRule(r: NgwRule, protocol: number): void {
  const what = `rule fwmark 0x${r.fwmark.toString(16)} lookup ${r.table}`;
  must(request(ruleMessage(RTM.DELRULE, 0, r, protocol), what), 'RTM_DELRULE', what, [osConstants.errno.ENOENT]);
}

// ---- routes ------------------------------------------------------------------------------------

function routeMessage(
  type: number,
  flags: number,
  table: number,
  protocol: number,
  via?: { oif: number; gateway: string },
): Buffer {
  const rt = Buffer.alloc(RTMSG_LEN);
  rt.writeUInt8(AF_INET, 0);
  rt.writeUInt8(RT_TABLE_UNSPEC, 4);
  rt.writeUInt8(protocol, 5);
  rt.writeUInt8(RT_SCOPE_UNIVERSE, 6);
  rt.writeUInt8(RTN_UNICAST, 7);
  if (via) rt.writeUInt32LE(RTNH_F_ONLINK, 8);
  const nh = via ? [attr(RTA.OIF, u32(via.oif)), attr(RTA.GATEWAY, ipv4ToBytes(via.gateway))] : [];
  return message(type, flags, Buffer.concat([rt, attr(RTA.TABLE, u32(table)), ...nh]));
}

/** The IPv4 default routes with `protocol` in tables [from, to]: table and device ifindex. */
export function routesOf(protocol: number, from: number, to: number): Array<{ table: number; oif: number }> {
  const rt = Buffer.alloc(RTMSG_LEN);
  rt.writeUInt8(AF_INET, 0);
  return dump(RTM.GETROUTE, rt, 'routes').flatMap((msg) => {
    if (msg.readUInt8(NLMSG_HDRLEN + 5) !== protocol || msg.readUInt8(NLMSG_HDRLEN + 1) !== 0) return [];
    const a = attributes(msg, RTMSG_LEN);
    const table = a.get(RTA.TABLE)?.readUInt32LE(0) ?? msg.readUInt8(NLMSG_HDRLEN + 4);
    if (table < from || table > to) return [];
    return [{ table, oif: a.get(RTA.OIF)?.readUInt32LE(0) ?? 0 }];
  });
}

/** Sets the default route of `route.table` via `gateway` (on link) on device `oif`, replacing one there. */
export function replaceRoute(route: NgwRoute, oif: number, gateway: string, protocol: number): void {
  const what = `default via ${gateway} dev ${route.device} table ${route.table}`;
  const REPLACE = 0x100;
  const msg = routeMessage(RTM.NEWROUTE, NLM_F.CREATE | REPLACE, route.table, protocol, { oif, gateway });
  must(request(msg, what), 'RTM_NEWROUTE', what);
}

export function deleteRoute(table: number, protocol: number): void {
  const what = `default route of table ${table}`;
  must(request(routeMessage(RTM.DELROUTE, 0, table, protocol), what), 'RTM_DELROUTE', what, [
    osConstants.errno.ESRCH,
    osConstants.errno.ENOENT,
  ]);
}
