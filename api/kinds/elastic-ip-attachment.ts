import { immutable, nameOrEmpty, objectName, pendingPhase, reconciledStatus } from '../common';
import { AGE_COLUMN, defineKind, KindObject, PHASE_COLUMN, REASON_COLUMN } from '../kind';
import { s } from '../schema';

export const elasticIPAttachmentPhases = ['Pending', 'Attached'] as const;

/** ElasticIPAttachment (EIPA): binds an ElasticIP to a NetworkInterface by 1:1 NAT. */
export const elasticIPAttachmentKind = defineKind({
  kind: 'ElasticIPAttachment',
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
    ...pendingPhase(elasticIPAttachmentPhases, {
      phase: 'Pending (with a reason) or Attached (EIPA-1).',
      reason: 'Why it is Pending, in CamelCase.',
    }),
    nodeName: nameOrEmpty('The node of the NetworkInterface (EIPA-1).'),
    ...reconciledStatus,
  }),
  printerColumns: [
    { name: 'ElasticIP', type: 'string', jsonPath: '.spec.elasticIP' },
    { name: 'NetworkInterface', type: 'string', jsonPath: '.spec.networkInterface' },
    { name: 'Node', type: 'string', jsonPath: '.status.nodeName' },
    PHASE_COLUMN,
    REASON_COLUMN,
    AGE_COLUMN,
  ],
  // H4: each agent lists only the attachments the controller placed on its node.
  selectableFields: ['.status.nodeName'],
});
export type ElasticIPAttachment = KindObject<typeof elasticIPAttachmentKind>;
