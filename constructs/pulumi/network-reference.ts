// Not exported from the package: how a component resolves its `externalNetwork` argument.
import * as pulumi from '@pulumi/pulumi';
import { ExternalNetwork as ExternalNetworkObject } from '../../api';
import { ExternalNetwork, IExternalNetwork } from './external-network';

/**
 * The network an argument names, as the components use it: its name, its declared object, and
 * what to create after (the component, none for a name).
 */
export function externalNetworkOf(network: IExternalNetwork | string): {
  name: string;
  object: ExternalNetworkObject | undefined;
  dependsOn: pulumi.Resource[];
} {
  const reference = typeof network === 'string' ? ExternalNetwork.fromName(network) : network;
  return {
    name: reference.name,
    object: reference.definition(),
    dependsOn: pulumi.Resource.isInstance(reference) ? [reference] : [],
  };
}
