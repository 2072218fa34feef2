/**
 * What the running Pulumi program has declared so far, for the cross-object rules that cdk8s
 * checks over its construct tree: AP-2 (pools never overlap), EN-3/EN-4 (a pool's mode and its one
 * network), EIP-3/SLB-2 (requested addresses inside the network's pools), EIPA-2 (one attachment
 * per ElasticIP). Pulumi has no tree to search, so each component records its rendered object
 * here once it is valid, and later components are checked against the earlier ones: the second
 * of two conflicting declarations is the one that fails, naming the first.
 *
 * Declarations are kept per stack resource, so Automation API programs that run several stacks in
 * one process do not see each other's objects.
 */
import * as pulumi from '@pulumi/pulumi';
import { AddressPool, BGPPeer, ElasticIPAttachment, ExternalNetwork } from '../../api';
import { AddressRequestDeclaration, DeclaredObject, PoolView } from '../../api/validation';
import { poolView } from '../shared/kinds';

export interface Declarations {
  readonly addressPools: AddressPool[];
  readonly externalNetworks: ExternalNetwork[];
  readonly elasticIPAttachments: ElasticIPAttachment[];
  /** BGP-9: localPref against the declared peers. */
  readonly bgpPeers: BGPPeer[];
  /** Every object the components declared, for the duplicate-name check. */
  readonly objects: DeclaredObject[];
  /** Every requested address (ElasticIPs, Services), for EIP-3/SLB-2 across the program. */
  readonly addressRequests: AddressRequestDeclaration[];
}

const byStack = new WeakMap<object, Declarations>();
/** Used while no stack resource exists (unit tests with mocks, or before the program's stack is registered). */
const noStack = {};

const empty = (): Declarations => ({
  addressPools: [],
  externalNetworks: [],
  elasticIPAttachments: [],
  bgpPeers: [],
  objects: [],
  addressRequests: [],
});

/** The declarations of the program running now. */
export function declarations(): Declarations {
  const key: object = pulumi.runtime.getStackResource() ?? noStack;
  let found = byStack.get(key);
  if (!found) byStack.set(key, (found = empty()));
  return found;
}

/**
 * Forgets every declaration of the program running now (the current stack's), so that the next
 * components are checked as if they were the first. For unit tests that declare several
 * independent programs under Pulumi's mocks in one process; a real program never needs it.
 *
 * @example
 * beforeEach(() => resetDeclarations());
 */
export function resetDeclarations(): void {
  byStack.set(pulumi.runtime.getStackResource() ?? noStack, empty());
}

/** The declared pools among `names`, by name: what EN-3 and EIP-3/SLB-2 can check here. */
export function declaredPools(names: readonly string[]): Map<string, PoolView> {
  return new Map(
    declarations()
      .addressPools.filter((p) => names.includes(p.metadata.name!))
      .map((p) => [p.metadata.name!, poolView(p)]),
  );
}

/** The ExternalNetwork of that name declared in this program, if any. */
export const declaredNetwork = (name: string): ExternalNetwork | undefined =>
  declarations().externalNetworks.find((n) => n.metadata.name === name);
