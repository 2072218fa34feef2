import { conditions, immutable, labelSelector, objectName } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';
import { advertiseModes, BGP_NOT_ADVERTISED } from './address-pool';

/** Largest VXLAN VNI (24 bits). */
export const MAX_VNI = 16777215;

export { LABEL_SELECTOR_OPERATORS } from '../common';

/** SEC-9: the namespaces that may take addresses from the network (metav1.LabelSelector over Namespaces). */
const namespaceSelector = labelSelector(
  'namespace',
  'spec.allowedNamespaces',
  'SEC-9',
  'SEC-9: the namespaces whose ElasticIPs and LoadBalancer Services may take addresses from this network, ' +
    'a label selector over Namespaces (matchLabels, matchExpressions; {} selects every namespace). ' +
    'A request from another namespace gets no address: condition Allocated, reason NamespaceNotAllowed. ' +
    'Absent: every namespace may use the network.',
);

/** ExternalNetwork (EN): groups AddressPools into one external network of one type. */
export const externalNetworkKind = defineKind({
  kind: 'ExternalNetwork',
  shortNames: ['extnet'],
  scope: 'Cluster',
  description:
    'A connection to the outside: AddressPools of one advertise mode, handed out by ElasticIPs and LoadBalancer Services (EN-1..12). A bgp network is allocated from but not yet advertised (see spec.type).',
  spec: s.object(
    {
      type: s.enum(advertiseModes, {
        description: `arp or bgp; required at creation and immutable (EN-1). ${BGP_NOT_ADVERTISED}`,
        validations: [immutable('spec.type', 'EN-1')],
      }),
      addressPools: s.array(objectName('An AddressPool name.'), {
        minItems: 1,
        maxItems: LIMITS.poolsPerNetwork,
        listType: 'set',
        description:
          'AddressPool names: a set, at least one (EN-2); append-only (EN-6); each pool used by this network only (EN-4).',
        validations: [
          {
            rule: 'oldSelf.all(p, p in self)',
            message:
              'spec.addressPools is append-only: items cannot be removed; recreate the ExternalNetwork to stop using a pool (EN-6)',
          },
        ],
      }),
      /**
       * SEC-9: the namespaces that may take addresses from this network (a label selector).
       * @default absent: every namespace
       */
      allowedNamespaces: namespaceSelector,
      arp: s.object(
        {
          announceOnMove: s.boolean({
            description:
              "FO-1, opt-in: when a node gains one of this network's addresses, its agent sends RFC 5227 section 3 ARP announcements " +
              '(2, 2 s apart), only after no other host answers a probe for the address. Absent or false: no unsolicited ARP (ARP-8).',
          }),
        },
        { description: 'Options of a type arp network (FO-1); refused on type bgp.' },
      ),
    },
    {
      required: ['type', 'addressPools'],
      validations: [
        { rule: "self.type == 'arp' || !has(self.arp)", message: 'spec.arp is for type arp networks only (FO-1)' },
      ],
    },
  ),
  status: s.object({
    networkID: s.integer({
      minimum: 0,
      maximum: MAX_VNI,
      description:
        'Overlay identifier (VXLAN VNI) from the subnet-vni AllocationPool; 0 until written, never changed once written (EN-7).',
    }),
    conditions,
  }),
  // On the object, not on the field: a rule on status.networkID would not run when a status write
  // drops the field (or the whole status), so a later write could set another value.
  objectValidations: [
    {
      rule:
        '!has(oldSelf.status) || !has(oldSelf.status.networkID) || oldSelf.status.networkID == 0 || ' +
        '(has(self.status) && has(self.status.networkID) && self.status.networkID == oldSelf.status.networkID)',
      message: 'status.networkID never changes once written, and cannot be removed (EN-7)',
      fieldPath: '.status.networkID',
    },
  ],
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'NetworkID', type: 'integer', jsonPath: '.status.networkID' },
    { name: 'Pools', type: 'string', jsonPath: '.spec.addressPools', priority: 1 },
    AGE_COLUMN,
  ],
});
export type ExternalNetwork = KindObject<typeof externalNetworkKind>;
