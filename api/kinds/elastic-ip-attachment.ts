import { conditions, immutable, objectName } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';

export const elasticIPAttachmentPhases = ['Pending', 'Attached'] as const;

/** ElasticIPAttachment (EIPA): binds an ElasticIP to a NetworkInterface by 1:1 NAT. */
export const elasticIPAttachmentKind = defineKind({
  kind: 'ElasticIPAttachment',
  plural: 'elasticipattachments',
  singular: 'elasticipattachment',
  shortNames: ['eipa'],
  scope: 'Namespaced',
  description: 'Binds an ElasticIP to a NetworkInterface in the same namespace through 1:1 NAT (EIPA-1, EIPA-2).',
  spec: s.object(
    {
      elasticIP: objectName('The ElasticIP in this namespace.'),
      networkInterface: objectName('The NetworkInterface in this namespace, e.g. nginx.eth0.'),
    },
    { required: ['elasticIP', 'networkInterface'] },
  ),
  specValidations: [
    { ...immutable('spec.elasticIP', 'EIPA-1'), rule: 'self.elasticIP == oldSelf.elasticIP' },
    { ...immutable('spec.networkInterface', 'EIPA-1'), rule: 'self.networkInterface == oldSelf.networkInterface' },
  ],
  status: s.object({
    phase: s.enum(elasticIPAttachmentPhases, { description: 'Pending (with a reason) or Attached (EIPA-1).' }),
    reason: s.string({ maxLength: LIMITS.reasonLength, description: 'Why it is Pending, in CamelCase.' }),
    message: s.string({ maxLength: LIMITS.messageLength }),
    nodeName: s.string({ maxLength: LIMITS.nameLength, description: 'The node of the NetworkInterface (EIPA-1).' }),
    observedGeneration: s.integer({ minimum: 0 }),
    conditions,
  }),
  printerColumns: [
    { name: 'ElasticIP', type: 'string', jsonPath: '.spec.elasticIP' },
    { name: 'NetworkInterface', type: 'string', jsonPath: '.spec.networkInterface' },
    { name: 'Node', type: 'string', jsonPath: '.status.nodeName' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Reason', type: 'string', jsonPath: '.status.reason', priority: 1 },
    AGE_COLUMN,
  ],
});
export type ElasticIPAttachment = KindObject<typeof elasticIPAttachmentKind>;
