/**
 * The user-facing objects, rendered and validated once for both front-ends (cdk8s and Pulumi).
 * Each function takes plain values and returns the object or the list of problems; the front-ends
 * only decide how to report them (cdk8s: node.addValidation at synth; Pulumi: an error at preview).
 */
import { AddressPool, ALL_KINDS, API_VERSION, ElasticIP, ElasticIPAttachment, ExternalNetwork } from '../../api';
import {
  AddressRequestDeclaration,
  checkNetworkSpec,
  checkObjectName,
  checkPoolModes,
  findOverlapsWithOtherPools,
  findPoolForRequestedAddress,
  issue,
  parsePoolAddresses,
  PoolView,
  ValidationIssue,
} from '../../api/validation';
import { checkNamespace, ObjectMetadataInput, renderMetadata } from './metadata';

const NAMESPACED = new Set(ALL_KINDS.filter((k) => k.scope === 'Namespaced').map((k) => k.kind));

/** A Juneau object with its metadata rendered (a namespace only where the kind's CRD is namespaced). */
const juneauObject = <Spec>(kind: string, name: string, metadata: ObjectMetadataInput | undefined, spec: Spec) => ({
  apiVersion: API_VERSION as typeof API_VERSION,
  kind,
  metadata: renderMetadata(name, metadata, NAMESPACED.has(kind)),
  spec,
});

/**
 * What a front-end passes to render a kind whose input is its spec as written: the spec's fields
 * (typed by api/kinds, their one source of truth) and the object's metadata.
 */
type ObjectInput<Spec> = Readonly<Spec> & { readonly metadata?: ObjectMetadataInput };

/** Prefixes each issue's message with the object it is about, so a list of many errors is readable. */
export const about = (what: string, issues: readonly ValidationIssue[]): ValidationIssue[] =>
  issues.map((i) => ({ ...i, message: `${i.message} [${what}]` }));

// ---- AddressPool --------------------------------------------------------------------------------

export type AddressPoolInput = ObjectInput<AddressPool['spec']>;

export function renderAddressPool(name: string, input: AddressPoolInput): AddressPool {
  return juneauObject('AddressPool', name, input.metadata, {
    advertiseMode: input.advertiseMode,
    addresses: [...input.addresses],
    ...(input.avoidBuggyIPs ? { avoidBuggyIPs: true } : {}),
  });
}

/** AP-1, AP-2 within the pool, and AP-2 against the other pools the program declares. */
export function validateAddressPool(pool: AddressPool, otherPools: readonly AddressPool[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [...checkObjectName('metadata.name', pool.metadata.name)];
  if (pool.spec.advertiseMode !== 'bgp' && pool.spec.advertiseMode !== 'arp') {
    issues.push(issue('spec.advertiseMode', pool.spec.advertiseMode, 'must be "bgp" or "arp" (AP-1)'));
  }
  const view = { name: pool.metadata.name!, addresses: pool.spec.addresses };
  issues.push(...parsePoolAddresses(view).issues);
  issues.push(
    ...findOverlapsWithOtherPools(
      view,
      otherPools.map((p) => ({ name: p.metadata.name!, addresses: p.spec.addresses })),
    ),
  );
  return about(`AddressPool ${pool.metadata.name}`, issues);
}

export const poolView = (p: AddressPool): PoolView => ({
  name: p.metadata.name!,
  advertiseMode: p.spec.advertiseMode,
  addresses: p.spec.addresses,
  avoidBuggyIPs: p.spec.avoidBuggyIPs,
});

// ---- ExternalNetwork ----------------------------------------------------------------------------

/** The spec with FO-1's `arp.announceOnMove` given flat, as both front-ends take it. */
export interface ExternalNetworkInput extends ObjectInput<Omit<ExternalNetwork['spec'], 'arp'>> {
  /** FO-1: rendered as `spec.arp.announceOnMove` when set (true or false); absent otherwise. */
  readonly announceOnMove?: boolean;
}

export function renderExternalNetwork(name: string, input: ExternalNetworkInput): ExternalNetwork {
  return juneauObject('ExternalNetwork', name, input.metadata, {
    type: input.type,
    addressPools: [...input.addressPools],
    ...(input.allowedNamespaces ? { allowedNamespaces: input.allowedNamespaces } : {}),
    ...(input.announceOnMove !== undefined ? { arp: { announceOnMove: input.announceOnMove } } : {}),
  });
}

/**
 * EN-1/2/3, and EN-4 within the program: a pool listed by another declared ExternalNetwork is
 * refused here, before the admission webhook would refuse it on the cluster.
 */
export function validateExternalNetwork(
  network: ExternalNetwork,
  knownPools: ReadonlyMap<string, PoolView>,
  otherNetworks: readonly ExternalNetwork[],
): ValidationIssue[] {
  const view = {
    name: network.metadata.name!,
    type: network.spec.type,
    addressPools: network.spec.addressPools,
    arp: network.spec.arp,
  };
  const issues = [
    ...checkObjectName('metadata.name', view.name),
    ...checkNetworkSpec(view),
    ...checkPoolModes(view, knownPools),
  ];
  view.addressPools.forEach((pool, index) => {
    const holder = otherNetworks.find((o) => o.metadata.name !== view.name && o.spec.addressPools.includes(pool));
    if (holder)
      issues.push(
        issue(
          `spec.addressPools[${index}]`,
          pool,
          `is already used by ExternalNetwork ${holder.metadata.name}; a pool belongs to one network only (EN-4)`,
        ),
      );
  });
  return about(`ExternalNetwork ${view.name}`, issues);
}

// ---- ElasticIP ----------------------------------------------------------------------------------

export type ElasticIPInput = ObjectInput<ElasticIP['spec']>;

export function renderElasticIP(name: string, input: ElasticIPInput): ElasticIP {
  const spec: ElasticIP['spec'] = { externalNetwork: input.externalNetwork };
  if (input.requestedIP !== undefined) spec.requestedIP = input.requestedIP;
  return juneauObject('ElasticIP', name, input.metadata, spec);
}

/** EIP-2/EIP-3 when the network and its pools are declared in the same program. */
export function validateElasticIP(
  eip: ElasticIP,
  network: ExternalNetwork | undefined,
  knownPools: ReadonlyMap<string, PoolView>,
): ValidationIssue[] {
  const issues = [
    ...checkObjectName('metadata.name', eip.metadata.name),
    ...checkNamespace(eip.metadata),
    ...checkObjectName('spec.externalNetwork', eip.spec.externalNetwork),
  ];
  issues.push(...checkRequestedAddress('spec.requestedIP', eip.spec.requestedIP, network, knownPools));
  return about(`ElasticIP ${eip.metadata.namespace ?? 'default'}/${eip.metadata.name}`, issues);
}

/** The address an ElasticIP asks for, for the check across the program (EIP-3); `path` says where it is declared. */
export const addressRequestOf = (eip: ElasticIP, path: string): AddressRequestDeclaration | undefined =>
  eip.spec.requestedIP === undefined
    ? undefined
    : {
        field: 'spec.requestedIP',
        address: eip.spec.requestedIP,
        owner: `ElasticIP ${eip.metadata.namespace ?? 'default'}/${eip.metadata.name}`,
        path,
      };

/** A requested address must be IPv4, and inside a usable pool when the pools are known (EIP-3, SLB-2). */
export function checkRequestedAddress(
  field: string,
  requested: string | undefined,
  network: ExternalNetwork | undefined,
  knownPools: ReadonlyMap<string, PoolView>,
): ValidationIssue[] {
  if (requested === undefined) return [];
  const view = network
    ? { name: network.metadata.name!, type: network.spec.type, addressPools: network.spec.addressPools }
    : { name: '(not declared here)', type: 'arp', addressPools: [] };
  const result = findPoolForRequestedAddress(field, requested, view, knownPools);
  if ('pool' in result) return [];
  // Without the network's pools in this program, only the address format can be checked here;
  // the controller checks the rest on the cluster (EIP-3).
  const poolsKnown = network && network.spec.addressPools.every((p) => knownPools.has(p));
  return poolsKnown || result.issue.message === 'is not an IPv4 address' ? [result.issue] : [];
}

// ---- ElasticIPAttachment ------------------------------------------------------------------------

export type ElasticIPAttachmentInput = ObjectInput<ElasticIPAttachment['spec']>;

export function renderElasticIPAttachment(name: string, input: ElasticIPAttachmentInput): ElasticIPAttachment {
  return juneauObject('ElasticIPAttachment', name, input.metadata, {
    elasticIP: input.elasticIP,
    networkInterface: input.networkInterface,
  });
}

/** EIPA-1: both names valid and in the attachment's namespace; EIPA-2 within the program. */
export function validateElasticIPAttachment(
  attachment: ElasticIPAttachment,
  elasticIPNamespace: string | undefined,
  otherAttachments: readonly ElasticIPAttachment[],
): ValidationIssue[] {
  const ns = attachment.metadata.namespace ?? 'default';
  const issues = [
    ...checkObjectName('metadata.name', attachment.metadata.name),
    ...checkNamespace(attachment.metadata),
    ...checkObjectName('spec.elasticIP', attachment.spec.elasticIP),
    ...checkObjectName('spec.networkInterface', attachment.spec.networkInterface),
  ];
  if (elasticIPNamespace !== undefined && elasticIPNamespace !== ns) {
    issues.push(
      issue(
        'spec.elasticIP',
        attachment.spec.elasticIP,
        `is in namespace ${elasticIPNamespace}, but the attachment is in ${ns}; both must be in one namespace (EIPA-1)`,
      ),
    );
  }
  const rival = otherAttachments.find(
    (o) =>
      o !== attachment && (o.metadata.namespace ?? 'default') === ns && o.spec.elasticIP === attachment.spec.elasticIP,
  );
  if (rival)
    issues.push(
      issue(
        'spec.elasticIP',
        attachment.spec.elasticIP,
        `is already used by ElasticIPAttachment ${rival.metadata.name}; one ElasticIP has at most one attachment (EIPA-2)`,
      ),
    );
  return about(`ElasticIPAttachment ${ns}/${attachment.metadata.name}`, issues);
}
