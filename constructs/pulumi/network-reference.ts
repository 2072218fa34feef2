// Not exported from the package: how a component reads its `externalNetwork` argument.
import * as pulumi from '@pulumi/pulumi';
import { ExternalNetwork as ExternalNetworkObject } from '../../api';
import { ValidationIssue } from '../../api/validation';
import { isNetworkReference, nameOfNonReference, networkReferenceIssues } from '../shared/network-reference';
import { IExternalNetwork } from './external-network';

/**
 * The network an argument names, as the components use it: its name, its declared object, what
 * to create after (the component, none for `fromName`), and what is wrong with the argument:
 * anything that is not an IExternalNetwork (a plain name from JavaScript or a cast) is one
 * problem, thrown with the component's others.
 */
export function networkOfArg(network: IExternalNetwork): {
  name: string;
  object: ExternalNetworkObject | undefined;
  dependsOn: pulumi.Resource[];
  issues: ValidationIssue[];
} {
  if (!isNetworkReference(network)) {
    const issues = networkReferenceIssues(network, (name) => `ExternalNetwork.fromName(${name})`);
    return { name: nameOfNonReference(network), object: undefined, dependsOn: [], issues };
  }
  return {
    name: network.name,
    object: network.definition(),
    dependsOn: pulumi.Resource.isInstance(network) ? [network] : [],
    issues: [],
  };
}
