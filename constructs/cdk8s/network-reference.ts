// Not exported from the package: how a construct reads its `externalNetwork` prop.
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ExternalNetwork as ExternalNetworkObject } from '../../api';
import {
  AddressRequestDeclaration,
  checkRequestedAddressClash,
  PoolView,
  undeclaredNetworkWarning,
  ValidationIssue,
} from '../../api/validation';
import { isNetworkReference, nameOfNonReference, networkReferenceIssues } from '../shared/network-reference';
import { addressRequestsInApp, addWarningAtSynth, emit, registerAddressRequest } from './base';
import { IExternalNetwork } from './external-network';

/** A construct's network: the reference's name and what the app knows of it, and what is wrong with the prop. */
export interface NetworkOfProp {
  readonly name: string;
  definition(): ExternalNetworkObject | undefined;
  knownPools(): Map<string, PoolView>;
  /** Reported at synth with the construct's other problems; nothing else of the network is checked then. */
  readonly issues: ValidationIssue[];
}

/**
 * The network a prop names. Anything that is not an IExternalNetwork (a plain name from
 * JavaScript or a cast) synthesizes as that name and fails the synth with one clear problem.
 */
export function networkOfProp(network: IExternalNetwork): NetworkOfProp {
  if (isNetworkReference(network)) {
    return {
      name: network.name,
      definition: () => network.definition(),
      knownPools: () => network.knownPools(),
      issues: [],
    };
  }
  return {
    name: nameOfNonReference(network),
    definition: () => undefined,
    knownPools: () => new Map(),
    issues: networkReferenceIssues(network, (name) => `ExternalNetwork.fromName(scope, id, ${name})`),
  };
}

/** What a construct that asks for an address of a network (ElasticIP, LoadBalancerService) emits. */
export interface AddressUser<T> {
  readonly object: T;
  readonly network: NetworkOfProp;
  /** The address it asks for, if any: checked against every other request of the app (EIP-3, SLB-2). */
  readonly request: AddressRequestDeclaration | undefined;
  /** How the undeclared-network warning names it, e.g. `ElasticIP web`. */
  readonly label: string;
  /** The object's own problems, reported after the network prop's. */
  readonly validate: () => ValidationIssue[];
}

/**
 * Emits the object of an address user with its synth-time checks: the network prop's problems,
 * the object's own, a clash with another construct's requested address, and a warning (not an
 * error) when the network is declared nowhere in the app.
 */
export function emitAddressUser<T extends { apiVersion: string; kind: string; metadata: object }>(
  scope: Construct,
  user: AddressUser<T>,
): ApiObject {
  const { network, request } = user;
  registerAddressRequest(scope, request);
  const apiObject = emit(scope, user.object, () => [
    ...network.issues,
    ...user.validate(),
    ...(request ? checkRequestedAddressClash(request, addressRequestsInApp(scope)) : []),
  ]);
  addWarningAtSynth(scope, () =>
    network.definition() || network.issues.length ? undefined : undeclaredNetworkWarning(user.label, network.name),
  );
  return apiObject;
}
