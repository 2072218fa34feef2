// Reads what tcpdump -w wrote: classic pcap, Ethernet link type. Only what the ARP tests need.
import { ipv4FromBytes, macFromBytes } from '../../runtime/agent/bpf/addr';

export interface ArpFields {
  readonly op: number;
  readonly sha: string;
  readonly sip: string;
  readonly tha: string;
  readonly tip: string;
}

export interface Frame {
  readonly dst: string;
  readonly src: string;
  readonly ethertype: number;
  /** Present for Ethernet/IPv4 ARP frames. */
  readonly arp?: ArpFields;
}

const ETH_P_ARP = 0x0806;
export const ARP_REQUEST = 1;
export const ARP_REPLY = 2;

export function parsePcap(file: Buffer): Frame[] {
  if (file.length < 24) return [];
  const magic = file.readUInt32LE(0);
  const le = magic === 0xa1b2c3d4 || magic === 0xa1b23c4d;
  if (!le && file.readUInt32BE(0) !== 0xa1b2c3d4 && file.readUInt32BE(0) !== 0xa1b23c4d) {
    throw new Error(`not a pcap file (magic ${magic.toString(16)})`);
  }
  const u32 = (at: number) => (le ? file.readUInt32LE(at) : file.readUInt32BE(at));
  const frames: Frame[] = [];
  for (let at = 24; at + 16 <= file.length; ) {
    const captured = u32(at + 8);
    const data = file.subarray(at + 16, at + 16 + captured);
    at += 16 + captured;
    if (data.length >= 14) frames.push(parseFrame(data));
  }
  return frames;
}

function parseFrame(data: Buffer): Frame {
  const ethertype = data.readUInt16BE(12);
  const frame = { dst: macFromBytes(data.subarray(0, 6)), src: macFromBytes(data.subarray(6, 12)), ethertype };
  if (ethertype !== ETH_P_ARP || data.length < 14 + 28) return frame;
  const arp = data.subarray(14);
  return {
    ...frame,
    arp: {
      op: arp.readUInt16BE(6),
      sha: macFromBytes(arp.subarray(8, 14)),
      sip: ipv4FromBytes(arp.subarray(14, 18)),
      tha: macFromBytes(arp.subarray(18, 24)),
      tip: ipv4FromBytes(arp.subarray(24, 28)),
    },
  };
}
