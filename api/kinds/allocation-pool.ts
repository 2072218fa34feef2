import { conditions } from '../common';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';

/** AllocationPool (ALLOC-1): a named integer range, e.g. `subnet-vni` for VXLAN VNIs. */
export const allocationPoolKind = defineKind({
  kind: 'AllocationPool',
  scope: 'Cluster',
  description:
    'A named range of integers handed out by AllocationClaims; subnet-vni holds the VNIs of Subnets, L2Networks and ExternalNetworks (ALLOC-1, EN-7).',
  spec: s.object(
    {
      start: s.integer({ minimum: 0, maximum: 4294967295, description: 'First value, inclusive.' }),
      end: s.integer({ minimum: 0, maximum: 4294967295, description: 'Last value, inclusive.' }),
    },
    { required: ['start', 'end'] },
  ),
  specValidations: [
    { rule: 'self.start <= self.end', message: 'spec.start must not be greater than spec.end (ALLOC-1)' },
    {
      rule: 'self.start == oldSelf.start && self.end == oldSelf.end',
      message: 'spec.start and spec.end are immutable: values already handed out would fall outside (ALLOC-1)',
    },
  ],
  status: s.object({
    size: s.integer({ minimum: 0 }),
    used: s.integer({ minimum: 0 }),
    conditions,
  }),
  printerColumns: [
    { name: 'Start', type: 'integer', jsonPath: '.spec.start' },
    { name: 'End', type: 'integer', jsonPath: '.spec.end' },
    { name: 'Used', type: 'integer', jsonPath: '.status.used' },
    AGE_COLUMN,
  ],
});
export type AllocationPool = KindObject<typeof allocationPoolKind>;
