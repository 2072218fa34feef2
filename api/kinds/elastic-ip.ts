import { immutable, ipv4, nameOrEmpty, objectName, reconciledStatus } from '../common';
import { defineKind, KindObject, PHASE_COLUMN } from '../kind';
import { s } from '../schema';

export const elasticIPPhases = ['Pending', 'Available', 'Attached', 'Error'] as const;
export type ElasticIPPhase = (typeof elasticIPPhases)[number];
export const attachmentKinds = ['ElasticIPAttachment', 'NetworkInterface'] as const;

/** ElasticIP (EIP): one reserved external IPv4 address, used by NAT or directly on a Pod NIC. */
export const elasticIPKind = defineKind({
  kind: 'ElasticIP',
  shortNames: ['eip'],
  scope: 'Namespaced',
  description:
    'One externally reachable IPv4 address from an ExternalNetwork, used by 1:1 NAT or directly on a Pod NIC (EIP-1..19).',
  spec: s.object(
    {
      externalNetwork: objectName('The ExternalNetwork the address comes from (EIP-1); immutable.'),
      requestedIP: ipv4(
        "The address to reserve; must lie in one of the network's pools (EIP-3). Omitted: any free address. Immutable.",
      ),
    },
    { required: ['externalNetwork'] },
  ),
  specValidations: [
    { ...immutable('spec.externalNetwork', 'EIP-1'), rule: 'self.externalNetwork == oldSelf.externalNetwork' },
    {
      rule: 'has(self.requestedIP) == has(oldSelf.requestedIP) && (!has(self.requestedIP) || self.requestedIP == oldSelf.requestedIP)',
      message: 'spec.requestedIP is immutable: recreate the ElasticIP to reserve another address (EIP-3)',
    },
  ],
  status: s.object({
    phase: s.enum(elasticIPPhases, { description: 'Pending, Available, Attached or Error (EIP-9).' }),
    address: ipv4('The reserved address.'),
    addressPool: nameOrEmpty('The AddressPool the address came from.'),
    attachment: s.object(
      { kind: s.enum(attachmentKinds), name: objectName('Name of the user in this namespace.') },
      { required: ['kind', 'name'], description: 'What uses the address now; empty while unused (EIP-7).' },
    ),
    ...reconciledStatus,
  }),
  printerColumns: [
    { name: 'ExternalNetwork', type: 'string', jsonPath: '.spec.externalNetwork' },
    { name: 'Address', type: 'string', jsonPath: '.status.address' },
    { name: 'AttachmentKind', type: 'string', jsonPath: '.status.attachment.kind' },
    { name: 'Attachment', type: 'string', jsonPath: '.status.attachment.name' },
    PHASE_COLUMN,
    { name: 'Allocated', type: 'string', jsonPath: '.status.conditions[?(@.type=="Allocated")].status' },
    { name: 'Attached', type: 'string', jsonPath: '.status.conditions[?(@.type=="Attached")].status' },
  ],
});
export type ElasticIP = KindObject<typeof elasticIPKind>;
