/** Resource types (group/version/plural) and the URL paths the API server serves them at. */
import { GROUP, VERSION } from '../../api/constants';

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
  endpointSlices: {
    group: 'discovery.k8s.io',
    version: 'v1',
    plural: 'endpointslices',
    kind: 'EndpointSlice',
    namespaced: true,
  },
  leases: { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true },
  events: { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
} as const satisfies Record<string, ResourceType>;
