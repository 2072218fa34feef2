// Reads what tcpdump -w wrote: classic pcap, Ethernet link type. Only what the ARP tests need.
import { ipv4FromBytes, macFromBytes } from '../../runtime/agent/bpf/addr';

export interface ArpFields {
  readonly op: number;
  readonly sha: string;
  readonly sip: string;
  readonly tha: string;
  readonly tip: string;
}

/** A VLAN tag: its TPID (0x8100 802.1Q, 0x88a8 802.1ad) and VLAN id. */
export interface VlanTag {
  readonly tpid: number;
  readonly id: number;
}

export interface Frame {
  readonly dst: string;
  readonly src: string;
  /** The EtherType after any VLAN tags. */
  readonly ethertype: number;
  /** VLAN tags, outermost first; empty for an untagged frame. */
  readonly vlans: readonly VlanTag[];
  /** Present for Ethernet/IPv4 ARP frames, tagged or not. */
  readonly arp?: ArpFields;
  /** When the capture saw it: ms since the epoch (pcap's seconds and microseconds). */
  readonly timeMs: number;
}

const ETH_P_ARP = 0x0806;
export const ETH_P_8021Q = 0x8100;
export const ETH_P_8021AD = 0x88a8;
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
  for (let at = 24; at + 16 <= file.length;) {
    const captured = u32(at + 8);
    const timeMs = u32(at) * 1000 + u32(at + 4) / 1000;
    const data = file.subarray(at + 16, at + 16 + captured);
    at += 16 + captured;
    // Not enumerable: tests compare frames by value, where the capture time would differ.
    if (data.length >= 14)
      frames.push(Object.defineProperty(parseFrame(data), 'timeMs', { value: timeMs, enumerable: false }) as Frame);
  }
  return frames;
}

function parseFrame(data: Buffer): Omit<Frame, 'timeMs'> {
  // libpcap puts a tag the kernel kept out of band (VLAN offload) back into the frame.
  let at = 12;
  let ethertype = data.readUInt16BE(at);
  const vlans: VlanTag[] = [];
  while ((ethertype === ETH_P_8021Q || ethertype === ETH_P_8021AD) && data.length >= at + 6) {
    vlans.push({ tpid: ethertype, id: data.readUInt16BE(at + 2) & 0x0fff });
    at += 4;
    ethertype = data.readUInt16BE(at);
  }
  const frame = { dst: macFromBytes(data.subarray(0, 6)), src: macFromBytes(data.subarray(6, 12)), ethertype, vlans };
  if (ethertype !== ETH_P_ARP || data.length < at + 2 + 28) return frame;
  const arp = data.subarray(at + 2);
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
