/**
 * The generated parts of the user documentation in docs/: each kind's page carries its field
 * table and its `kubectl get` columns rendered from the same kind definitions as the CRDs, so a
 * page cannot describe a field the API server does not have. The prose around them is written by
 * hand. `npx tsx scripts/api-reference.ts` rewrites these parts; a unit test fails when one is stale.
 */
import { AnyKind } from './kind';
import { ALL_KINDS } from './kinds/all';
import { kindFields } from './reference';

/** The docs/ page of each kind that has one (the allocation kinds share a page). */
export const KIND_PAGES: Readonly<Record<string, string>> = {
  ExternalNetwork: 'external-network.md',
  AddressPool: 'address-pool.md',
  ElasticIP: 'elastic-ip.md',
  ElasticIPAttachment: 'elastic-ip-attachment.md',
  NetworkInterface: 'network-interface.md',
  ServiceLoadBalancer: 'service-load-balancer.md',
  ARPAdvertisement: 'arp-advertisement.md',
  AllocationPool: 'allocation.md',
  AllocationClaim: 'allocation.md',
  BGPPeer: 'bgp-peer.md',
  BGPNodeState: 'bgp-peer.md',
  BGPAdvertisement: 'bgp-advertisement.md',
  NATGateway: 'nat-gateway.md',
};

const start = (kind: string) =>
  `<!-- fields:start ${kind} (generated from api/ by scripts/api-reference.ts; do not edit) -->`;
const END = '<!-- fields:end -->';

/** The `kubectl get` header of a kind: NAME and the printer columns, the wide ones only with `-o wide`. */
export function getColumns(def: AnyKind, wide = false): string[] {
  return ['NAME', ...def.printerColumns.filter((c) => wide || !c.priority).map((c) => c.name.toUpperCase())];
}

function generated(def: AnyKind): string {
  const wide = getColumns(def, true).filter((c) => !getColumns(def).includes(c));
  return [
    start(def.kind),
    '',
    `\`${def.plural}.juneau.loutres.me\`, ${def.scope === 'Cluster' ? 'cluster-scoped' : 'namespaced'}` +
      `${def.shortNames?.length ? `, short name \`${def.shortNames.join('`, `')}\`` : ''}. ` +
      `\`kubectl get ${def.singular}\` shows ${getColumns(def).join(', ')}${wide.length ? `; \`-o wide\` adds ${wide.join(', ')}` : ''}.`,
    ...(def.selectableFields?.length
      ? ['', `Selectable fields (\`--field-selector\`): ${def.selectableFields.map((f) => `\`${f}\``).join(', ')}.`]
      : []),
    '',
    ...kindFields(def),
    '',
    END,
  ].join('\n');
}

/** A page with the generated section of `kind` replaced by the current one. */
export function withKindFields(page: string, kind: string): string {
  const def = ALL_KINDS.find((k) => k.kind === kind);
  if (!def) throw new Error(`no kind ${kind} in api/`);
  const from = page.indexOf(start(kind));
  const to = page.indexOf(END, from);
  if (from < 0 || to < 0) throw new Error(`the page of ${kind} has no ${start(kind)} ... ${END} section`);
  return page.slice(0, from) + generated(def) + page.slice(to + END.length);
}

/** A page with every kind section it holds brought up to date. */
export function withAllKindFields(page: string, file: string): string {
  return Object.entries(KIND_PAGES)
    .filter(([, f]) => f === file)
    .reduce((text, [kind]) => withKindFields(text, kind), page);
}
