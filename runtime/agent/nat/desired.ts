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
import type { NodePrefixSource, ReservedAddresses } from './prefixes';
import { nodeInternalIPs } from '../interface';

export type ElasticIPObject = ElasticIP & KubeObject;
export type AttachmentObject = ElasticIPAttachment & KubeObject;
export type NetworkInterfaceObject = NetworkInterface & KubeObject;
export type ExternalNetworkObject = ExternalNetwork & KubeObject;
/** What the agent reads of a Node: its name, pod ranges (NAT-2) and addresses (NAT-2, EN-9). */
export type NodeObject = NodePrefixSource & KubeObject;

/** BGP-4: an address this node serves, for the BGP loop: an ElasticIP whose NAT or direct binding is in
 * this pass, or a NATGateway whose gateway this node is (ngw/served.ts). */
export interface ServedAddress {
  readonly address: string;
  readonly externalNetwork: string;
  /** `ElasticIP namespace/name` or `NATGateway namespace/name`. */
  readonly owner: string;
}

export interface DesiredNat {
  readonly nat: NatBinding[];
  readonly direct: DirectBinding[];
  /** EN-9: direct ElasticIPs held on other nodes, carried there by VXLAN. */
  readonly remote: RemoteBinding[];
  /** BGP-4: the ElasticIPs of `nat` and `direct`, sorted by owner, but those being deleted (BGP-5);
   * not those of `remote` (their node serves them). */
  readonly served: ServedAddress[];
  /** Objects of this node left out, with why (logged once per change). */
  readonly waiting: string[];
}

/** What the agent reads of a Pod of its node (H1): is it the NIC's, alive, and holding the address. */
export interface PodObject extends KubeObject {
  readonly spec?: { readonly nodeName?: string; readonly hostNetwork?: boolean };
  readonly status?: {
    readonly phase?: string;
    readonly podIP?: string;
    readonly podIPs?: ReadonlyArray<{ readonly ip?: string }>;
  };
}

export interface NatInputs {
  readonly nodeName: string;
  readonly elasticIPs: readonly ElasticIP[];
  readonly attachments: readonly ElasticIPAttachment[];
  readonly networkInterfaces: readonly NetworkInterface[];
  /** This node's Pods (H1): a NIC binds only while its Pod is the one it names, Running, with its address. */
  readonly pods: readonly PodObject[];
  /** For the VNIs (status.networkID) of direct ElasticIPs (EN-9). @default [] */
  readonly externalNetworks?: readonly ExternalNetwork[];
  /** For the InternalIP of the node holding a remote direct ElasticIP (EN-9). @default [] */
  readonly nodes?: readonly NodeObject[];
  /** H2, H5: the Node, Service-range and API-server addresses no binding may take. @default none */
  readonly reserved?: ReservedAddresses;
  /** H5: this node's own interface addresses, never an ElasticIP here. @default [] */
  readonly localAddresses?: readonly string[];
}

type Named = { metadata?: { namespace?: string; name?: string; creationTimestamp?: string; uid?: string } };

const keyOf = (o: Named, name = o.metadata?.name ?? '') => `${o.metadata?.namespace ?? ''}/${name}`;

/** H2: the older object first (creationTimestamp, then uid): a later claim on an address never
 * displaces the one that held it, whatever the names. */
const byAge = (a: Named, b: Named) =>
  (a.metadata?.creationTimestamp ?? '').localeCompare(b.metadata?.creationTimestamp ?? '') ||
  (a.metadata?.uid ?? '').localeCompare(b.metadata?.uid ?? '') ||
  keyOf(a).localeCompare(keyOf(b));

/** A binding one object of this node asks for, before the collision rule. */
interface Claim {
  readonly list: NatBinding[];
  readonly what: string;
  readonly by: Named;
  readonly binding: NatBinding;
  /** Undefined while the ElasticIP is being deleted: translated still, announced no more (BGP-5). */
  readonly served: ServedAddress | undefined;
}

/** This node's bindings, from the cluster's objects. Pure. */
export function desiredNat(input: NatInputs): DesiredNat {
  const eips = new Map(input.elasticIPs.map((e) => [keyOf(e), e]));
  const nics = new Map(input.networkInterfaces.map((n) => [keyOf(n), n]));
  const pods = new Map(input.pods.map((p) => [keyOf(p), p]));
  const local = new Set(input.localAddresses ?? []);
  const nat: NatBinding[] = [];
  const direct: NatBinding[] = [];
  const waiting: string[] = [];
  const claims: Claim[] = [];
  /** Why a binding of `nic` (this node's) to `elasticIP` must not be installed, or undefined. */
  const refusal = (nic: NetworkInterface, address: string, elasticIP: string) =>
    podProblem(nic, address, pods) ??
    withPrefix(`NetworkInterface ${keyOf(nic)} address`, input.reserved?.notPodAddress(address)) ??
    elasticIPProblem(elasticIP, input.reserved, local);
  for (const a of [...input.attachments].sort(byAge)) {
    if (a.status?.phase !== 'Attached' || a.status.nodeName !== input.nodeName) continue;
    const what = `ElasticIPAttachment ${keyOf(a)}`;
    const eip = eips.get(keyOf(a, a.spec?.elasticIP));
    const nic = nics.get(keyOf(a, a.spec?.networkInterface));
    const holder = eip?.status?.attachment;
    if (!eip?.status?.address || holder?.kind !== 'ElasticIPAttachment' || holder.name !== a.metadata?.name) {
      waiting.push(
        `${what}: ElasticIP ${a.spec?.elasticIP} has no address or does not name this attachment in status.attachment`,
      );
      continue;
    }
    if (!nic?.spec?.address) {
      waiting.push(`${what}: NetworkInterface ${a.spec?.networkInterface} has no address`);
      continue;
    }
    const refused = refusal(nic, nic.spec.address, eip.status.address);
    if (refused) waiting.push(`${what}: not translated: ${refused}`);
    else claims.push(claimOf(nat, what, a, eip, { elasticIP: eip.status.address, address: nic.spec.address }));
  }
  const networkIDs = new Map((input.externalNetworks ?? []).map((e) => [e.metadata?.name, e.status?.networkID ?? 0]));
  const remoteNics: Array<{ nic: NetworkInterface; elasticIP: string; vni: number }> = [];
  for (const n of [...input.networkInterfaces].sort(byAge)) {
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
      const refused = refusal(n, n.spec.address, eip.status.address);
      if (refused) waiting.push(`${what}: not forwarded: ${refused}`);
      else
        claims.push(
          claimOf(direct, what, n, eip, {
            elasticIP: eip.status.address,
            address: n.spec.address,
            ...(vni ? { vni } : {}),
          }),
        );
    }
  }
  const served: ServedAddress[] = [];
  const usedAddresses = takeClaims(claims, waiting, served);
  const remote = remoteDirect(
    remoteNics.filter(({ nic, elasticIP }) => {
      const refused = elasticIPProblem(elasticIP, input.reserved, local);
      if (refused) waiting.push(`NetworkInterface ${keyOf(nic)}: not carried to its node (EN-9): ${refused}`);
      return !refused;
    }),
    input.nodes ?? [],
    usedAddresses,
    waiting,
  );
  served.sort((a, b) => a.owner.localeCompare(b.owner));
  return { nat, direct, remote, served, waiting };
}

const claimOf = (list: NatBinding[], what: string, by: Named, eip: ElasticIP, binding: NatBinding): Claim => ({
  list,
  what,
  by,
  binding,
  served: eip.metadata?.deletionTimestamp
    ? undefined
    : {
        address: binding.elasticIP,
        externalNetwork: eip.spec?.externalNetwork ?? '',
        owner: `ElasticIP ${keyOf(eip)}`,
      },
});

/** One NIC address, one ElasticIP: of two claims the older object's wins, the other waits (the
 * controller's EIP-5/EIP-10 keep this from happening; the maps must never hold it). Returns who
 * holds each address. */
function takeClaims(claims: Claim[], waiting: string[], served: ServedAddress[]): Map<string, string> {
  const used = new Map<string, string>();
  for (const { list, what, binding, served: one } of claims.sort((a, b) => byAge(a.by, b.by))) {
    const holder = used.get(binding.address) ?? used.get(binding.elasticIP);
    if (holder) {
      waiting.push(
        `${what}: address ${binding.address} or ElasticIP ${binding.elasticIP} already used by ${holder}, which is older`,
      );
      continue;
    }
    used.set(binding.address, what);
    used.set(binding.elasticIP, what);
    list.push(binding);
    if (one) served.push(one);
  }
  return used;
}

const withPrefix = (prefix: string, reason: string | undefined) => reason && `${prefix} ${reason}`;

/** H5: why `elasticIP` must not be bound on this node, or undefined. */
function elasticIPProblem(
  elasticIP: string,
  reserved: ReservedAddresses | undefined,
  local: ReadonlySet<string>,
): string | undefined {
  if (local.has(elasticIP)) return `ElasticIP ${elasticIP} is an address of this node's own interfaces`;
  return withPrefix('ElasticIP', reserved?.notElasticIP(elasticIP));
}

/**
 * H1: why the NIC's address is not its Pod's now, or undefined. The Pod is the one the NIC's
 * controller owner reference names (same namespace, `spec.podName`, that uid), on this node, not
 * being deleted, not on the host network, Running, with `address` among its IPs: a Pod that
 * completed or went keeps its IP in status while the CNI gives it to another Pod.
 */
function podProblem(nic: NetworkInterface, address: string, pods: ReadonlyMap<string, PodObject>): string | undefined {
  const name = nic.spec?.podName ?? '';
  const owner = nic.metadata?.ownerReferences?.find((o) => o.kind === 'Pod' && o.controller);
  const pod = pods.get(keyOf(nic, name));
  const its = `its Pod ${nic.metadata?.namespace ?? ''}/${name}`;
  if (!owner?.uid) return `the NetworkInterface names no Pod uid in metadata.ownerReferences`;
  if (!pod) return `${its} is not on this node`;
  if (pod.metadata?.uid !== owner.uid)
    return `${its} is another Pod of that name (uid ${pod.metadata?.uid}, the NetworkInterface's is ${owner.uid})`;
  if (pod.metadata?.deletionTimestamp) return `${its} is being deleted`;
  if (pod.spec?.hostNetwork) return `${its} is on the host network: its address is the node's`;
  if (pod.status?.phase !== 'Running') return `${its} is ${pod.status?.phase ?? 'without a phase'}, not Running`;
  const ips = podIPs(pod);
  if (!ips.includes(address)) return `${its} has address ${ips.join(', ') || 'none'}, not ${address}`;
  return undefined;
}

/**
 * H1 (SEC-1), for every loop that binds an address to a Pod (the NAT here, the NATGateway's
 * ngw/inputs.ts): the Pod's IPv4 addresses while it is Running with them, not on the host network
 * and not being deleted; [] otherwise (a Pod that completed keeps its IP in status while the CNI
 * gives it to another Pod).
 */
export function runningPodIPv4s(pod: PodObject): string[] {
  if (pod.metadata?.deletionTimestamp || pod.spec?.hostNetwork || pod.status?.phase !== 'Running') return [];
  return podIPs(pod).filter((ip) => /^\d{1,3}(\.\d{1,3}){3}$/.test(ip));
}

/** The Pod's IPs: status.podIPs, else status.podIP. */
function podIPs(pod: PodObject): string[] {
  const listed = (pod.status?.podIPs ?? []).map((p) => p.ip ?? '').filter(Boolean);
  return listed.length ? listed : pod.status?.podIP ? [pod.status.podIP] : [];
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
