/**
 * `kubectl juneau why <kind>/<name>`: a few readable lines on why an object is where it is — its
 * phase, the conditions that are not satisfied, its recent Warning Events, and the objects it
 * depends on (network, pools and how full they are, attachment, ARPAdvertisement) with what is
 * wrong with each. Read-only; every line comes from an object the API server holds now.
 */
import {
  addressClaimName,
  AGENT_LEASE,
  ALL_KINDS,
  INSTALL,
  type AddressPool,
  type AllocationClaim,
  type ARPAdvertisement,
  type BGPNodeState,
  type ExternalNetwork,
} from '../../api';
import { announcedRanges, isIPv4, rangesContain } from '../../api/validation';
import { parseIPv4 } from '../../api/validation/ipv4';
import type { KubeEvent } from '../kube/events';
import { juneauResource, JuneauResources, Resources, type ResourceType } from '../kube/resources';
import { getOrUndefined, type RestClient } from '../kube/rest';
import type { KubeObject, Stored } from '../kube/types';

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

/** Any Juneau object as the explanation reads it. */
type Obj = KubeObject & {
  metadata: NonNullable<KubeObject['metadata']>;
  spec?: Record<string, unknown>;
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: Condition[];
    address?: string;
    vip?: string;
    addressPool?: string;
    attachment?: { kind: string; name: string };
  } & Record<string, unknown>;
};

interface Target {
  readonly type: ResourceType;
  /** `svc/web` explains the ServiceLoadBalancer of Service web. */
  readonly viaService: boolean;
}

/** `eip`, `elasticip`, `elasticips`, `ElasticIP`, `svc`, `service` ... -> the resource to read. */
export function resolveKind(word: string): Target {
  const lower = word.toLowerCase();
  if (lower === 'svc' || lower === 'service' || lower === 'services')
    return { type: JuneauResources.serviceLoadBalancers, viaService: true };
  const def = ALL_KINDS.find((k) =>
    [k.kind.toLowerCase(), k.singular, k.plural, ...(('shortNames' in k ? k.shortNames : undefined) ?? [])].includes(
      lower,
    ),
  );
  if (!def)
    throw new Error(`unknown kind '${word}': one of ${ALL_KINDS.map((k) => k.singular).join(', ')}, or service`);
  return {
    type: juneauResource(def),
    viaService: false,
  };
}

/**
 * `why <address>`: who holds the address (its AllocationClaim names the holder, whatever its kind:
 * an ElasticIP, a ServiceLoadBalancer, a NATGateway), then that holder explained as `why <kind>/<name>`.
 */
async function explainAddress(rest: RestClient, address: string): Promise<string> {
  const claimName = addressClaimName(address);
  const claim = await getOrUndefined<Stored<AllocationClaim>>(
    rest,
    JuneauResources.allocationClaims,
    undefined,
    claimName,
  );
  if (!claim)
    return `address ${address} is held by nothing: no AllocationClaim ${claimName} (free, or outside every pool)\n`;
  const h = claim.spec.holder;
  const held = `address ${address} is held by ${h.kind} ${h.namespace ? `${h.namespace}/` : ''}${h.name} (claim ${claimName})`;
  if (!ALL_KINDS.some((k) => k.kind === h.kind)) return `${held}\n`;
  return `${held}\n${await explain(rest, h.namespace ?? '', `${h.kind}/${h.name}`)}`;
}

export async function explain(rest: RestClient, namespace: string, target: string): Promise<string> {
  if (!target.includes('/') && isIPv4(target)) return explainAddress(rest, target);
  const slash = target.indexOf('/');
  const { type, viaService } = resolveKind(target.slice(0, slash));
  const name = target.slice(slash + 1);
  const ns = type.namespaced ? namespace : undefined;
  const obj = await getOrUndefined<Obj>(rest, type, ns, name);
  const where = ns ? ` in namespace ${ns}` : '';
  if (!obj) {
    if (viaService && !(await getOrUndefined<KubeObject>(rest, Resources.services, ns, name)))
      throw new Error(`Service ${name} not found${where}`);
    if (viaService)
      return `Service ${name}${where} has no ServiceLoadBalancer: it is not type LoadBalancer with loadBalancerClass juneau.loutres.me/load-balancer, or the controller has not seen it (SLB-1)\n`;
    throw new Error(`${type.kind} ${name} not found${where}`);
  }
  const lines = [
    headline(type.kind, obj),
    ...conditionLines(obj),
    ...(await eventLines(rest, type.kind, obj)),
    ...(await dependencyLines(rest, type.kind, obj)),
  ];
  return lines.join('\n') + '\n';
}

/** The kinds with a status.phase (the others say what they are through their status fields). */
const PHASED = new Set(['ElasticIP', 'ServiceLoadBalancer', 'ElasticIPAttachment', 'NetworkInterface', 'NATGateway']);

/** The first condition that is not True: the reason the object is not done, if it says one. */
const blocking = (o: Obj): Condition | undefined => o.status?.conditions?.find((c) => c.status !== 'True' && c.message);

function headline(kind: string, o: Obj): string {
  const id = o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
  const address =
    o.status?.address ?? o.status?.vip ?? (typeof o.spec?.address === 'string' ? o.spec.address : undefined);
  const phase = !PHASED.has(kind) ? '' : `: ${o.status?.phase ?? 'no status yet (is the controller running?)'}`;
  const shown = blocking(o);
  const why = shown?.message ?? o.status?.message;
  // The condition the reason comes from, so an operator can match it to `kubectl get -o yaml` and alerts.
  const from = shown
    ? ` (condition ${shown.type}=${shown.status}${shown.reason ? `, reason ${shown.reason}` : ''})`
    : '';
  return `${kind} ${id}${phase}${address ? `, address ${address}` : ''}${why ? `\n  because: ${why}${from}` : ''}`;
}

/** The conditions besides the one the headline already gave as the reason. */
function conditionLines(o: Obj): string[] {
  const shown = blocking(o);
  const lines = (o.status?.conditions ?? [])
    .filter((c) => c !== shown)
    .map(
      (c) => `  condition ${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ''}${c.message ? `: ${c.message}` : ''}`,
    );
  if (o.status?.reason) lines.push(`  reason ${o.status.reason}`);
  return lines;
}

/** The last Warning Events about the object (Events of a cluster-scoped object live in `default`). */
async function eventLines(rest: RestClient, kind: string, o: Obj): Promise<string[]> {
  const events = await rest.list<KubeEvent>(Resources.events, { namespace: o.metadata.namespace || 'default' });
  const about = events.items
    .filter((e) => e.regarding?.kind === kind && e.regarding?.name === o.metadata.name && e.type === 'Warning')
    .sort((a, b) => time(b).localeCompare(time(a)))
    .slice(0, 3);
  return about.map((e) => `  event ${e.reason}${e.series?.count ? ` (x${e.series.count})` : ''}: ${e.note}`);
}

const time = (e: KubeEvent): string => e.series?.lastObservedTime ?? e.eventTime ?? e.metadata?.creationTimestamp ?? '';

async function dependencyLines(rest: RestClient, kind: string, o: Obj): Promise<string[]> {
  const ns = o.metadata.namespace;
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  switch (kind) {
    case 'ElasticIP':
      return [
        ...(await networkLines(rest, str(o.spec?.externalNetwork), o.status?.addressPool)),
        ...(await usersOfElasticIP(rest, ns ?? '', o.metadata.name ?? '')),
        ...(await announcementLines(
          rest,
          str(o.spec?.externalNetwork),
          o.status?.address,
          await servingNodes(rest, o),
        )),
      ];
    case 'ServiceLoadBalancer': {
      const service = await getOrUndefined<KubeObject>(rest, Resources.services, ns, o.metadata.name ?? '');
      return [
        service
          ? `  Service ${ns}/${o.metadata.name}: exists`
          : `  Service ${ns}/${o.metadata.name}: does not exist (the controller deletes this ServiceLoadBalancer)`,
        ...(await networkLines(rest, str(o.spec?.externalNetwork), o.status?.addressPool)),
        ...(await announcementLines(
          rest,
          str(o.spec?.externalNetwork),
          o.status?.vip,
          Array.isArray(o.status?.advertisingNodes) ? (o.status.advertisingNodes as string[]) : [],
        )),
      ];
    }
    case 'ElasticIPAttachment':
      return [
        await peerLine(rest, JuneauResources.elasticIPs, ns, str(o.spec?.elasticIP)),
        await peerLine(rest, JuneauResources.networkInterfaces, ns, str(o.spec?.networkInterface)),
      ];
    case 'NetworkInterface':
      return [
        `  Pod ${ns}/${str(o.spec?.podName) ?? '?'} on node ${str(o.spec?.nodeName) ?? '(not scheduled yet)'}`,
        ...(str(o.spec?.elasticIP)
          ? [await peerLine(rest, JuneauResources.elasticIPs, ns, str(o.spec?.elasticIP))]
          : []),
      ];
    case 'NATGateway':
      return [
        ...(await networkLines(rest, str(o.spec?.externalNetwork), o.status?.addressPool)),
        await gatewayNodeLine(rest, str(o.status?.nodeName)),
        `  pods: ${Number(o.status?.selectedPods ?? 0)} selected use it; ${Number(o.status?.contestedPodCount ?? 0)} selected use an older NATGateway (NGW-4)`,
        ...(await announcementLines(
          rest,
          str(o.spec?.externalNetwork),
          o.status?.address,
          str(o.status?.nodeName) ? [str(o.status?.nodeName)!] : [],
        )),
      ];
    case 'AddressPool':
      return poolLines(o as Stored<AddressPool>);
    case 'ExternalNetwork':
      return networkLines(rest, o.metadata.name, undefined);
    case 'ARPAdvertisement': {
      const node = str(o.spec?.nodeName);
      const exists = node ? await getOrUndefined<KubeObject>(rest, Resources.nodes, undefined, node) : undefined;
      return [
        `  node ${node ?? '?'}: ${exists ? 'exists' : 'does not exist'}`,
        ...(await networkLines(rest, str(o.spec?.externalNetwork), undefined, false)),
      ];
    }
    default:
      return [];
  }
}

/** The network, then its pools (or only `onlyPool`, the one the address came from) and how full they are. */
async function networkLines(
  rest: RestClient,
  name: string | undefined,
  onlyPool: string | undefined,
  withPools = true,
): Promise<string[]> {
  if (!name) return ['  ExternalNetwork: none named'];
  const net = await getOrUndefined<Stored<ExternalNetwork>>(rest, JuneauResources.externalNetworks, undefined, name);
  if (!net) return [`  ExternalNetwork ${name}: does not exist`];
  const id = net.status?.networkID
    ? `networkID ${net.status.networkID}`
    : 'no networkID yet (EN-8: nothing can use its addresses until the controller gives it one)';
  const lines = [`  ExternalNetwork ${name}: type ${net.spec.type}, ${id}, pools ${net.spec.addressPools.join(', ')}`];
  if (!withPools) return lines;
  for (const poolName of onlyPool ? [onlyPool] : net.spec.addressPools) {
    const pool = await getOrUndefined<Stored<AddressPool>>(rest, JuneauResources.addressPools, undefined, poolName);
    lines.push(...(pool ? poolLines(pool) : [`  AddressPool ${poolName}: does not exist`]));
  }
  return lines;
}

const EXHAUSTED = ' — exhausted: no address left to allocate';

function poolLines(pool: Stored<AddressPool>): string[] {
  const { size, used } = pool.status ?? {};
  const usage =
    size === undefined
      ? 'size not reported yet'
      : `${used ?? 0} of ${size} addresses used${(used ?? 0) >= size ? EXHAUSTED : ''}`;
  return [`  AddressPool ${pool.metadata.name}: ${pool.spec.advertiseMode}, ${usage}`];
}

/** ElasticIPAttachments and NetworkInterfaces naming the ElasticIP, with their phase. */
async function usersOfElasticIP(rest: RestClient, ns: string, name: string): Promise<string[]> {
  const [attachments, nics] = await Promise.all([
    rest.list<Obj>(JuneauResources.elasticIPAttachments, { namespace: ns }),
    rest.list<Obj>(JuneauResources.networkInterfaces, { namespace: ns }),
  ]);
  const users = [
    ...attachments.items.filter((a) => a.spec?.elasticIP === name),
    ...nics.items.filter((n) => n.spec?.elasticIP === name),
  ];
  if (users.length === 0) return ['  used by: nothing (no ElasticIPAttachment or NetworkInterface names it)'];
  return users.map((u) => {
    const node = typeof u.status?.nodeName === 'string' ? ` on node ${u.status.nodeName}` : '';
    return `  used by ${u.kind} ${u.metadata.name}: ${phaseOf(u)}${node}`;
  });
}

/** How the address reaches the network: ARPAdvertisements on an arp network, BGP on a bgp one. */
async function announcementLines(
  rest: RestClient,
  network: string | undefined,
  address: string | undefined,
  expected: readonly string[],
): Promise<string[]> {
  const net = network
    ? await getOrUndefined<Stored<ExternalNetwork>>(rest, JuneauResources.externalNetworks, undefined, network)
    : undefined;
  return net?.spec.type === 'bgp' ? bgpLines(rest, address, expected) : advertisementLines(rest, address);
}

/** BGP-4: the node an ElasticIP is served from: its attachment's (NAT) or its holding NIC's (direct). */
async function servingNodes(rest: RestClient, eip: Obj): Promise<string[]> {
  const a = eip.status?.attachment;
  if (!a) return [];
  const type = a.kind === 'NetworkInterface' ? JuneauResources.networkInterfaces : JuneauResources.elasticIPAttachments;
  const user = await getOrUndefined<Obj>(rest, type, eip.metadata.namespace, a.name);
  const node = user?.status?.nodeName ?? user?.spec?.nodeName;
  return typeof node === 'string' && node ? [node] : [];
}

/** How many nodes the BGP lines name one by one (the rest are counted). */
const NAMED_BGP_NODES = 5;

/**
 * BGP-4, BGP-5, BGP-7: which nodes announce the address (their BGPNodeState reports it announced
 * over an Established session) and why the others do not: the ones that should (`expected`: an
 * SLB's advertisingNodes, the serving node) with their sessions; the rest are not asked to.
 */
async function bgpLines(rest: RestClient, address: string | undefined, expected: readonly string[]): Promise<string[]> {
  if (!address) return [];
  const ip = parseIPv4(address);
  const states = (await rest.list<Stored<BGPNodeState>>(JuneauResources.bgpNodeStates)).items;
  const announcing = states.filter(
    (s) => ip !== undefined && rangesContain(announcedRanges(s.status?.announced?.addresses), ip),
  );
  const names = announcing.map((s) => s.spec.nodeName).sort();
  const more = (n: number) => (n > NAMED_BGP_NODES ? ` and ${n - NAMED_BGP_NODES} more` : '');
  const lines = [
    names.length > 0
      ? `  BGP: ${address} announced by ${names.length} node(s): ${names.slice(0, NAMED_BGP_NODES).join(', ')}${more(names.length)}`
      : `  BGP: ${address} announced by no node, so no router has a route to it`,
  ];
  const missing = expected.filter((n) => !names.includes(n)).sort();
  for (const node of missing.slice(0, NAMED_BGP_NODES)) {
    const state = states.find((s) => s.spec.nodeName === node);
    const sessions = (state?.status?.peers ?? []).map(
      (p) => `${p.peer} ${p.state}${p.lastError ? ` (${p.lastError})` : ''}`,
    );
    lines.push(
      !state
        ? `  BGP: not by node ${node}, which should: its agent has written no BGPNodeState (is the agent running with bgpDaemon?)`
        : `  BGP: not by node ${node}, which should: sessions ${sessions.join(', ') || 'none'}${sessions.length && state.status?.peers?.some((p) => p.state === 'Established') ? '; Established, but it does not report the address announced yet' : ''}`,
    );
  }
  if (missing.length > NAMED_BGP_NODES)
    lines.push(`  BGP: and ${missing.length - NAMED_BGP_NODES} more nodes that should`);
  const others = states.filter((s) => !names.includes(s.spec.nodeName) && !expected.includes(s.spec.nodeName)).length;
  if (others > 0)
    lines.push(
      `  BGP: ${others} other node(s) with a BGP daemon do not announce it: not asked to (${expected.length ? `only ${expected.join(', ')} should` : 'no node serves it'})`,
    );
  return lines;
}

async function advertisementLines(rest: RestClient, address: string | undefined): Promise<string[]> {
  if (!address) return [];
  const ads = (await rest.list<Stored<ARPAdvertisement>>(JuneauResources.arpAdvertisements)).items.filter(
    (a) => a.spec.address === address,
  );
  if (ads.length === 0)
    return [
      `  ARPAdvertisement for ${address}: none, so no node answers ARP for it (unused, bgp, or no node can serve it)`,
    ];
  return ads.map((a) => `  ARPAdvertisement ${a.metadata.name}: node ${a.spec.nodeName} answers ARP for ${address}`);
}

async function peerLine(
  rest: RestClient,
  type: ResourceType,
  ns: string | undefined,
  name: string | undefined,
): Promise<string> {
  if (!name) return `  ${type.kind}: none named`;
  const peer = await getOrUndefined<Obj>(rest, type, ns, name);
  if (!peer) return `  ${type.kind} ${name}: does not exist`;
  const address = peer.status?.address ?? (typeof peer.spec?.address === 'string' ? peer.spec.address : undefined);
  return `  ${type.kind} ${name}: ${phaseOf(peer)}${address ? `, address ${address}` : ''}`;
}

/** `Phase (Reason)`, or `no status` before the controller has written one. */
function phaseOf(o: Obj): string {
  const reason = o.status?.reason ? ` (${o.status.reason})` : '';
  return `${o.status?.phase ?? 'no status'}${reason}`;
}

/** NGW-3: the gateway node, whether it is Ready, and its agent Lease (FO-3). */
async function gatewayNodeLine(rest: RestClient, node: string | undefined): Promise<string> {
  if (!node) return '  gateway node: none (no node can serve; see the Ready condition)';
  type NodeView = KubeObject & { status?: { conditions?: Condition[] } };
  const n = await getOrUndefined<NodeView>(rest, Resources.nodes, undefined, node);
  if (!n) return `  gateway node ${node}: does not exist`;
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? 'Ready' : 'not Ready';
  const lease = await getOrUndefined<KubeObject & { spec?: { renewTime?: string } }>(
    rest,
    Resources.leases,
    INSTALL.namespace,
    `${AGENT_LEASE.namePrefix}${node}`,
  );
  const renewed = lease?.spec?.renewTime ? `agent Lease renewed ${lease.spec.renewTime}` : 'no agent Lease';
  return `  gateway node ${node}: ${ready}, ${renewed}`;
}
