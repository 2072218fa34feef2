// ARP frames of RFC 5227 (probe, announcement) built and parsed as bytes. Knows no Kubernetes and
// no sockets: addresses and MACs in, Buffers out (STYLE.md: the packet layer knows interfaces,
// addresses and sockets only).
import { ipv4FromBytes, ipv4ToBytes, macFromBytes, macToBytes } from '../bpf/addr';

export const ETH_P_ARP = 0x0806;
const ETH_P_IP = 0x0800;
const ARP_HRD_ETHER = 1;
const ARP_OP_REQUEST = 1;
const ARP_OP_REPLY = 2;
const ETH_HLEN = 14;
const ARP_LEN = 28;
/** Ethernet's minimum frame without FCS: a NIC pads shorter frames; we send it padded already,
 * as the frame appears on the wire. */
const ETH_MIN_FRAME = 60;
const BROADCAST = 'ff:ff:ff:ff:ff:ff';
const ZERO_MAC = '00:00:00:00:00:00';

/** One decoded Ethernet/IPv4 ARP packet. */
export interface ArpPacket {
  readonly op: 'request' | 'reply' | number;
  readonly ethSource: string;
  readonly senderMac: string;
  readonly senderIp: string;
  readonly targetMac: string;
  readonly targetIp: string;
}

function frame(
  ethDest: string,
  op: number,
  senderMac: string,
  senderIp: string,
  targetMac: string,
  targetIp: string,
): Buffer {
  const buf = Buffer.alloc(ETH_MIN_FRAME);
  macToBytes(ethDest).copy(buf, 0);
  macToBytes(senderMac).copy(buf, 6);
  buf.writeUInt16BE(ETH_P_ARP, 12);
  const a = ETH_HLEN;
  buf.writeUInt16BE(ARP_HRD_ETHER, a);
  buf.writeUInt16BE(ETH_P_IP, a + 2);
  buf.writeUInt8(6, a + 4);
  buf.writeUInt8(4, a + 5);
  buf.writeUInt16BE(op, a + 6);
  macToBytes(senderMac).copy(buf, a + 8);
  ipv4ToBytes(senderIp).copy(buf, a + 14);
  macToBytes(targetMac).copy(buf, a + 18);
  ipv4ToBytes(targetIp).copy(buf, a + 24);
  return buf;
}

/** RFC 5227 2.1.1 probe: a broadcast request for `address` with sender IP 0.0.0.0, so that no
 * host's cache learns anything from it; whoever holds `address` replies. */
export function probeFrame(mac: string, address: string): Buffer {
  return frame(BROADCAST, ARP_OP_REQUEST, mac, '0.0.0.0', ZERO_MAC, address);
}

/** RFC 5227 3 announcement: a broadcast request with sender IP = target IP = `address` and the
 * sender MAC ours; hosts that already cache `address` update the entry to our MAC. */
export function announcementFrame(mac: string, address: string): Buffer {
  return frame(BROADCAST, ARP_OP_REQUEST, mac, address, ZERO_MAC, address);
}

/** Decodes an Ethernet/IPv4 ARP frame (untagged); undefined for anything else. */
export function parseArpFrame(buf: Buffer): ArpPacket | undefined {
  if (buf.length < ETH_HLEN + ARP_LEN || buf.readUInt16BE(12) !== ETH_P_ARP) return undefined;
  const a = ETH_HLEN;
  if (
    buf.readUInt16BE(a) !== ARP_HRD_ETHER ||
    buf.readUInt16BE(a + 2) !== ETH_P_IP ||
    buf[a + 4] !== 6 ||
    buf[a + 5] !== 4
  )
    return undefined;
  const op = buf.readUInt16BE(a + 6);
  return {
    op: op === ARP_OP_REQUEST ? 'request' : op === ARP_OP_REPLY ? 'reply' : op,
    ethSource: macFromBytes(buf.subarray(6, 12)),
    senderMac: macFromBytes(buf.subarray(a + 8, a + 14)),
    senderIp: ipv4FromBytes(buf.subarray(a + 14, a + 18)),
    targetMac: macFromBytes(buf.subarray(a + 18, a + 24)),
    targetIp: ipv4FromBytes(buf.subarray(a + 24, a + 28)),
  };
}

/** True when `packet` shows another host holding `address`: any ARP packet whose sender IP is the
 * address and whose sender MAC is not ours (RFC 5227 2.1.1 and 2.4). A probe from someone else
 * (sender IP 0.0.0.0) claims nothing yet and is not counted. */
export function claimsAddress(packet: ArpPacket, address: string, ourMac: string): boolean {
  return packet.senderIp === address && packet.senderMac.toLowerCase() !== ourMac.toLowerCase();
}
