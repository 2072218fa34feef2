/**
 * `kubectl juneau status`: every address (ElasticIPs and ServiceLoadBalancers) with its network,
 * owner, phase and the node answering ARP for it, read from the ARPAdvertisements (ARP-1) rather
 * than from the owner's status, so it shows what the agents are told to answer.
 */
import type { ARPAdvertisement, ElasticIP, ServiceLoadBalancer } from '../../api';
import { compareAddresses } from '../agent/arp/desired';
import { JuneauResources } from '../kube/resources';
import type { RestClient } from '../kube/rest';
import type { Stored } from '../kube/types';
import { table } from './format';

export interface AddressRow {
  readonly namespace: string;
  readonly kind: 'ElasticIP' | 'ServiceLoadBalancer';
  readonly name: string;
  /** '' while none is allocated. */
  readonly address: string;
  readonly network: string;
  /** What uses the address: `Service/web`, `ElasticIPAttachment/a`, '' when unused. */
  readonly owner: string;
  readonly phase: string;
  /** The nodes of the ARPAdvertisements for the address: one, none, or (ARP-4 broken) several. */
  readonly nodes: readonly string[];
}

type Eip = Stored<ElasticIP>;
type Slb = Stored<ServiceLoadBalancer>;
type Ad = Stored<ARPAdvertisement>;

/** Reads the addresses of `namespace` (undefined: all namespaces) and their answering nodes. */
export async function readStatus(rest: RestClient, namespace: string | undefined): Promise<AddressRow[]> {
  const [eips, slbs, ads] = await Promise.all([
    rest.list<Eip>(JuneauResources.elasticIPs, { namespace }),
    rest.list<Slb>(JuneauResources.serviceLoadBalancers, { namespace }),
    rest.list<Ad>(JuneauResources.arpAdvertisements),
  ]);
  return statusRows(eips.items, slbs.items, ads.items);
}

/** Pure: rows sorted by address (unallocated last), then namespace and name. */
export function statusRows(eips: readonly Eip[], slbs: readonly Slb[], ads: readonly Ad[]): AddressRow[] {
  const nodesOf = new Map<string, string[]>();
  for (const ad of ads) {
    if (!ad.spec?.address) continue;
    nodesOf.set(ad.spec.address, [...(nodesOf.get(ad.spec.address) ?? []), ad.spec.nodeName].sort());
  }
  const rows: AddressRow[] = [
    ...eips.map((e) => ({
      namespace: e.metadata.namespace ?? '',
      kind: 'ElasticIP' as const,
      name: e.metadata.name,
      address: e.status?.address ?? '',
      network: e.spec.externalNetwork,
      owner: e.status?.attachment ? `${e.status.attachment.kind}/${e.status.attachment.name}` : '',
      phase: e.status?.phase ?? '',
      nodes: e.status?.address ? (nodesOf.get(e.status.address) ?? []) : [],
    })),
    ...slbs.map((s) => ({
      namespace: s.metadata.namespace ?? '',
      kind: 'ServiceLoadBalancer' as const,
      name: s.metadata.name,
      address: s.status?.vip ?? '',
      network: s.spec?.externalNetwork ?? '',
      // A ServiceLoadBalancer is its Service's, named alike (SLB-1).
      owner: `Service/${s.metadata.ownerReferences?.find((o) => o.kind === 'Service')?.name ?? s.metadata.name}`,
      phase: s.status?.phase ?? '',
      nodes: s.status?.vip ? (nodesOf.get(s.status.vip) ?? []) : [],
    })),
  ];
  return rows.sort(
    (a, b) =>
      (a.address && b.address ? compareAddresses(a.address, b.address) : a.address ? -1 : b.address ? 1 : 0) ||
      a.namespace.localeCompare(b.namespace) ||
      a.name.localeCompare(b.name),
  );
}

export function renderStatus(rows: readonly AddressRow[], allNamespaces: boolean): string {
  const dash = (s: string) => s || '-';
  const header = ['ADDRESS', 'KIND', 'NAME', 'NETWORK', 'OWNER', 'PHASE', 'NODE'];
  const cells = rows.map((r) => [
    dash(r.address),
    r.kind,
    r.name,
    dash(r.network),
    dash(r.owner),
    dash(r.phase),
    r.nodes.length ? r.nodes.join(',') : '-',
  ]);
  if (!allNamespaces) return table(header, cells);
  return table(
    ['NAMESPACE', ...header],
    cells.map((c, i) => [rows[i].namespace, ...c]),
  );
}
