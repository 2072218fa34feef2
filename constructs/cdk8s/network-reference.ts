// Not exported from the package: how a construct reads its `externalNetwork` prop.
import { ExternalNetwork as ExternalNetworkObject } from '../../api';
import { PoolView, ValidationIssue } from '../../api/validation';
import { isNetworkReference, nameOfNonReference, networkReferenceIssues } from '../shared/network-reference';
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
