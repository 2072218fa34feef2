// ARP-4 at scale (bench/scale): when the caches index ARPAdvertisements by address, the
// ARPAdvertisement handler compares the request only with that address's objects and never walks
// the whole list (with 10,000 objects the walk was most of an admission's cost). Same verdicts.
import { WEBHOOK_PATHS } from '../../../api';
import type { AdmissionRequest } from '../../../runtime/controller/webhook/admission';
import { admissionHandlers } from '../../../runtime/controller/webhook/handlers';
import { addressKey } from '../../../runtime/controller/webhook/listers';
import type { ARPAdvertisementObject, WebhookCaches } from '../../../runtime/controller/webhook/views';

const arpAd = (name: string, address: string, nodeName = 'n1'): ARPAdvertisementObject => ({
  metadata: { name },
  spec: { address, externalNetwork: 'lan', nodeName },
});
const held = [
  arpAd('held', '10.0.0.5', 'n2'),
  ...Array.from({ length: 10_000 }, (_, i) => arpAd(`other-${i}`, `10.1.${i >> 8}.${i & 255}`)),
];
const byAddress = new Map<string, ARPAdvertisementObject[]>();
for (const ad of held)
  byAddress.set(addressKey(ad.spec!.address)!, [...(byAddress.get(addressKey(ad.spec!.address)!) ?? []), ad]);
const list = <T>(items: T[]) => ({ list: () => items });
const caches: WebhookCaches = {
  addressPools: list([{ metadata: { name: 'p1' }, spec: { advertiseMode: 'arp', addresses: ['10.0.0.0/8'] } }]),
  externalNetworks: list([{ metadata: { name: 'lan' }, spec: { type: 'arp', addressPools: ['p1'] } }]),
  arpAdvertisements: {
    list: () => {
      throw new Error('the handler walked every ARPAdvertisement although the caches have an index by address');
    },
  },
  arpAdvertisementsAt: (address) => byAddress.get(addressKey(address) ?? '') ?? [],
  nodes: list([]),
  elasticIPAttachments: list([]),
  networkInterfaces: list([]),
  pods: list([]),
  arpAdvertisementWriters: () => ['controller'],
};
const create = (object: ARPAdvertisementObject): AdmissionRequest => ({
  uid: 'u',
  operation: 'CREATE',
  name: object.metadata?.name,
  object,
  userInfo: { username: 'controller' },
});

describe('ARPAdvertisement admission through the address index (ARP-4)', () => {
  it('ARP-4: an address already advertised is refused naming the holder, read from the index only', async () => {
    const v = await admissionHandlers[WEBHOOK_PATHS.arpAdvertisement](create(arpAd('dup', '10.0.0.5')), caches);
    expect(v.allowed).toBe(false);
    expect(JSON.stringify(v)).toContain('is already advertised by ARPAdvertisement held (node n2)');
  });

  it('ARP-4: a free address among 10,000 others is allowed; the object itself is no conflict', async () => {
    expect(
      (await admissionHandlers[WEBHOOK_PATHS.arpAdvertisement](create(arpAd('new', '10.0.0.6')), caches)).allowed,
    ).toBe(true);
    expect(
      (await admissionHandlers[WEBHOOK_PATHS.arpAdvertisement](create(arpAd('held', '10.0.0.5', 'n3')), caches))
        .allowed,
    ).toBe(true);
  });

  it('one key per address whatever the spelling the parser accepts; anything else is kept as written', () => {
    expect(addressKey('10.0.0.5')).toBe(String((10 << 24) + 5));
    expect(addressKey('not-an-ip')).toBe('not-an-ip');
    expect(addressKey(undefined)).toBeUndefined();
  });
});
