/**
 * Checks across one program (a cdk8s app, a Pulumi stack) that no single object can make: two
 * declarations that would overwrite each other on apply, and one address requested twice. Pure;
 * both front-ends collect the declarations their own way (cdk8s: the construct tree; Pulumi: the
 * per-stack registry) and report what these return, so the messages are the same in both.
 */
import { issue, ValidationIssue } from './issue';

/** The API group of an apiVersion: `juneau.loutres.me/v1alpha1` -> `juneau.loutres.me`, `v1` -> ''. */
export const apiGroupOf = (apiVersion: string): string =>
  apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.lastIndexOf('/')) : '';

/** One declared object, as the program-wide checks see it. */
export interface DeclaredObject {
  /** The API group (`juneau.loutres.me`; '' for core objects such as Service): a Knative Service is not a Service. */
  readonly group: string;
  readonly kind: string;
  /** Empty for cluster-scoped kinds and for namespaced objects without a namespace (the namespace of the apply). */
  readonly namespace: string;
  readonly name: string;
  /** Where the program declares it: a construct path (`network/arp-pool`) or a Pulumi resource name. */
  readonly path: string;
}

const describe = (o: DeclaredObject): string => `${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;

/**
 * Two objects of one kind with one name (and namespace) are one object on the cluster: the second
 * apply overwrites the first. Returns an issue for `object` naming both declarations when another
 * one in `all` (declared elsewhere: another path) has its identity.
 */
export function checkDuplicateDeclaration(object: DeclaredObject, all: readonly DeclaredObject[]): ValidationIssue[] {
  const same = all.find(
    (o) =>
      o.path !== object.path &&
      o.group === object.group &&
      o.kind === object.kind &&
      o.namespace === object.namespace &&
      o.name === object.name,
  );
  if (!same) return [];
  return [
    issue(
      'metadata.name',
      object.name,
      `is declared twice: ${describe(object)} at ${object.path} and at ${same.path}; one would overwrite the other on apply, so give them different names`,
    ),
  ];
}

/** One address a program asks for: an ElasticIP's `spec.requestedIP`, a Service's requested-ip annotation. */
export interface AddressRequestDeclaration {
  readonly field: string;
  readonly address: string;
  /** `ElasticIP default/web-eip`, `Service default/web`. */
  readonly owner: string;
  readonly path: string;
}

/**
 * EIP-3, SLB-2: an address is held by one ElasticIP or Service at a time, so two requests for the
 * same address in one program would leave one of them Pending forever. Returns an issue for
 * `request` naming the earlier request of the same address in `all`, if any.
 */
export function checkRequestedAddressClash(
  request: AddressRequestDeclaration,
  all: readonly AddressRequestDeclaration[],
): ValidationIssue[] {
  const other = all.find((r) => r.address === request.address && r.path !== request.path);
  if (!other) return [];
  return [
    issue(
      request.field,
      request.address,
      `is also requested by ${other.owner} (${other.path}); an address is held by one ElasticIP or Service at a time, so ${request.owner} (${request.path}) would stay Pending (EIP-3, SLB-2)`,
    ),
  ];
}

/**
 * A network given by name that the program does not declare: valid, but nothing can be checked
 * against its pools here. The text of the warning both front-ends print.
 */
export const undeclaredNetworkWarning = (owner: string, network: string): string =>
  `${owner} names ExternalNetwork ${network}, which this program does not declare: its type, pools and any requested address are checked by the cluster when the objects are applied (EIP-3, SLB-2)`;
