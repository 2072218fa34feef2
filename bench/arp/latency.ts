// Reply latency from a capture on the client's side of the veth (bench/README.md).
//
// The prober sends numbered ARP requests: probe i carries the sender hardware address
// 02:00:00:00:hi:lo (i = hi * 256 + lo). Every responder echoes that address back (a reply puts
// it in the target hardware address, xdp_reflect leaves the request as it was), so each reply
// is paired with exactly its own request; a reply that comes late is not mistaken for the next
// one, and a missing reply is counted as lost. The timestamps are the kernel's own (skb
// timestamps taken at the packet taps, nanosecond precision), not the prober's or tcpdump's
// reading of a clock in user space.

export const PROBE_OUI = [0x02, 0x00, 0x00, 0x00];

export interface TimedFrame {
  readonly ns: bigint;
  readonly data: Buffer;
}

/** Reads classic pcap (tcpdump -w), keeping each frame's timestamp in nanoseconds. */
export function readTimedPcap(file: Buffer): TimedFrame[] {
  if (file.length < 24) return [];
  const magic = file.readUInt32LE(0);
  let le: boolean;
  let nano: boolean;
  if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) {
    le = true;
    nano = magic === 0xa1b23c4d;
  } else {
    const be = file.readUInt32BE(0);
    if (be !== 0xa1b2c3d4 && be !== 0xa1b23c4d) throw new Error(`not a pcap file (magic ${magic.toString(16)})`);
    le = false;
    nano = be === 0xa1b23c4d;
  }
  const u32 = (at: number) => (le ? file.readUInt32LE(at) : file.readUInt32BE(at));
  const frames: TimedFrame[] = [];
  for (let at = 24; at + 16 <= file.length;) {
    const sec = BigInt(u32(at));
    const frac = BigInt(u32(at + 4));
    const captured = u32(at + 8);
    frames.push({
      ns: sec * 1_000_000_000n + (nano ? frac : frac * 1000n),
      data: file.subarray(at + 16, at + 16 + captured),
    });
    at += 16 + captured;
  }
  return frames;
}

/** The probe number carried in a MAC address, or undefined when it is not a probe address. */
function probeId(mac: Buffer): number | undefined {
  for (let i = 0; i < PROBE_OUI.length; i++) if (mac[i] !== PROBE_OUI[i]) return undefined;
  return mac[4] * 256 + mac[5];
}

export interface LatencyResult {
  /** Request-to-reply times in microseconds, one per answered probe, in probe order. */
  readonly micros: number[];
  readonly sent: number;
  readonly lost: number;
}

/**
 * Pairs requests and replies in a capture taken on the client's port. Requests are the frames
 * whose Ethernet source is `clientMac`; anything else carrying a probe address is a reply (an
 * ARP reply for `vip` with the probe address as target, or a reflected request). Probes with an
 * id below `warmup` are left out.
 */
export function pairProbes(frames: TimedFrame[], clientMac: Buffer, vip: Buffer, warmup: number): LatencyResult {
  const sentAt = new Map<number, bigint>();
  const latency = new Map<number, number>();
  for (const { ns, data } of frames) {
    if (data.length < 14 + 28 || data.readUInt16BE(12) !== 0x0806) continue;
    const arp = data.subarray(14);
    const op = arp.readUInt16BE(6);
    const sha = arp.subarray(8, 14);
    const tha = arp.subarray(18, 24);
    if (data.subarray(6, 12).equals(clientMac)) {
      const id = op === 1 ? probeId(sha) : undefined;
      if (id !== undefined && !sentAt.has(id)) sentAt.set(id, ns);
      continue;
    }
    let id: number | undefined;
    if (op === 2 && arp.subarray(14, 18).equals(vip)) id = probeId(tha);
    else if (op === 1) id = probeId(sha); // xdp_reflect: the request itself, addresses swapped
    if (id === undefined || latency.has(id)) continue;
    const sent = sentAt.get(id);
    if (sent !== undefined && ns >= sent) latency.set(id, Number(ns - sent) / 1000);
  }
  const ids = [...sentAt.keys()].filter((id) => id >= warmup).sort((a, b) => a - b);
  const micros = ids.filter((id) => latency.has(id)).map((id) => latency.get(id)!);
  return { micros, sent: ids.length, lost: ids.length - micros.length };
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when empty. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
