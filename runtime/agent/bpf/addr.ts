// IPv4 and MAC address text <-> bytes, shared by the map layouts and the prefix math.
// Strict parsing: the datapath must never receive a half-parsed address.

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

export function isIpv4(text: string): boolean {
  return IPV4.test(text);
}

/** Dotted quad -> unsigned 32-bit number (host arithmetic, not byte order). */
export function ipv4ToNumber(text: string): number {
  if (!IPV4.test(text)) throw new Error(`'${text}' is not an IPv4 address`);
  return text.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

export function ipv4FromNumber(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error(`${n} is not a 32-bit address`);
  return [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
}

/** Dotted quad -> 4 bytes in network order (a __be32 in the C structs). */
export function ipv4ToBytes(text: string): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(ipv4ToNumber(text));
  return bytes;
}

export function ipv4FromBytes(bytes: Buffer): string {
  return ipv4FromNumber(bytes.readUInt32BE(0));
}

export function macToBytes(text: string): Buffer {
  if (!MAC.test(text)) throw new Error(`'${text}' is not a MAC address (aa:bb:cc:dd:ee:ff)`);
  return Buffer.from(text.split(':').map((octet) => parseInt(octet, 16)));
}

export function macFromBytes(bytes: Buffer): string {
  return [...bytes.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}
