/**
 * BGP-4, NGW-3: the NATGateway addresses this node announces on `bgp` networks: those whose
 * gateway the controller made this node (status.nodeName), with an address, not being deleted
 * (BGP-5). Not only the `Ready` ones: on a bgp network the controller says `Ready` once the
 * gateway node reports the route announced, so the route comes first and the translation
 * (ngw/inputs.ts, `Ready` ones only) after it. The BGP loop keeps those of bgp networks.
 */
import type { ServedAddress } from '../nat/desired';
import type { NATGatewayObject } from './inputs';

export function servedGateways(nodeName: string, gateways: readonly NATGatewayObject[]): ServedAddress[] {
  return gateways
    .filter((g) => !g.metadata?.deletionTimestamp && g.status?.address && g.status.nodeName === nodeName)
    .map((g) => ({
      address: g.status!.address!,
      externalNetwork: g.spec?.externalNetwork ?? '',
      owner: `NATGateway ${g.metadata?.namespace ?? ''}/${g.metadata?.name ?? ''}`,
    }))
    .sort((a, b) => a.owner.localeCompare(b.owner));
}
