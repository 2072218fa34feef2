// Not exported from the package: how a construct resolves its `externalNetwork` prop.
import { Construct } from 'constructs';
import { ExternalNetwork, IExternalNetwork } from './external-network';

/**
 * The network a prop names: the construct itself, or for a name the same reference as
 * `ExternalNetwork.fromName(scope, 'ExternalNetwork', name)`.
 */
export const externalNetworkOf = (scope: Construct, network: IExternalNetwork | string): IExternalNetwork =>
  typeof network === 'string' ? ExternalNetwork.fromName(scope, 'ExternalNetwork', network) : network;
