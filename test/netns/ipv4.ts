// IPv4 frames as the NAT tests see them in a capture: parsing, every checksum checked the way a
// receiver would (IP header, TCP/UDP with the pseudo header, ICMP over the whole message, and the
// same inside an ICMP error), and a builder for crafted frames.
import { ipv4FromBytes, ipv4ToBytes } from '../../runtime/agent/bpf/addr';

export interface L4 {
  readonly proto: number;
  /** Bytes from the L4 header to the end of the IP payload. */
  readonly bytes: Buffer;
}

export interface Ipv4Packet {
  readonly src: string;
  readonly dst: string;
  readonly proto: number;
  readonly ttl: number;
  readonly id: number;
  readonly fragOffset: number;
  readonly moreFragments: boolean;
  readonly dontFragment: boolean;
  readonly header: Buffer;
  readonly payload: Buffer;
}

/** One's complement sum folded and complemented: 0 over data that carries its own checksum. */
export function checksum(data: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < data.length; i += 2) sum += data.readUInt16BE(i);
  if (data.length % 2) sum += data[data.length - 1] << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** Parses an IPv4 packet at `at` (a frame: 14), undefined when it is not one. */
export function parseIpv4(frame: Buffer, at = 14): Ipv4Packet | undefined {
  if (at === 14 && (frame.length < 34 || frame.readUInt16BE(12) !== 0x0800)) return undefined;
  const ihl = (frame[at] & 0x0f) * 4;
  if (frame[at] >> 4 !== 4 || ihl < 20 || frame.length < at + ihl) return undefined;
  const total = Math.min(frame.readUInt16BE(at + 2), frame.length - at);
  const frag = frame.readUInt16BE(at + 6);
  return {
    src: ipv4FromBytes(frame.subarray(at + 12, at + 16)),
    dst: ipv4FromBytes(frame.subarray(at + 16, at + 20)),
    proto: frame[at + 9],
    ttl: frame[at + 8],
    id: frame.readUInt16BE(at + 4),
    fragOffset: (frag & 0x1fff) * 8,
    moreFragments: (frag & 0x2000) !== 0,
    dontFragment: (frag & 0x4000) !== 0,
    header: frame.subarray(at, at + ihl),
    payload: frame.subarray(at + ihl, at + total),
  };
}

function pseudoSum(p: Pick<Ipv4Packet, 'src' | 'dst'>, proto: number, l4: Buffer): number {
  const pseudo = Buffer.concat([
    ipv4ToBytes(p.src),
    ipv4ToBytes(p.dst),
    Buffer.from([0, proto, l4.length >> 8, l4.length & 0xff]),
  ]);
  return checksum(Buffer.concat([pseudo, l4]));
}

export interface ChecksumReport {
  readonly ip: boolean;
  /** TCP/UDP/ICMP over the whole (unfragmented) payload; 'zero' for a UDP checksum not sent. */
  readonly l4: boolean | 'zero' | 'n/a';
}

/** Checks a complete (unfragmented) packet's checksums. */
export function checkPacket(p: Ipv4Packet): ChecksumReport {
  const ip = checksum(p.header) === 0;
  if (p.fragOffset !== 0 || p.moreFragments) return { ip, l4: 'n/a' };
  if (p.proto === 17) {
    if (p.payload.readUInt16BE(6) === 0) return { ip, l4: 'zero' };
    return { ip, l4: pseudoSum(p, 17, p.payload) === 0 };
  }
  if (p.proto === 6) return { ip, l4: pseudoSum(p, 6, p.payload) === 0 };
  if (p.proto === 1) return { ip, l4: checksum(p.payload) === 0 };
  return { ip, l4: 'n/a' };
}

export interface IcmpError {
  readonly type: number;
  readonly code: number;
  /** Next-hop MTU of a fragmentation-needed (type 3 code 4). */
  readonly mtu: number;
  readonly icmpChecksumOk: boolean;
  readonly inner: Ipv4Packet;
  readonly innerIpChecksumOk: boolean;
  /** The embedded TCP/UDP checksum recomputed over the embedded bytes: only meaningful when the
   * error carries the whole original datagram, as Linux's do for small ones. */
  readonly innerL4ChecksumOk: boolean | 'zero' | 'n/a';
}

export function parseIcmpError(p: Ipv4Packet): IcmpError | undefined {
  if (p.proto !== 1 || ![3, 4, 5, 11, 12].includes(p.payload[0])) return undefined;
  const inner = parseIpv4(p.payload, 8);
  if (!inner) return undefined;
  const carried = p.payload.length - 8 - inner.header.length;
  const whole =
    carried >= inner.payload.length && inner.payload.length === p.payload.readUInt16BE(8 + 2) - inner.header.length;
  return {
    type: p.payload[0],
    code: p.payload[1],
    mtu: p.payload.readUInt16BE(6),
    icmpChecksumOk: checksum(p.payload) === 0,
    inner,
    innerIpChecksumOk: checksum(inner.header) === 0,
    innerL4ChecksumOk: whole ? checkPacket(inner).l4 : 'n/a',
  };
}

/** The IPv4 packets among captured frames (anything else, e.g. ARP, left out). */
export const ipv4Packets = (frames: Buffer[]): Ipv4Packet[] =>
  frames.map((f) => parseIpv4(f)).filter((p): p is Ipv4Packet => p !== undefined);

/** An ICMP error and the packet that carried it, flattened for one `expect`. */
export interface IcmpErrorSummary {
  readonly src: string;
  readonly dst: string;
  readonly ip: boolean;
  readonly type: number;
  readonly code: number;
  readonly mtu: number;
  readonly icmp: boolean;
  readonly innerSrc: string;
  readonly innerDst: string;
  readonly innerIp: boolean;
  readonly innerUdp: boolean | 'zero' | 'n/a';
}

/** Every ICMP error among captured frames, summarised (outer addresses and checksums, the embedded header). */
export function icmpErrors(frames: Buffer[]): IcmpErrorSummary[] {
  return ipv4Packets(frames).flatMap((p) => {
    const e = parseIcmpError(p);
    if (!e) return [];
    return [
      {
        src: p.src,
        dst: p.dst,
        ip: checkPacket(p).ip,
        type: e.type,
        code: e.code,
        mtu: e.mtu,
        icmp: e.icmpChecksumOk,
        innerSrc: e.inner.src,
        innerDst: e.inner.dst,
        innerIp: e.innerIpChecksumOk,
        innerUdp: e.innerL4ChecksumOk,
      },
    ];
  });
}

/** Reads what tcpdump -w wrote (classic pcap): the frames' bytes. */
export function pcapFrames(file: Buffer): Buffer[] {
  if (file.length < 24) return [];
  const le = file.readUInt32LE(0) === 0xa1b2c3d4 || file.readUInt32LE(0) === 0xa1b23c4d;
  const u32 = (at: number) => (le ? file.readUInt32LE(at) : file.readUInt32BE(at));
  const frames: Buffer[] = [];
  for (let at = 24; at + 16 <= file.length;) {
    const captured = u32(at + 8);
    frames.push(file.subarray(at + 16, at + 16 + captured));
    at += 16 + captured;
  }
  return frames;
}

export interface CraftedIpv4 {
  readonly srcMac: string;
  readonly dstMac: string;
  readonly src: string;
  readonly dst: string;
  readonly proto: number;
  readonly payload: Buffer;
  /** Overrides, to craft malformed headers. */
  readonly versionIhl?: number;
  readonly totalLength?: number;
  readonly fragment?: number;
}

/** An Ethernet/IPv4 frame with a correct IP checksum unless fields say otherwise. */
export function craftFrame(c: CraftedIpv4): Buffer {
  const mac = (m: string) => Buffer.from(m.split(':').map((x) => parseInt(x, 16)));
  const ip = Buffer.alloc(20);
  ip[0] = c.versionIhl ?? 0x45;
  ip.writeUInt16BE(c.totalLength ?? 20 + c.payload.length, 2);
  ip.writeUInt16BE(0x4a4e, 4);
  ip.writeUInt16BE(c.fragment ?? 0, 6);
  ip[8] = 64;
  ip[9] = c.proto;
  ipv4ToBytes(c.src).copy(ip, 12);
  ipv4ToBytes(c.dst).copy(ip, 16);
  ip.writeUInt16BE(checksum(ip), 10);
  return Buffer.concat([mac(c.dstMac), mac(c.srcMac), Buffer.from([0x08, 0x00]), ip, c.payload]);
}

/** A UDP header and payload whose checksum is right for `src` -> `dst` (or zero: none). */
export function udpDatagram(src: string, dst: string, sport: number, withChecksum: boolean): Buffer {
  const payload = Buffer.from('juneau fast path');
  const l4 = Buffer.alloc(8 + payload.length);
  l4.writeUInt16BE(sport, 0);
  l4.writeUInt16BE(9, 2);
  l4.writeUInt16BE(l4.length, 4);
  payload.copy(l4, 8);
  if (withChecksum) l4.writeUInt16BE(l4Checksum(src, dst, 17, l4), 6);
  return l4;
}

/** The TCP/UDP checksum of `l4` (its checksum field zero) for `src` -> `dst`. */
export function l4Checksum(src: string, dst: string, proto: number, l4: Buffer): number {
  return checksum(
    Buffer.concat([ipv4ToBytes(src), ipv4ToBytes(dst), Buffer.from([0, proto, l4.length >> 8, l4.length & 0xff]), l4]),
  );
}

/** A TCP SYN (20-byte header) with its checksum right for `src` -> `dst`. */
export function tcpSyn(src: string, dst: string): Buffer {
  const l4 = Buffer.alloc(20);
  l4.writeUInt16BE(40000, 0);
  l4.writeUInt16BE(8080, 2);
  l4.writeUInt32BE(12345, 4);
  l4[12] = 5 << 4;
  l4[13] = 0x02;
  l4.writeUInt16BE(65535, 14);
  l4.writeUInt16BE(l4Checksum(src, dst, 6, l4), 16);
  return l4;
}
