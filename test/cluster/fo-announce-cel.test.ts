// FO-1 on the real API server: spec.arp.announceOnMove is accepted on an arp ExternalNetwork,
// refused on a bgp one by the CRD's CEL rule (no webhook needed), and switchable later.
import { API_VERSION, GROUP, VERSION } from '../../api';
import { clients, mergePatch, rejection } from './fixture';

const custom = () => clients().custom;
const networks = { group: GROUP, version: VERSION, plural: 'externalnetworks' };
const uid = () => Math.random().toString(36).slice(2, 8);
const create = (name: string, type: string, arp?: object) =>
  custom().createClusterCustomObject({
    ...networks,
    body: {
      apiVersion: API_VERSION,
      kind: 'ExternalNetwork',
      metadata: { name },
      spec: { type, addressPools: ['p'], ...(arp ? { arp } : {}) },
    },
  });

describe('FO-1 spec.arp.announceOnMove (CRD, real API server)', () => {
  test('FO-1: accepted on arp, switchable; absent by default', async () => {
    const name = `fo1-${uid()}`;
    const created = (await create(name, 'arp')) as { spec: Record<string, unknown> };
    expect(created.spec).not.toHaveProperty('arp');
    const on = (await custom().patchClusterCustomObject(
      { ...networks, name, body: { spec: { arp: { announceOnMove: true } } } },
      mergePatch,
    )) as { spec: { arp?: { announceOnMove?: boolean } } };
    expect(on.spec.arp?.announceOnMove).toBe(true);
    await custom().deleteClusterCustomObject({ ...networks, name });
  });

  test('FO-1: refused on a bgp network, naming the rule', async () => {
    const err = await rejection(create(`fo1-${uid()}`, 'bgp', { announceOnMove: true }));
    expect(err.code).toBe(422);
    expect(err.message).toContain('spec.arp is for type arp networks only (FO-1)');
  });
});
