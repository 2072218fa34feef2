/** Resource types (group/version/plural) and the URL paths the API server serves them at. */
import { GROUP, VERSION } from '../../api/constants';
import { JUNEAU_KINDS } from '../../api/kinds/all';

export interface ResourceType {
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** The REST resource type of a Juneau kind, from its one definition in api/. */
export const juneauResource = (def: {
  readonly kind: string;
  readonly plural: string;
  readonly scope: 'Cluster' | 'Namespaced';
}): ResourceType => ({
  group: GROUP,
  version: VERSION,
  plural: def.plural,
  kind: def.kind,
  namespaced: def.scope === 'Namespaced',
});

/**
 * A kind's name as a table key: lower camel case, an acronym lowered as a word, plus `s`
 * (ElasticIP → elasticIPs, ARPAdvertisement → arpAdvertisements). `ResourceKey` is the same rule
 * on the kind's literal type, so the table below is typed key by key.
 */
export function resourceKey<K extends string>(kind: K): ResourceKey<K> {
  const lead = /^[A-Z]+(?=[A-Z][a-z])|^[A-Z]+$|^[A-Z]/.exec(kind)?.[0] ?? '';
  return `${lead.toLowerCase()}${kind.slice(lead.length)}s` as ResourceKey<K>;
}

type Upper<C extends string> = C extends Lowercase<C> ? false : true;
/** Lowers the leading capitals of `S`, except the last one of an acronym followed by a word. */
type LowerLead<S extends string> = S extends `${infer A}${infer B}${infer C}${infer R}`
  ? Upper<B> extends true
    ? Upper<C> extends true
      ? `${Lowercase<A>}${LowerLead<`${B}${C}${R}`>}`
      : `${Lowercase<A>}${B}${C}${R}`
    : `${Lowercase<A>}${B}${C}${R}`
  : Lowercase<S>;
export type ResourceKey<K extends string> = `${LowerLead<K>}s`;

type JuneauKind = (typeof JUNEAU_KINDS)[number];

/**
 * Every Juneau kind as a REST resource type, derived from api/'s one list of kinds: the one table
 * the controller, the webhooks, the agent and the CLI read (`JuneauResources.elasticIPs`, ...).
 */
export const JuneauResources = Object.fromEntries(
  JUNEAU_KINDS.map((def) => [resourceKey(def.kind), juneauResource(def)]),
) as { readonly [D in JuneauKind as ResourceKey<D['kind']>]: ResourceType };

export const apiVersionOf = (type: ResourceType): string =>
  type.group ? `${type.group}/${type.version}` : type.version;

/**
 * `/api/v1/namespaces/ns/pods/name/status` and the like. Without a namespace a namespaced
 * type is listed across all namespaces.
 */
export function resourcePath(type: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const root = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  const scope = type.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  let path = `${root}${scope}/${type.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource !== undefined) {
    if (name === undefined) throw new Error(`subresource '${subresource}' of ${type.plural} needs an object name`);
    path += `/${subresource}`;
  }
  return path;
}

const core = (plural: string, kind: string, namespaced = true): ResourceType => ({
  group: '',
  version: 'v1',
  plural,
  kind,
  namespaced,
});

/** The built-in kinds Juneau reads or writes. Juneau's own kinds are described in api/. */
export const Resources = {
  pods: core('pods', 'Pod'),
  services: core('services', 'Service'),
  nodes: core('nodes', 'Node', false),
  namespaces: core('namespaces', 'Namespace', false),
  configMaps: core('configmaps', 'ConfigMap'),
  secrets: core('secrets', 'Secret'),
  endpointSlices: {
    group: 'discovery.k8s.io',
    version: 'v1',
    plural: 'endpointslices',
    kind: 'EndpointSlice',
    namespaced: true,
  },
  /** GA in Kubernetes 1.33; an older API server may not serve it (./service-cidrs.ts serviceCIDRsServed). */
  serviceCIDRs: {
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'servicecidrs',
    kind: 'ServiceCIDR',
    namespaced: false,
  },
  leases: { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true },
  events: { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
} as const satisfies Record<string, ResourceType>;
