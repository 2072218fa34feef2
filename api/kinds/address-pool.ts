import { conditions, nameOrEmpty } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const IPV4 = `${OCTET}(\\.${OCTET}){3}`;
/** A CIDR (`10.225.51.0/24`) or an inclusive range (`10.225.51.10-10.225.51.20`), AP-2. */
export const ADDRESS_ITEM_PATTERN = `^${IPV4}(/(3[0-2]|[12]?[0-9])|-${IPV4})$`;

/**
 * ADDR-1 in CEL: an item must not overlap a refused block (api/validation REFUSED_BLOCKS). The
 * blocks are prefix-aligned, so a CIDR overlaps one exactly when one contains the other; a range
 * is compared by its first octets (the blocks are /4, /8 and /16; 255.255.255.255 is in 240/4).
 */
const octet = (end: 0 | 1, i: number) => `int(self.split('-')[${end}].split('.')[${i}])`;
const REFUSED_CIDRS = "['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '224.0.0.0/4', '240.0.0.0/4']";
export const REFUSED_BLOCKS_RULE =
  `self.contains('-') ? !(${octet(0, 0)} == 0 || (${octet(0, 0)} <= 127 && ${octet(1, 0)} >= 127) || ${octet(1, 0)} >= 224 || ` +
  `(${octet(0, 0)} * 256 + ${octet(0, 1)} <= 43518 && ${octet(1, 0)} * 256 + ${octet(1, 1)} >= 43518))` +
  ` : !${REFUSED_CIDRS}.exists(b, cidr(b).containsCIDR(cidr(self).masked()) || cidr(self).masked().containsCIDR(b))`;

export const advertiseModes = ['bgp', 'arp'] as const;
export type AdvertiseMode = (typeof advertiseModes)[number];

/**
 * What `bgp` means today, said in the CRD descriptions, the constructs' JSDoc and their synth-time
 * warnings: the mode is accepted and addresses are allocated, but no component speaks BGP yet.
 */
export const BGP_NOT_ADVERTISED =
  'Juneau has no BGP speaker yet: addresses of a bgp AddressPool or ExternalNetwork are allocated but never advertised, so nothing outside the cluster reaches them; use arp to have one node answer for each address.';

/** AddressPool (AP): a cluster-scoped set of IPv4 addresses an ExternalNetwork hands out. */
export const addressPoolKind = defineKind({
  kind: 'AddressPool',
  shortNames: ['ap'],
  scope: 'Cluster',
  description:
    'A set of external IPv4 addresses, answered over ARP (advertiseMode arp) or allocated for BGP, which nothing advertises yet (see spec.advertiseMode) (AP-1..3).',
  spec: s.object(
    {
      advertiseMode: s.enum(advertiseModes, {
        description: `How addresses of this pool reach the outside: arp or bgp (AP-1). ${BGP_NOT_ADVERTISED}`,
      }),
      addresses: s.array(
        s.string({
          description: 'A CIDR (10.225.51.0/24) or an inclusive range (10.225.51.10-10.225.51.20).',
          maxLength: LIMITS.addressItemLength,
          pattern: ADDRESS_ITEM_PATTERN,
          validations: [
            {
              rule: "self.contains('-') || cidr(self) == cidr(self).masked()",
              message: 'a CIDR must not have host bits set (write the network address, e.g. 10.225.51.0/24) (AP-2)',
            },
            {
              rule: REFUSED_BLOCKS_RULE,
              message:
                'an item of spec.addresses must not overlap 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, 224.0.0.0/4, 240.0.0.0/4 or 255.255.255.255: no host can use those addresses (ADDR-1)',
            },
          ],
        }),
        {
          minItems: 1,
          maxItems: LIMITS.addressesPerPool,
          listType: 'set',
          description:
            'CIDRs and inclusive ranges; they must not overlap each other or another pool (AP-2), nor 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, 224.0.0.0/4, 240.0.0.0/4 or 255.255.255.255 (ADDR-1). A CIDR shorter than /31 never hands out its network and broadcast addresses; a range is taken as written (ADDR-2).',
        },
      ),
      avoidBuggyIPs: s.boolean({
        description:
          'Never hand out an address ending in .0 or .255 (some clients and routers drop traffic to them, as with MetalLB avoidBuggyIPs) (ADDR-2). Default false.',
      }),
    },
    { required: ['advertiseMode', 'addresses'] },
  ),
  status: s.object({
    size: s.integer({ minimum: 0, description: 'How many addresses the pool can hand out (AP-3, ADDR-2).' }),
    used: s.integer({ minimum: 0, description: 'How many addresses are allocated now (AP-3).' }),
    externalNetwork: nameOrEmpty('The ExternalNetwork that lists this pool.'),
    conditions,
  }),
  printerColumns: [
    { name: 'Mode', type: 'string', jsonPath: '.spec.advertiseMode' },
    { name: 'Size', type: 'integer', jsonPath: '.status.size' },
    { name: 'Used', type: 'integer', jsonPath: '.status.used' },
    { name: 'ExternalNetwork', type: 'string', jsonPath: '.status.externalNetwork' },
    AGE_COLUMN,
  ],
});
export type AddressPool = KindObject<typeof addressPoolKind>;
