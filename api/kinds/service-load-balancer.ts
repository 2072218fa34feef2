import { ipv4, nameOrEmpty, reconciledStatus } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject, PHASE_COLUMN } from '../kind';
import { s } from '../schema';

export const serviceLoadBalancerPhases = ['Pending', 'Allocated', 'Ready', 'Degraded', 'Error'] as const;
export type ServiceLoadBalancerPhase = (typeof serviceLoadBalancerPhases)[number];

/** ServiceLoadBalancer (SLB): derived by the controller from a Juneau LoadBalancer Service. */
export const serviceLoadBalancerKind = defineKind({
  kind: 'ServiceLoadBalancer',
  shortNames: ['slb'],
  scope: 'Namespaced',
  description:
    'The VIP of a Service of type LoadBalancer with loadBalancerClass juneau.loutres.me/load-balancer; created and kept by the controller, not by users (SLB-1..10).',
  spec: s.object(
    {
      externalNetwork: nameOrEmpty(
        'From the Service annotation juneau.loutres.me/load-balancer-external-network (SLB-2).',
      ),
      requestedIP: s.string({
        maxLength: 64,
        description: 'From the Service annotation juneau.loutres.me/load-balancer-requested-ip (SLB-2).',
      }),
    },
    {},
  ),
  status: s.object({
    phase: s.enum(serviceLoadBalancerPhases, { description: 'Pending, Allocated, Ready, Degraded or Error (SLB-3).' }),
    vip: ipv4('The allocated external address (SLB-4).'),
    addressPool: nameOrEmpty('The AddressPool the VIP came from (SLB-4).'),
    ports: s.array(
      s.object(
        {
          name: s.string({ maxLength: 63 }),
          protocol: s.enum(['TCP', 'UDP'] as const),
          port: s.integer({ minimum: 1, maximum: 65535, format: 'int32' }),
          targetPort: s.integer({
            minimum: 1,
            maximum: 65535,
            format: 'int32',
            description: 'Named targetPorts resolved to numbers.',
          }),
        },
        { required: ['protocol', 'port', 'targetPort'] },
      ),
      {
        maxItems: LIMITS.ports,
        listType: 'atomic',
        description: 'The Service ports normalized for the data plane (SLB-4).',
      },
    ),
    // Atomic, not a set: the controller alone writes it, and server-side apply (SMD before
    // Kubernetes 1.36) drops a set emptied by an apply instead of storing [] (kubernetes#117447).
    advertisingNodes: s.array(s.string({ maxLength: LIMITS.nameLength }), {
      maxItems: LIMITS.nodes,
      listType: 'atomic',
      description:
        'Nodes with at least one Ready, Serving, non-terminating Local endpoint (SLB-4); on a bgp network, those (or with externalTrafficPolicy Cluster every node with a live agent) that a BGPAdvertisement lets announce the VIP (BGP-3).',
    }),
    arpAnnouncingNode: nameOrEmpty('type arp: the node answering ARP for the VIP; empty otherwise (SLB-4, SLB-6).'),
    backendSummary: s.object({
      totalReady: s.integer({ minimum: 0, description: 'Ready endpoints of the whole Service.' }),
      localReadyNodes: s.integer({ minimum: 0, description: 'The number of advertisingNodes.' }),
    }),
    ...reconciledStatus,
  }),
  printerColumns: [
    { name: 'VIP', type: 'string', jsonPath: '.status.vip' },
    PHASE_COLUMN,
    { name: 'Node', type: 'string', jsonPath: '.status.arpAnnouncingNode' },
    { name: 'ExternalNetwork', type: 'string', jsonPath: '.spec.externalNetwork', priority: 1 },
    { name: 'Ready', type: 'integer', jsonPath: '.status.backendSummary.totalReady', priority: 1 },
    AGE_COLUMN,
  ],
});
export type ServiceLoadBalancer = KindObject<typeof serviceLoadBalancerKind>;
