// An arp AddressPool and its ExternalNetwork, for cluster tests and the benches; no jest here, so
// bench scripts (tsx) can import it (./fixture.ts sets jest's timeout when loaded).
import { API_VERSION } from '../../api/constants';
import { JuneauResources } from '../../runtime/kube/resources';
import type { ResourceType } from '../../runtime/kube/resources';
import type { RestClient } from '../../runtime/kube/rest';

/** An arp AddressPool `pool` over `addresses` and the arp ExternalNetwork `network` over it. */
export async function createArpNetwork(
  rest: RestClient,
  o: { readonly pool: string; readonly network: string; readonly addresses: readonly string[] },
): Promise<void> {
  const create = (type: ResourceType, name: string, spec: object) =>
    rest.create(type, { apiVersion: API_VERSION, kind: type.kind, metadata: { name }, spec });
  await create(JuneauResources.addressPools, o.pool, { advertiseMode: 'arp', addresses: [...o.addresses] });
  await create(JuneauResources.externalNetworks, o.network, { type: 'arp', addressPools: [o.pool] });
}
