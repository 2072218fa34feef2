// An arp AddressPool and its ExternalNetwork, for cluster tests and the benches; no jest here, so
// bench scripts (tsx) can import it (./fixture.ts sets jest's timeout when loaded).
import { API_VERSION } from '../../api/constants';
import { asKube, JuneauResources } from '../../runtime/controller/resources';
import type { RestClient } from '../../runtime/kube/rest';

/** An arp AddressPool `pool` over `addresses` and the arp ExternalNetwork `network` over it. */
export async function createArpNetwork(
  rest: RestClient,
  o: { readonly pool: string; readonly network: string; readonly addresses: readonly string[] },
): Promise<void> {
  await rest.create(
    JuneauResources.addressPools,
    asKube({
      apiVersion: API_VERSION,
      kind: 'AddressPool',
      metadata: { name: o.pool },
      spec: { advertiseMode: 'arp', addresses: [...o.addresses] },
    }),
  );
  await rest.create(
    JuneauResources.externalNetworks,
    asKube({
      apiVersion: API_VERSION,
      kind: 'ExternalNetwork',
      metadata: { name: o.network },
      spec: { type: 'arp', addressPools: [o.pool] },
    }),
  );
}
