/**
 * This node's ElasticIP bindings (EIP-4, DIR-1, EN-9), from the cluster's objects: desiredNat, the
 * pure decision of the NAT loop (sync.ts NatSync writes it to the pinned maps).
 *
 * A binding is on this node when the cluster says so, each side from its owner:
 *  - NAT: an ElasticIPAttachment in phase Attached whose status.nodeName is this node; the
 *    ElasticIP's status names that attachment (EIP-7) and has an address; the NetworkInterface
 *    has an address. An attachment moved to another node leaves this node's maps at the next pass.
 *  - direct: a Ready NetworkInterface of this node with spec.elasticIP, the ElasticIP's status
 *    naming that NetworkInterface, and the NIC's address as the next hop; its VXLAN device accepts
 *    the ExternalNetwork's status.networkID (EN-9).
 *  - remote (EN-9): the same, for a NetworkInterface of ANOTHER node: what reaches this node for the
 *    ElasticIP (an upstream router that still has this node's MAC for it, ARP-8) is carried by VXLAN
 *    with the ExternalNetwork's status.networkID to that node's InternalIP. Not while the networkID
 *    is 0 (EN-8: such a NIC should not exist) or the Node has no InternalIP; the reason is logged.
 */
import type { ElasticIP, ElasticIPAttachment, ExternalNetwork, NetworkInterface } from '../../../api';
import type { KubeObject } from '../../kube/types';
import type { DirectBinding, NatBinding, RemoteBinding } from '../bpf/nat';
import type { NodePrefixSource } from './prefixes';
import { nodeInternalIPs } from '../interface';

export type ElasticIPObject = ElasticIP & KubeObject;
export type AttachmentObject = ElasticIPAttachment & KubeObject;
export type NetworkInterfaceObject = NetworkInterface & KubeObject;
export type ExternalNetworkObject = ExternalNetwork & KubeObject;
/** What the agent reads of a Node: its name, pod ranges (NAT-2) and addresses (NAT-2, EN-9). */
export type NodeObject = NodePrefixSource & KubeObject;

export interface DesiredNat {
  readonly nat: NatBinding[];
  readonly direct: DirectBinding[];
  /** EN-9: direct ElasticIPs held on other nodes, carried there by VXLAN. */
  readonly remote: RemoteBinding[];
  /** Objects of this node left out, with why (logged once per change). */
  readonly waiting: string[];
}

export interface NatInputs {
  readonly nodeName: string;
  readonly elasticIPs: readonly ElasticIP[];
  readonly attachments: readonly ElasticIPAttachment[];
  readonly networkInterfaces: readonly NetworkInterface[];
  /** For the VNIs (status.networkID) of direct ElasticIPs (EN-9). @default [] */
  readonly externalNetworks?: readonly ExternalNetwork[];
  /** For the InternalIP of the node holding a remote direct ElasticIP (EN-9). @default [] */
  readonly nodes?: readonly NodeObject[];
}

const keyOf = (o: { metadata?: { namespace?: string; name?: string } }, name = o.metadata?.name ?? '') =>
  `${o.metadata?.namespace ?? ''}/${name}`;

/** This node's bindings, from the cluster's objects. Pure. */
export function desiredNat(input: NatInputs): DesiredNat {
  const eips = new Map(input.elasticIPs.map((e) => [keyOf(e), e]));
  const nics = new Map(input.networkInterfaces.map((n) => [keyOf(n), n]));
  const nat: NatBinding[] = [];
  const direct: NatBinding[] = [];
  const waiting: string[] = [];
  const usedAddresses = new Map<string, string>();
  const take = (list: NatBinding[], what: string, binding: NatBinding) => {
    // One NIC address, one ElasticIP: a second claim waits (the controller's EIP-5/EIP-10 keep
    // this from happening; the maps must never hold it).
    const holder = usedAddresses.get(binding.address) ?? usedAddresses.get(binding.elasticIP);
    if (holder)
      return waiting.push(
        `${what}: address ${binding.address} or ElasticIP ${binding.elasticIP} already used by ${holder}`,
      );
    usedAddresses.set(binding.address, what);
    usedAddresses.set(binding.elasticIP, what);
    list.push(binding);
  };
  const sorted = <T extends { metadata?: { namespace?: string; name?: string } }>(items: readonly T[]) =>
    [...items].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  for (const a of sorted(input.attachments)) {
    if (a.status?.phase !== 'Attached' || a.status.nodeName !== input.nodeName) continue;
    const what = `ElasticIPAttachment ${keyOf(a)}`;
    const eip = eips.get(keyOf(a, a.spec?.elasticIP));
    const nic = nics.get(keyOf(a, a.spec?.networkInterface));
    const holder = eip?.status?.attachment;
    if (!eip?.status?.address || holder?.kind !== 'ElasticIPAttachment' || holder.name !== a.metadata?.name) {
      waiting.push(
        `${what}: ElasticIP ${a.spec?.elasticIP} has no address or does not name this attachment in status.attachment`,
      );
    } else if (!nic?.spec?.address) {
      waiting.push(`${what}: NetworkInterface ${a.spec?.networkInterface} has no address`);
    } else {
      take(nat, what, { elasticIP: eip.status.address, address: nic.spec.address });
    }
  }
  const networkIDs = new Map((input.externalNetworks ?? []).map((e) => [e.metadata?.name, e.status?.networkID ?? 0]));
  const remoteNics: Array<{ nic: NetworkInterface; elasticIP: string; vni: number }> = [];
  for (const n of sorted(input.networkInterfaces)) {
    if (!n.spec?.elasticIP || !n.spec.nodeName || n.status?.phase !== 'Ready') continue;
    const what = `NetworkInterface ${keyOf(n)}`;
    const eip = eips.get(keyOf(n, n.spec.elasticIP));
    const holder = eip?.status?.attachment;
    const vni = networkIDs.get(eip?.spec?.externalNetwork) ?? 0;
    if (!eip?.status?.address || holder?.kind !== 'NetworkInterface' || holder.name !== n.metadata?.name) {
      if (n.spec.nodeName === input.nodeName)
        waiting.push(
          `${what}: ElasticIP ${n.spec.elasticIP} has no address or does not name this NetworkInterface in status.attachment`,
        );
    } else if (n.spec.nodeName !== input.nodeName) {
      remoteNics.push({ nic: n, elasticIP: eip.status.address, vni });
    } else if (!n.spec.address) {
      waiting.push(`${what}: no address to reach the pod by`);
    } else {
      take(direct, what, { elasticIP: eip.status.address, address: n.spec.address, ...(vni ? { vni } : {}) });
    }
  }
  const remote = remoteDirect(remoteNics, input.nodes ?? [], usedAddresses, waiting);
  return { nat, direct, remote, waiting };
}

/** EN-9: where each direct ElasticIP of another node is carried; a reason for each one that is not. */
function remoteDirect(
  nics: ReadonlyArray<{ nic: NetworkInterface; elasticIP: string; vni: number }>,
  nodes: readonly NodeObject[],
  used: ReadonlyMap<string, string>,
  waiting: string[],
): RemoteBinding[] {
  const nodeIPs = new Map(nodes.map((n) => [n.metadata?.name, nodeInternalIPs(n)[0]]));
  const remote: RemoteBinding[] = [];
  const seen = new Map<string, string>();
  for (const { nic, elasticIP, vni } of nics) {
    const what = `NetworkInterface ${keyOf(nic)} (ElasticIP ${elasticIP}, node ${nic.spec?.nodeName})`;
    const node = nodeIPs.get(nic.spec?.nodeName);
    const holder = used.get(elasticIP) ?? seen.get(elasticIP);
    if (holder) waiting.push(`${what}: not carried to its node (EN-9): the ElasticIP is also held by ${holder}`);
    else if (vni === 0)
      waiting.push(`${what}: not carried to its node (EN-9): its ExternalNetwork's status.networkID is 0 (EN-8)`);
    else if (!node) waiting.push(`${what}: not carried to its node (EN-9): the Node has no IPv4 InternalIP`);
    else {
      seen.set(elasticIP, what);
      remote.push({ elasticIP, node, vni });
    }
  }
  return remote;
}
