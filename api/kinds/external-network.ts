import { conditions, immutable, objectName } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';
import { advertiseModes, BGP_NOT_ADVERTISED } from './address-pool';

/** Largest VXLAN VNI (24 bits). */
export const MAX_VNI = 16777215;

/** The operators of a label selector's matchExpressions (metav1.LabelSelectorRequirement). */
export const LABEL_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

/** A label key or value: 317 characters at most (a 253-character prefix, `/`, a 63-character name). */
const label = (description: string) => s.string({ description, maxLength: 317 });

/** What a label selector schema is for: the field its messages name, the SPEC statement, its description. */
export interface LabelSelectorSchemaOptions {
  readonly field: string;
  readonly specId: string;
  /** What the selector selects, in the singular ("namespace", "pod"). */
  readonly objects: string;
  readonly description: string;
}

/**
 * A Kubernetes label selector (metav1.LabelSelector): every matchLabels pair and every
 * matchExpressions requirement must hold. An empty selector selects everything. Label formats are
 * checked by api/validation/label-selector.ts (constructs and webhooks), not here.
 */
export const labelSelectorSchema = (o: LabelSelectorSchemaOptions) =>
  s.object(
    {
      matchLabels: s.map(label('A label value.'), {
        maxProperties: 32,
        description: `Labels the ${o.objects} must have, with these values.`,
      }),
      matchExpressions: s.array(
        s.object(
          {
            key: label('The label key.'),
            operator: s.enum(LABEL_SELECTOR_OPERATORS, { description: 'In, NotIn, Exists or DoesNotExist.' }),
            values: s.array(label('A label value.'), {
              maxItems: 32,
              description: 'For In and NotIn: at least one value; for Exists and DoesNotExist: none.',
            }),
          },
          {
            required: ['key', 'operator'],
            validations: [
              {
                rule: "(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",
                message: `${o.field}.matchExpressions[].values: In and NotIn need at least one value, Exists and DoesNotExist take none (${o.specId})`,
              },
            ],
          },
        ),
        { maxItems: 16, description: `Requirements on the ${o.objects} labels; all must hold.` },
      ),
    },
    { description: o.description },
  );

const namespaceSelector = labelSelectorSchema({
  field: 'spec.allowedNamespaces',
  specId: 'SEC-9',
  objects: 'namespace',
  description:
    'SEC-9: the namespaces whose ElasticIPs and LoadBalancer Services may take addresses from this network, ' +
    'a label selector over Namespaces (matchLabels, matchExpressions; {} selects every namespace). ' +
    'A request from another namespace gets no address: condition Allocated, reason NamespaceNotAllowed. ' +
    'Absent: every namespace may use the network.',
});

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
      validations: [
        { rule: 'oldSelf == 0 || self == oldSelf', message: 'status.networkID never changes once written (EN-7)' },
      ],
    }),
    conditions,
  }),
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'NetworkID', type: 'integer', jsonPath: '.status.networkID' },
    { name: 'Pools', type: 'string', jsonPath: '.spec.addressPools', priority: 1 },
    AGE_COLUMN,
  ],
});
export type ExternalNetwork = KindObject<typeof externalNetworkKind>;
