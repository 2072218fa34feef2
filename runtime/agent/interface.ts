/**
 * Which interface the agent answers on (EN-12) and which addresses lie in its L2 subnets.
 * `--node-ingress-iface` wins; otherwise the interface holding the Node's InternalIP. Local
 * interfaces come from os.networkInterfaces() (getifaddrs: the calling process's network
 * namespace, no `ip` binary needed in the image); everything else here is pure.
 */
import * as os from 'node:os';
import { ipv4FromNumber, ipv4ToNumber, isIpv4 } from './bpf/addr';
import type { Prefix } from './bpf';

export interface InterfaceAddress {
  readonly address: string;
  readonly prefixLength: number;
}

/** A local interface with its IPv4 addresses. */
export interface LocalInterface {
  readonly name: string;
  readonly mac: string;
  readonly addresses: readonly InterfaceAddress[];
}

/** What os.networkInterfaces() returns (the subset read here), so tests can feed their own. */
export type InterfaceTable = Readonly<
  Record<
    string,
    ReadonlyArray<Pick<os.NetworkInterfaceInfo, 'address' | 'netmask' | 'family' | 'mac' | 'internal'>> | undefined
  >
>;

/** IPv4 interfaces of `table` (default: this network namespace), loopback excluded. libuv lists only
 * interfaces that are up and running (carrier), so a link that is down is absent. */
export function localInterfaces(table: InterfaceTable = os.networkInterfaces()): LocalInterface[] {
  const out: LocalInterface[] = [];
  for (const [name, entries] of Object.entries(table)) {
    const v4 = (entries ?? []).filter((e) => isIpv4Family(e.family) && !e.internal && isIpv4(e.address));
    if (v4.length === 0) continue;
    out.push({
      name,
      mac: v4[0].mac,
      addresses: v4.map((e) => ({ address: e.address, prefixLength: netmaskLength(e.netmask) })),
    });
  }
  return out;
}

// Node 18.0-18.3 reported the family as a number.
function isIpv4Family(family: string | number): boolean {
  return family === 'IPv4' || family === 4;
}

/** `255.255.255.0` -> 24; the error names a non-contiguous mask. */
export function netmaskLength(netmask: string): number {
  const n = ipv4ToNumber(netmask);
  const length = 32 - Math.log2(2 ** 32 - n);
  if (!Number.isInteger(length)) throw new Error(`netmask '${netmask}' is not contiguous`);
  return length;
}

/** The Node's InternalIP addresses (IPv4), in the order the Node lists them. */
export function nodeInternalIPs(node: {
  status?: { addresses?: ReadonlyArray<{ type?: string; address?: string }> };
}): string[] {
  return (node.status?.addresses ?? [])
    .filter((a) => a.type === 'InternalIP' && a.address && isIpv4(a.address))
    .map((a) => a.address as string);
}

export interface InterfaceQuery {
  /** `--node-ingress-iface`, if given. */
  readonly requested?: string;
  readonly nodeName: string;
  readonly internalIPs: readonly string[];
  readonly interfaces: readonly LocalInterface[];
}

/** The interface to answer on (EN-12); the error says what was looked for and what exists. */
export function chooseInterface(query: InterfaceQuery): LocalInterface {
  const names = query.interfaces.map((i) => i.name).join(', ') || 'none';
  if (query.requested) {
    const found = query.interfaces.find((i) => i.name === query.requested);
    if (!found)
      throw new Error(
        `--node-ingress-iface ${query.requested}: no such interface that is up with an IPv4 address (up with IPv4: ${names})`,
      );
    return found;
  }
  if (query.internalIPs.length === 0) {
    throw new Error(`Node ${query.nodeName} has no IPv4 InternalIP in status.addresses; pass --node-ingress-iface`);
  }
  for (const ip of query.internalIPs) {
    const found = query.interfaces.find((i) => i.addresses.some((a) => a.address === ip));
    if (found) return found;
  }
  throw new Error(
    `no local interface holds Node ${query.nodeName}'s InternalIP ${query.internalIPs.join(', ')} ` +
      `(up with IPv4: ${names}); pass --node-ingress-iface`,
  );
}

/** The L2 subnets of an interface: each address's network prefix. */
export function interfaceSubnets(iface: Pick<LocalInterface, 'addresses'>): Prefix[] {
  return iface.addresses.map(({ address, prefixLength }) => {
    const size = 2 ** (32 - prefixLength);
    const n = ipv4ToNumber(address);
    return { address: ipv4FromNumber(n - (n % size)), prefixLength };
  });
}

/** Whether two reads of an interface differ in what the agent uses. */
export function sameInterface(a: LocalInterface, b: LocalInterface): boolean {
  const key = (i: LocalInterface) =>
    `${i.name} ${i.mac} ${i.addresses
      .map((x) => `${x.address}/${x.prefixLength}`)
      .sort()
      .join(',')}`;
  return key(a) === key(b);
}
