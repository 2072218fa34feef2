import { objectName } from '../common';
import { LIMITS } from '../constants';
import { AGE_COLUMN, defineKind, KindObject } from '../kind';
import { s } from '../schema';
import { BGP_SESSION_STATES } from './bgp-peer';

/** At most this many BGPPeers a node reports on (and a node peers with). */
export const MAX_PEERS_PER_NODE = 64;
/**
 * BGP-7: at most this many items in `status.announced.addresses`. The agent writes the announced
 * addresses as ranges (`198.18.0.1-198.18.0.200`), so addresses allocated next to each other cost
 * one item; docs/bgp-peer.md works out the sizes at 1,000 nodes.
 */
export const MAX_ANNOUNCED_ITEMS = 4096;

/**
 * BGPNodeState (BGP-7): what one node's agent reports of its BGP sessions and of what it announces.
 * Named after the node; written by that node's agent only, read by the controller (BGPPeer status,
 * SLB phase Ready, BGP-5) and by `kubectl get`.
 */
export const bgpNodeStateKind = defineKind({
  kind: 'BGPNodeState',
  shortNames: ['bgpns'],
  scope: 'Cluster',
  description:
    "One node's BGP sessions (state, since when, prefixes sent, last error, per BGPPeer) and the addresses it announces; named after the node and written by its agent (BGP-7).",
  spec: s.object(
    { nodeName: objectName('The node this state is about; the object has its name.') },
    {
      required: ['nodeName'],
      validations: [{ rule: 'self == oldSelf', message: 'spec is immutable: spec.nodeName names the node (BGP-7)' }],
    },
  ),
  status: s.object({
    peers: s.array(
      s.object(
        {
          peer: objectName('The BGPPeer.'),
          state: s.enum(BGP_SESSION_STATES, {
            description:
              'The BGP session state (RFC 4271): Idle, Connect, Active, OpenSent, OpenConfirm or Established.',
          }),
          establishedSince: s.dateTime({
            description: 'When the session last became Established; absent while it is not.',
          }),
          prefixesSent: s.integer({ minimum: 0, description: 'Routes announced to the peer now.' }),
          lastError: s.string({
            maxLength: LIMITS.reasonLength,
            description: "Why the session last went down or failed to come up (the daemon's words), if it did.",
          }),
          lastTransitionTime: s.dateTime({ description: 'When state last changed.' }),
        },
        { required: ['peer', 'state'] },
      ),
      {
        maxItems: MAX_PEERS_PER_NODE,
        listType: 'map',
        listMapKeys: ['peer'],
        description: 'One entry per BGPPeer this node peers with (BGP-7).',
      },
    ),
    announced: s.object(
      {
        count: s.integer({ minimum: 0, description: 'How many addresses the node announces now.' }),
        addresses: s.array(
          s.string({
            maxLength: LIMITS.addressItemLength,
            description: 'An address (198.18.0.1) or an inclusive range of them (198.18.0.1-198.18.0.200).',
          }),
          {
            maxItems: MAX_ANNOUNCED_ITEMS,
            listType: 'atomic',
            description: 'The addresses announced to at least one Established peer, as sorted ranges.',
          },
        ),
      },
      { description: 'What the node announces now (BGP-5: the controller reads it for phase Ready).' },
    ),
    updatedAt: s.dateTime({ description: 'When the agent last wrote this status.' }),
  }),
  printerColumns: [
    { name: 'Peers', type: 'string', jsonPath: '.status.peers[*].peer' },
    { name: 'States', type: 'string', jsonPath: '.status.peers[*].state' },
    { name: 'Announced', type: 'integer', jsonPath: '.status.announced.count' },
    { name: 'Updated', type: 'date', jsonPath: '.status.updatedAt' },
    AGE_COLUMN,
  ],
  selectableFields: ['.spec.nodeName'],
});
export type BGPNodeState = KindObject<typeof bgpNodeStateKind>;
