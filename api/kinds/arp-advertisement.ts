import { conditions, immutable, objectName } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';

/** ARPAdvertisement (ARP): which node answers ARP for one external address. */
export const arpAdvertisementKind = defineKind({
  kind: 'ARPAdvertisement',
  shortNames: ['arpad'],
  scope: 'Cluster',
  description:
    'Which node answers ARP requests for one address of a type arp ExternalNetwork; created by the controllers, not by users (ARP-1..10).',
  spec: s.object(
    {
      externalNetwork: s.string({
        minLength: 1,
        maxLength: LIMITS.nameLength,
        description: 'A type arp ExternalNetwork; immutable (ARP-2, ARP-3).',
        validations: [immutable('spec.externalNetwork', 'ARP-3')],
      }),
      address: s.string({
        format: 'ipv4',
        maxLength: 15,
        description: "The IPv4 address answered, inside one of the network's pools; immutable (ARP-2, ARP-3).",
        validations: [immutable('spec.address', 'ARP-3')],
      }),
      nodeName: objectName('The node that answers; the only field that changes (ARP-3).'),
    },
    { required: ['externalNetwork', 'address', 'nodeName'] },
  ),
  status: s.object({
    conditions,
  }),
  printerColumns: [
    { name: 'ExternalNetwork', type: 'string', jsonPath: '.spec.externalNetwork' },
    { name: 'Address', type: 'string', jsonPath: '.spec.address' },
    { name: 'Node', type: 'string', jsonPath: '.spec.nodeName' },
    AGE_COLUMN,
  ],
  selectableFields: ['.spec.nodeName'],
});
export type ARPAdvertisement = KindObject<typeof arpAdvertisementKind>;
