import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';

/**
 * AllocationClaim (ALLOC-1): one value taken from an AllocationPool or one address taken from an
 * AddressPool. Creating it is the reservation: its name is derived from the value, and the API
 * server refuses a second object of the same name, so two holders are impossible.
 */
export const allocationClaimKind = defineKind({
  kind: 'AllocationClaim',
  scope: 'Cluster',
  description:
    'One value or address reserved for one holder; the name is derived from the value, so creating it is the reservation (ALLOC-1, ALLOC-2, EIP-3).',
  spec: s.object(
    {
      pool: s.object(
        {
          kind: s.enum(['AddressPool', 'AllocationPool'] as const),
          name: s.string({ minLength: 1, maxLength: LIMITS.nameLength }),
        },
        { required: ['kind', 'name'] },
      ),
      value: s.string({ minLength: 1, maxLength: 32, description: 'The IPv4 address or the integer taken.' }),
      holder: s.object(
        {
          apiVersion: s.string({ maxLength: 128 }),
          kind: s.string({ minLength: 1, maxLength: 63 }),
          namespace: s.string({ maxLength: 63 }),
          name: s.string({ minLength: 1, maxLength: LIMITS.nameLength }),
          uid: s.string({ maxLength: 64 }),
        },
        { required: ['kind', 'name'], description: 'Who holds the value.' },
      ),
    },
    { required: ['pool', 'value', 'holder'] },
  ),
  specValidations: [
    { rule: 'self == oldSelf', message: 'spec is immutable: release the claim by deleting it (ALLOC-1)' },
  ],
  status: s.object({}),
  printerColumns: [
    { name: 'Pool', type: 'string', jsonPath: '.spec.pool.name' },
    { name: 'Value', type: 'string', jsonPath: '.spec.value' },
    { name: 'HolderKind', type: 'string', jsonPath: '.spec.holder.kind' },
    { name: 'HolderNamespace', type: 'string', jsonPath: '.spec.holder.namespace' },
    { name: 'Holder', type: 'string', jsonPath: '.spec.holder.name' },
    AGE_COLUMN,
  ],
});
export type AllocationClaim = KindObject<typeof allocationClaimKind>;

/** The claim name of an address: addresses of different pools never overlap (AP-2), so the address alone is unique. */
export const addressClaimName = (address: string): string => `ipv4.${address}`;
/** The claim name of an integer from an AllocationPool, e.g. `subnet-vni.4097`. */
export const valueClaimName = (pool: string, value: number): string => `${pool}.${value}`;
