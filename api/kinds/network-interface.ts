import { ipv4, nameOrEmpty, objectName, pendingPhase, reconciledStatus } from '../common';
import { AGE_COLUMN, defineKind, KindObject, PHASE_COLUMN, REASON_COLUMN } from '../kind';
import { s } from '../schema';

export const networkInterfacePhases = ['Pending', 'Ready'] as const;

/** NetworkInterface (NIC): one Juneau NIC of a Pod, created and owned by the pod controller (NIC-1). */
export const networkInterfaceKind = defineKind({
  kind: 'NetworkInterface',
  shortNames: ['nic'],
  scope: 'Namespaced',
  description:
    'A Juneau NIC of a Pod, named <pod>.<interface>; created by the pod controller and owned by the Pod (NIC-1).',
  spec: s.object(
    {
      podName: objectName('The Pod this interface belongs to.'),
      interface: s.string({ minLength: 1, maxLength: 15, description: 'Interface name inside the pod, e.g. eth0.' }),
      nodeName: nameOrEmpty('The node the pod runs on, once scheduled.'),
      address: ipv4("The pod's own address on this interface: what a NAT attachment translates to."),
      elasticIP: objectName('The ElasticIP this interface holds directly (EIP-4); absent for NAT use.'),
    },
    { required: ['podName', 'interface'] },
  ),
  specValidations: [
    {
      rule: 'self.podName == oldSelf.podName && self.interface == oldSelf.interface',
      message: 'spec.podName and spec.interface are immutable (NIC-1)',
    },
    {
      rule: 'has(self.elasticIP) == has(oldSelf.elasticIP) && (!has(self.elasticIP) || self.elasticIP == oldSelf.elasticIP)',
      message: 'spec.elasticIP is immutable: it comes from the Pod annotation at creation (NIC-1)',
    },
  ],
  status: s.object({
    ...pendingPhase(networkInterfacePhases, {
      phase: 'Pending (with a reason) or Ready (NIC-1, EIP-13).',
      reason: 'Why it is Pending, e.g. WaitingForElasticIP.',
    }),
    ...reconciledStatus,
  }),
  printerColumns: [
    { name: 'Node', type: 'string', jsonPath: '.spec.nodeName' },
    { name: 'Address', type: 'string', jsonPath: '.spec.address' },
    { name: 'ElasticIP', type: 'string', jsonPath: '.spec.elasticIP' },
    PHASE_COLUMN,
    REASON_COLUMN,
    AGE_COLUMN,
  ],
  // H4: each agent lists its node's NICs and the direct ones (EN-9), not every NIC of the cluster.
  selectableFields: ['.spec.nodeName', '.spec.elasticIP'],
});
export type NetworkInterface = KindObject<typeof networkInterfaceKind>;
