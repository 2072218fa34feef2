// FO-1 on the real API server: spec.arp.announceOnMove is accepted on an arp ExternalNetwork,
// refused on a bgp one by the CRD's CEL rule (no webhook needed), and switchable later.
import { API_VERSION, type ExternalNetwork } from '../../api';
import { JuneauResources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { rejection, testKubeConfig } from './fixture';

const rest = new RestClient(testKubeConfig());
const networks = JuneauResources.externalNetworks;
const uid = () => Math.random().toString(36).slice(2, 8);
const create = (name: string, type: string, arp?: object) =>
  rest.create(networks, {
    apiVersion: API_VERSION,
    kind: 'ExternalNetwork',
    metadata: { name },
    spec: { type, addressPools: ['p'], ...(arp ? { arp } : {}) },
  });

describe('FO-1 spec.arp.announceOnMove (CRD, real API server)', () => {
  test('FO-1: accepted on arp, switchable; absent by default', async () => {
    const name = `fo1-${uid()}`;
    const created = (await create(name, 'arp')) as ExternalNetwork & KubeObject;
    expect(created.spec).not.toHaveProperty('arp');
    const on = await rest.patch<ExternalNetwork & KubeObject>(networks, undefined, name, 'merge', {
      spec: { arp: { announceOnMove: true } },
    });
    expect(on.spec.arp?.announceOnMove).toBe(true);
    await rest.delete(networks, undefined, name);
  });

  test('FO-1: refused on a bgp network, naming the rule', async () => {
    const err = await rejection(create(`fo1-${uid()}`, 'bgp', { announceOnMove: true }));
    expect(err.code).toBe(422);
    expect(err.message).toContain('spec.arp is for type arp networks only (FO-1)');
  });
});
