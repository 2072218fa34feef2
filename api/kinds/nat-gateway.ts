import { immutable, ipv4, labelSelector, nameOrEmpty, objectName, reconciledStatus } from '../common';
import { defineKind, KindObject, PHASE_COLUMN } from '../kind';
import { s } from '../schema';

export const natGatewayPhases = ['Pending', 'Ready', 'Degraded', 'Error'] as const;
export type NATGatewayPhase = (typeof natGatewayPhases)[number];

/**
 * NGW-4: how many pods a status names as selected here but served by an older NATGateway. The
 * count beside it is exact; the list is for people (`kubectl describe`), bounded so a selector
 * that overlaps a whole namespace does not grow the object towards etcd's size limit.
 */
export const MAX_CONTESTED_PODS = 50;

/** NATGateway (NGW): one external address shared by the pods it selects, leaving through one gateway node. */
export const natGatewayKind = defineKind({
  kind: 'NATGateway',
  shortNames: ['ngw'],
  scope: 'Namespaced',
  description:
    'One external IPv4 address from an ExternalNetwork, shared by the pods of its namespace that podSelector selects for the connections they open to the outside (many-to-one source NAT on one gateway node, NGW-1..8).',
  spec: s.object(
    {
      externalNetwork: objectName('The ExternalNetwork the address comes from (NGW-1, NGW-2); immutable.'),
      requestedIP: ipv4(
        "The address to reserve; must lie in one of the network's pools (NGW-2, EIP-3). Omitted: any free address. Immutable.",
      ),
      podSelector: labelSelector(
        'pod',
        'spec.podSelector',
        'NGW-1',
        'NGW-1: the pods of this namespace whose outgoing connections leave from the address; required, {} selects every pod of the namespace.',
      ),
      nodeSelector: labelSelector(
        'node',
        'spec.nodeSelector',
        'NGW-3',
        'NGW-3: the nodes that may act as the gateway. Absent: every node.',
      ),
    },
    { required: ['externalNetwork', 'podSelector'] },
  ),
  specValidations: [
    { ...immutable('spec.externalNetwork', 'NGW-2'), rule: 'self.externalNetwork == oldSelf.externalNetwork' },
    {
      rule: 'has(self.requestedIP) == has(oldSelf.requestedIP) && (!has(self.requestedIP) || self.requestedIP == oldSelf.requestedIP)',
      message: 'spec.requestedIP is immutable: recreate the NATGateway to reserve another address (NGW-2)',
    },
  ],
  status: s.object({
    phase: s.enum(natGatewayPhases, {
      description: 'Pending, Ready, Degraded (no node can serve) or Error (NGW-3).',
    }),
    address: ipv4('The reserved address (NGW-2).'),
    addressPool: nameOrEmpty('The AddressPool the address came from.'),
    nodeName: nameOrEmpty('The gateway node: the one node that answers for the address and translates (NGW-3).'),
    selectedPods: s.integer({
      minimum: 0,
      description:
        'Pods of the namespace that podSelector selects and that use this NATGateway (not the ones an older NATGateway also selects, NGW-4).',
    }),
    contestedPods: s.array(
      s.object(
        {
          pod: objectName('A pod podSelector selects.'),
          natGateway: objectName('The older NATGateway of the namespace the pod uses instead (NGW-4).'),
        },
        { required: ['pod', 'natGateway'] },
      ),
      {
        maxItems: MAX_CONTESTED_PODS,
        listType: 'atomic',
        description: `NGW-4: selected pods that use an older NATGateway (the oldest wins, ties by name); the first ${MAX_CONTESTED_PODS} by name.`,
      },
    ),
    contestedPodCount: s.integer({
      minimum: 0,
      description: 'How many selected pods use an older NATGateway (NGW-4).',
    }),
    ...reconciledStatus,
  }),
  printerColumns: [
    { name: 'ExternalNetwork', type: 'string', jsonPath: '.spec.externalNetwork' },
    { name: 'Address', type: 'string', jsonPath: '.status.address' },
    { name: 'Node', type: 'string', jsonPath: '.status.nodeName' },
    { name: 'Pods', type: 'integer', jsonPath: '.status.selectedPods' },
    PHASE_COLUMN,
  ],
});
export type NATGateway = KindObject<typeof natGatewayKind>;
