import { conditions, ipv4, objectName } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';

export const networkInterfacePhases = ['Pending', 'Ready'] as const;

/** NetworkInterface (NIC): one Juneau NIC of a Pod, created and owned by the pod controller (NIC-1). */
export const networkInterfaceKind = defineKind({
  kind: 'NetworkInterface',
  plural: 'networkinterfaces',
  singular: 'networkinterface',
  shortNames: ['nic'],
  scope: 'Namespaced',
  description:
    'A Juneau NIC of a Pod, named <pod>.<interface>; created by the pod controller and owned by the Pod (NIC-1).',
  spec: s.object(
    {
      podName: objectName('The Pod this interface belongs to.'),
      interface: s.string({ minLength: 1, maxLength: 15, description: 'Interface name inside the pod, e.g. eth0.' }),
      nodeName: s.string({ maxLength: LIMITS.nameLength, description: 'The node the pod runs on, once scheduled.' }),
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
    phase: s.enum(networkInterfacePhases, { description: 'Pending (with a reason) or Ready (NIC-1, EIP-13).' }),
    reason: s.string({ maxLength: LIMITS.reasonLength, description: 'Why it is Pending, e.g. WaitingForElasticIP.' }),
    message: s.string({ maxLength: LIMITS.messageLength }),
    observedGeneration: s.integer({ minimum: 0 }),
    conditions,
  }),
  printerColumns: [
    { name: 'Node', type: 'string', jsonPath: '.spec.nodeName' },
    { name: 'Address', type: 'string', jsonPath: '.spec.address' },
    { name: 'ElasticIP', type: 'string', jsonPath: '.spec.elasticIP' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Reason', type: 'string', jsonPath: '.status.reason', priority: 1 },
    AGE_COLUMN,
  ],
});
export type NetworkInterface = KindObject<typeof networkInterfaceKind>;
